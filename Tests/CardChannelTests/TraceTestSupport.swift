import FoundationEssentials
import ISO7816
import Synchronization
@testable import CardChannel
@testable import APDUTrace

/// Shared material for the trace tests.
enum TraceSamples {
    /// The repository's `apdu-traces/` folder, found from this file.
    static let corpus: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)   // Tests/CardChannelTests/<file>
        return parts.joined(separator: "/") + "/apdu-traces"
    }()

    static func capture(_ name: String) -> String { corpus + "/captures/" + name }

    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func text(_ path: String) throws -> String {
        String(decoding: try bytes(path), as: UTF8.self)
    }

    /// The PAN of the sample card (a Visa test PAN).
    static let pan = "4761739001010119"

    /// A Visa session: PPSE, SELECT AID (PDOL 9F66 9F02 9F37 5F2A 9A), GPO with track 2 and the
    /// cardholder name, a record with PAN and track 1, a record with CDOL1, GENERATE AC.
    static let visaText = """
    # A hand-made Visa session for the trace tests.
    @format tapemu-apdu-trace/1
    @title Visa sample
    @reader Virtual PCD 00 00
    @atr 3B8F8001804F0CA0000003060300030000000068
    @x-custom kept as is
    0.000000 > 00A404000E325041592E5359532E444446303100
    0.004100 < 6F23840E325041592E5359532E4444463031A511BF0C0E610C4F07A00000000310108701019000
    0.010000 > 00A4040007A000000003101000
    0.014200 < 6F298407A0000000031010A51E500B56495341204352454449549F380E9F66049F02069F37045F2A029A039000
    0.020000 > 80A800001583133600000000000000010012345678097826113000
    0.051000 < 774A8202200094040801020057134761739001010119D25122010000000000000F5F200A534D4954482F4A4F484E9F100706010A03A000009F260811223344556677889F2701809F360200179000
    0.060000 > 00B2010C00
    0.066000 < 703A5A0847617390010101195F24032512315F340101562442343736313733393030313031303131395E534D4954482F4A4F484E5E323531323230319000
    0.070000 > 00B2020C00
    0.075000 < 700D8C0B9F02069F37049A039F21039000
    0.080000 > 80AE800010000000000100CAFEBABE26113010150000
    0.120000 < 77149F2701809F360200179F260801020304050607089000
    0.130000 ! card-removed
    """

    static var visa: APDUTrace { try! APDUTrace(parsing: visaText, path: "visa.apdu") }

    /// The commands of the sample, as a kernel would send them.
    static let selectPPSE = CommandAPDU.selectPPSE
    static let selectVisa = CommandAPDU.select(name: try! Hex.decode("A0000000031010"))
    static func gpo(ttq: String = "36000000", amount: String = "000000000100", un: String = "12345678",
                    currency: String = "0978", date: String = "261130") -> CommandAPDU {
        CommandAPDU.getProcessingOptions(pdolData: try! Hex.decode(ttq + amount + un + currency + date))
    }
    static let readRecord1 = CommandAPDU.readRecord(1, sfi: 1)
    static let readRecord2 = CommandAPDU.readRecord(2, sfi: 1)
    static func generateAC(amount: String = "000000000100", un: String = "CAFEBABE", date: String = "261130",
                           time: String = "101500") -> CommandAPDU {
        CommandAPDU.generateAC(.arqc, cdolData: try! Hex.decode(amount + un + date + time))
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes.
    func contains(subsequence needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        for i in 0...(count - needle.count) where self[i..<(i + needle.count)].elementsEqual(needle) { return true }
        return false
    }
}
