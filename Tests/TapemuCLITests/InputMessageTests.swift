import Foundation
import Testing
@testable import tapemu
import TestSupport

/// Issue 12: inputs from other tools and editors, and messages that say what is wrong in the
/// user's terms.
@Suite("Inputs and messages", .temporaryDirectories)
struct InputMessageTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test func aTraceWithAByteOrderMarkReplays() async throws {
        let dir = try temporaryDirectory()
        let text = try Data(contentsOf: URL(fileURLWithPath: Self.repo + "/apdu-traces/visa-qvsdc.apdu"))
        try (Data([0xEF, 0xBB, 0xBF]) + text).write(to: URL(fileURLWithPath: dir + "/bom.apdu"))
        let r = await runCLI(["replay", dir + "/bom.apdu"])
        #expect(r.status == 0, "\(r.out) \(r.err)")
    }

    @Test func aTruncatedPCSCSpyOutputSaysSo() async throws {
        let dir = try temporaryDirectory()
        let full = try Data(contentsOf: URL(fileURLWithPath: Self.repo + "/apdu-traces/captures/scriptor-visa.spyout"))
        try full.prefix(3000).write(to: URL(fileURLWithPath: dir + "/cut.spyout"))
        let r = await runCLI(["trace", "import", dir + "/cut.spyout", "-o", dir + "/cut.apdu"])
        #expect(r.status == 0)
        #expect(r.err.contains("the log ends inside the SCardTransmit"), "\(r.err)")
        let trace = try String(contentsOfFile: dir + "/cut.apdu", encoding: .utf8)
        #expect(trace.contains("truncated log?"))
    }

    @Test func aRecordingOfARedactedTraceStaysRedacted() async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["read", "--trace", Self.repo + "/apdu-traces/visa-qvsdc.apdu", "--record", dir + "/again.apdu"])
        #expect(r.status == 0, "\(r.err)")
        #expect(try String(contentsOfFile: dir + "/again.apdu", encoding: .utf8).contains("@redacted yes"))
    }

    @Test(arguments: [
        ("[1]", "top level: expected a JSON object"),
        (#"{"name": 5}"#, "name: expected a string"),
        (String(repeating: "[", count: 2000) + String(repeating: "]", count: 2000), "nested 2000 deep"),
        (#"{"name":"x","summary":"y","issuerMasterKey":"00","atc":1,"applications":[{"aid":"A0000000031010","label":"V","aip":"0000","cryptogram":"nope","pan":"4111111111111111"}]}"#,
         "applications[0].cryptogram: 'nope' is not one of the values this field takes (gpo, generateAC)"),
    ])
    func profileErrorsSpeakJSON(_ json: String, _ message: String) async throws {
        let dir = try temporaryDirectory()
        try json.write(toFile: dir + "/p.json", atomically: true, encoding: .utf8)
        let r = await runCLI(["read", "--card", dir + "/p.json"])
        #expect(r.status == 65)
        #expect(r.err.contains(message), "\(r.err)")
        #expect(!r.err.contains("Dictionary<") && !r.err.contains("Cannot initialize"))
    }

    @Test func anExtendedCase2StaysExtended() async {
        let r = await runCLI(["apdu", "decode", "00A40400000001"])
        #expect(r.out.contains("case 2 (extended length)"), "\(r.out)")
        let short = await runCLI(["apdu", "decode", "00A4040001"])
        #expect(short.out.contains("case 2 (short length)"))
    }

    @Test func anInvalidPaymentArgumentIsNamed() async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["pay", "--amount", "1000", "--order-id", "cb-1", "--callback-url", "not a url",
                              "--data-dir", dir, "--json"])
        #expect(r.status == 3)
        #expect(r.err.contains("callbackUrl 'not a url'"), "\(r.err)")
        #expect((try jsonObject(r.out)["reason"] as? String)?.contains("callbackUrl") == true)
        let rlo = await runCLI(["pay", "--amount", "1000", "--order-id", "order\u{202E}1", "--data-dir", dir])
        #expect(rlo.status == 3)
        #expect(rlo.err.contains("orderId"))
    }
}
