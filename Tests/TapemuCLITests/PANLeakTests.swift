import Foundation
import Testing
@testable import tapemu
import TestSupport

/// Issue 12: no PAN in any byte of any output. Test PANs planted in odd places — proprietary
/// tags, text tags, a DS ID, padding, templates, bytes that are not TLV — and every display that
/// shows card bytes is searched for them: in digits, and in the hex of their ASCII digits.
@Suite("No full PAN in any output", .temporaryDirectories)
struct PANLeakTests {
    static let visa = "4761739001010010"
    static let maestro19 = "6799990100000000019"
    static let amex = "374245455400126"

    static func ascii(_ digits: String) -> String { digits.utf8.map { String(format: "%02X", $0) }.joined() }
    static func tlv(_ tag: String, _ valueHex: String) -> String { tag + String(format: "%02X", valueHex.count / 2) + valueHex }

    /// Each a TLV blob (hex) with a PAN somewhere a tag rule alone would miss.
    static let planted: [(String, String)] = [
        ("BCD PAN under a proprietary tag", tlv("C1", visa)),
        ("ASCII PAN as the cardholder name", tlv("5F20", ascii(visa))),
        ("ASCII PAN as the extended cardholder name", tlv("9F0B", ascii(amex))),
        ("DS ID: PAN and sequence number", tlv("9F5E", visa + "01")),
        ("a 19-digit PAN with F padding under a 3-byte tag", tlv("DF8101", maestro19 + "F")),
        ("a PAN inside a proprietary template", tlv("E1", tlv("C2", visa) + tlv("9F02", "000000001250"))),
        ("a PAN in issuer discretionary data", tlv("BF0C", tlv("9F4D", "0B0A" + visa))),
        ("ASCII PAN in the application label", tlv("50", ascii(visa))),
        ("a PAN after a length byte in an unknown primitive", tlv("DF01", "08" + visa + "00")),
        ("an Amex PAN in BCD under a proprietary tag", tlv("C3", amex + "F")),
        ("track 1 in ASCII", tlv("56", ascii("B" + visa + "^TEST/CARD^2812201"))),
    ]

    static func leaks(_ text: String) -> [String] {
        [visa, maestro19, amex].flatMap { pan in [pan, ascii(pan)].filter { text.contains($0) } }
    }

    @Test(arguments: planted.map(\.0))
    func tlvAndAPDUDecodeNeverShowAPAN(_ name: String) async throws {
        let hex = try #require(Self.planted.first { $0.0 == name }).1
        for args in [["tlv", "decode", hex], ["tlv", "decode", "--json", hex],
                     ["apdu", "decode", "--response", hex + "9000"], ["apdu", "decode", "--response", "--json", hex + "9000"],
                     ["apdu", "decode", "80CA0000" + String(format: "%02X", hex.count / 2) + hex]] {
            let r = await runCLI(args)
            #expect(r.status == 0, "\(args): \(r.err)")
            #expect(Self.leaks(r.out + r.err).isEmpty, "\(name), \(args[0...1].joined(separator: " ")): \(r.out)")
        }
    }

    /// Bytes that are not TLV at all, with a PAN in them: found by content.
    @Test func bytesThatAreNotTLV() async {
        for hex in ["FFFF" + Self.visa + "00", "00" + Self.ascii(Self.visa) + "FF"] {
            let r = await runCLI(["apdu", "decode", "--response", hex + "9000"])
            #expect(Self.leaks(r.out + r.err).isEmpty, "\(r.out)")
        }
    }

    /// A trace whose card answers hold PANs in odd places: `trace show --hex` and
    /// `read --trace --json` show none of them.
    @Test func tracesNeverShowAPAN() async throws {
        let dir = try temporaryDirectory()
        let source = dir + "/visa.apdu"
        #expect(await runCLI(["read", "--card", "visa-qvsdc", "--record", source]).status == 0)
        // Plant PANs in a record answer: a proprietary tag, the name as digits, a DS ID.
        var text = try String(contentsOfFile: source, encoding: .utf8)
        let plant = Self.tlv("C1", Self.visa) + Self.tlv("9F0B", Self.ascii(Self.amex)) + Self.tlv("9F5E", Self.visa + "01")
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let lastResponse = try #require(lines.lastIndex { $0.contains(" < 70") })
        let parts = lines[lastResponse].split(separator: " ").map(String.init)
        let response = parts[2]
        let body = String(response.dropFirst(4).dropLast(4))   // 70 LL … 9000
        let newBody = body + plant
        let newResponse = "70" + String(format: "%02X", newBody.count / 2) + newBody + "9000"
        var edited = lines
        edited[lastResponse] = parts[0] + " < " + newResponse
        text = edited.joined(separator: "\n")
        let planted = dir + "/planted.apdu"
        try text.write(toFile: planted, atomically: true, encoding: .utf8)
        let show = await runCLI(["trace", "show", "--hex", planted])
        #expect(show.status == 0, "\(show.err)")
        #expect(Self.leaks(show.out + show.err).isEmpty, "\(show.out)")
        let read = await runCLI(["read", "--trace", planted, "--json"])
        #expect(Self.leaks(read.out + read.err).isEmpty, "\(read.out)")
    }
}
