import APDUTrace
import BERTLV
import Foundation
import ISO7816
import Testing
import TestSupport
@testable import tapemu

@Suite("tapemu read", .temporaryDirectories)
struct ReadCommandTests {
    /// `apdu-traces/` of this package.
    static let traces: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)   // Tests/TapemuCLITests/ReadCommandTests.swift
        return parts.joined(separator: "/") + "/apdu-traces"
    }()

    @Test("a trace recorded with another amount reads as recorded: the amount defaults to the trace's")
    func traceAmount() async throws {
        let r = await runCLI(["read", "--trace", Self.traces + "/visa-online-pin.apdu", "--json"])
        #expect(r.status == 0, "\(r.err)")
        let transaction = try #require(try jsonObject(r.out)["transaction"] as? [String: Any])
        #expect(transaction["amount"] as? Int == 6000)
    }

    @Test("--amount still wins over the trace's amount (and then the trace diverges)")
    func explicitAmount() async throws {
        let r = await runCLI(["read", "--trace", Self.traces + "/visa-online-pin.apdu", "--amount", "1000", "--json"])
        #expect(r.status == 65)
        let transaction = try #require(try jsonObject(r.out)["transaction"] as? [String: Any])
        #expect(transaction["amount"] as? Int == 1000)
    }

    /// A trace's card is read as the recorded reader read it: its unpredictable number, date and
    /// currency, so the online data the read reports (field 55) is the data the recorded
    /// cryptogram was computed over. Before, the kernel sent a fresh 9F37 and today's 9A (the
    /// replay ignores them when matching) and showed them beside the recorded cryptogram, an
    /// ARQC that could never check out; and the Amount line said EUR for a capture in GBP.
    @Test("read --trace: field 55 holds the recorded 9F37, 9A and 5F2A the cryptogram was made over",
          arguments: ["visa-qvsdc.apdu", "visa-online-pin.apdu", "mastercard-mchip.apdu", "amex.apdu", "girocard-no-cvm.apdu"])
    func traceOnlineData(_ name: String) async throws {
        let path = Self.traces + "/" + name
        let trace = try APDUTrace(contentsOfFile: path)
        let recorded = trace.terminalData
        let r = await runCLI(["read", "--trace", path, "--json"])
        #expect(r.status == 0, "\(r.err)")
        let cryptogram = try #require(try jsonObject(r.out)["cryptogram"] as? [String: Any])
        let objects = try #require(cryptogram["onlineDataObjects"] as? [[String: String]])
        func online(_ tag: String) -> String? { objects.first { $0["tag"] == tag }?["value"] }
        for (tag, hex) in [(Tag.unpredictableNumber, "9F37"), (.transactionDate, "9A"), (.transactionCurrencyCode, "5F2A")] {
            guard let value = recorded[tag] else { continue }
            #expect(online(hex) == Hex.encode(value), "\(name): \(hex)")
        }
        #expect(recorded[.unpredictableNumber] != nil, "\(name) records no 9F37: the test checks nothing there")
    }

    @Test("read --trace of the real Apple Pay capture: the amount in the capture's currency (GBP), not EUR")
    func traceCurrency() async throws {
        let r = await runCLI(["read", "--trace", Self.traces + "/apple-pay-visa-normal.apdu"])
        #expect(r.out.contains("Amount       1.00 GBP"), "\(r.out)")
    }

    @Test("a virtual card still sees 1000 by default")
    func virtualCardAmount() async throws {
        let r = await runCLI(["read", "--json"])
        #expect(r.status == 0)
        let transaction = try #require(try jsonObject(r.out)["transaction"] as? [String: Any])
        #expect(transaction["amount"] as? Int == 1000)
    }
}
