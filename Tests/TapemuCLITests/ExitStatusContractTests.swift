import Foundation
import Testing
@testable import tapemu
import TestSupport

/// Issue 12: the command line as a contract. One table of exit statuses; every command's help
/// draws from it; each failure mode of each command exits as the table says, documents it, and
/// with --json still prints one JSON document.
@Suite("The exit-status table", .temporaryDirectories)
struct ExitStatusContractTests {
    @Test func everyCommandDocumentsStatusesFromTheTable() {
        let table = Set(ExitCode.table.map(\.code))
        for command in CommandRegistry.commands {
            for (code, meaning) in command.configuration.exitCodes {
                #expect(table.contains(code), "\(command.configuration.commandName): \(code) \(meaning) is not in the table")
            }
        }
    }

    @Test func helpExitCodesPrintsTheTable() async {
        let r = await runCLI(["help", "exit-codes"])
        #expect(r.status == 0)
        for (code, meaning) in ExitCode.table {
            #expect(r.out.contains("\(code)"))
            #expect(r.out.contains(String(meaning.prefix(30))))
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var args: [String]
        var status: Int32
        var testDescription: String { args.joined(separator: " ") + " → \(status)" }
    }

    /// D: a fresh data directory; F: a file that is not a directory; X: a directory that does not
    /// exist; T: a malformed trace file; TMP: an existing directory.
    static let cases: [Case] = [
        Case(args: ["tlv", "decode", "ZZ"], status: 65),
        Case(args: ["tlv", "decode", "6F05"], status: 65),
        Case(args: ["tlv", "decode", "6F05", "--json"], status: 65),
        Case(args: ["apdu", "decode", "00A4"], status: 65),
        Case(args: ["apdu", "decode", "--bogus"], status: 64),
        Case(args: ["trace", "show", "X/none.apdu"], status: 66),
        Case(args: ["trace", "show", "TMP"], status: 74),
        Case(args: ["trace", "show", "T"], status: 65),
        Case(args: ["read", "--trace", "X/none.apdu", "--json"], status: 66),
        Case(args: ["read", "--trace", "T", "--json"], status: 65),
        Case(args: ["read", "--card", "torn", "--json"], status: 75),
        Case(args: ["read", "--card", "offline-decline", "--json"], status: 2),
        Case(args: ["read", "--amount", "-1", "--json"], status: 64),
        Case(args: ["read", "--reader", "", "--json"], status: 64),
        Case(args: ["read", "--record", "X/out.apdu"], status: 74),
        Case(args: ["read", "--card", "X/none.json"], status: 66),
        Case(args: ["pay", "--amount", "1000", "--order-id", "c-1", "--data-dir", "D", "--json"], status: 0),
        Case(args: ["pay", "--amount", "1251", "--order-id", "c-2", "--data-dir", "D", "--json"], status: 2),
        Case(args: ["pay", "--amount", "0", "--order-id", "c-3", "--data-dir", "D", "--json"], status: 3),
        Case(args: ["pay", "--amount", "1292", "--order-id", "c-4", "--data-dir", "D", "--json"], status: 4),
        Case(args: ["pay", "--order-id", "c-5", "--data-dir", "D", "--json"], status: 64),
        Case(args: ["pay", "--amount", "1000", "--order-id", "c-6", "--data-dir", "", "--json"], status: 64),
        Case(args: ["pay", "--amount", "1000", "--order-id", "c-7", "--data-dir", "F", "--json"], status: 74),
        Case(args: ["pay", "--amount", "1000", "--order-id", "c-8", "--trace", "X/none.apdu", "--data-dir", "D"], status: 66),
        Case(args: ["sale", "--amount", "1000", "--order-id", "s-1", "--data-dir", "D", "--json", "--bogus"], status: 64),
        Case(args: ["sale", "--amount", "1292", "--order-id", "s-2", "--data-dir", "D", "--json"], status: 4),
        Case(args: ["charges", "--order-id", "", "--data-dir", "D"], status: 64),
        Case(args: ["charges", "--order-id", "c-1", "--data-dir", "X", "--json"], status: 66),
        Case(args: ["charges", "--pending", "--data-dir", "F", "--json"], status: 74),
        Case(args: ["pending", "--data-dir", "X", "--json"], status: 66),
        Case(args: ["resolve", "--data-dir", "X", "--json"], status: 66),
        Case(args: ["gateway", "token", "--data-dir", "X"], status: 66),
        Case(args: ["gateway", "token", "--ttl", "soon", "--data-dir", "D"], status: 64),
        Case(args: ["gateway", "webhooks", "--data-dir", "X", "--json"], status: 66),
        Case(args: ["gateway", "secret", "--data-dir", "X", "--json"], status: 66),
        Case(args: ["gateway", "secret", "--data-dir", "F"], status: 74),
        Case(args: ["webhook", "verify", "--header", "t=1,v1=00", "--body-file", "F"], status: 64),
        Case(args: ["webhook", "verify", "--secret", "s", "--header", "t=1,v1=00", "--body-file", "X/none.json", "--json"], status: 66),
        Case(args: ["webhook", "verify", "--secret", "s", "--header", "t=1,v1=00", "--body-file", "TMP"], status: 74),
        Case(args: ["webhook", "verify", "--secret", "s", "--header", "t=1,v1=00", "--body-file", "F", "--json"], status: 1),
        Case(args: ["webhook", "verify", "--secret", "s", "--header", "t=1", "--body-file", "F", "--tolerance", "x"], status: 64),
        Case(args: ["pending", "close", "nope", "--reason", "x", "--data-dir", "D"], status: 66),
        Case(args: ["replay", "X/none.apdu", "--json"], status: 66),
        Case(args: ["replay", "T"], status: 1),
        Case(args: ["cards", "--bogus"], status: 64),
        Case(args: ["bench", "-n", "0"], status: 64),
        Case(args: ["emulate", "--card", "nope"], status: 64),
        // A --gateway nobody serves (port 1 on loopback): the token cannot be had, nothing is sent.
        Case(args: ["pay", "--amount", "1000", "--order-id", "g-1", "--gateway", "http://127.0.0.1:1", "--api-key", "tpk_test_0", "--data-dir", "D", "--json"], status: 69),
        Case(args: ["sale", "--amount", "1000", "--order-id", "g-2", "--gateway", "http://127.0.0.1:1", "--api-key", "tpk_test_0", "--data-dir", "D", "--json"], status: 69),
        Case(args: ["resolve", "--gateway", "http://127.0.0.1:1", "--api-key", "tpk_test_0", "--data-dir", "TMP", "--json"], status: 69),
        // A --gateway without the API key or a token: nothing to authenticate the terminal with.
        Case(args: ["pay", "--amount", "1000", "--order-id", "g-3", "--gateway", "http://127.0.0.1:1", "--data-dir", "D", "--json"], status: 64),
        Case(args: ["emulate", "--trace", "X/none.apdu", "--json"], status: 66),
        Case(args: ["emulate", "--trace", "TMP"], status: 74),
        Case(args: ["emulate", "--trace", "T"], status: 65),
        Case(args: ["emulate", "--card", "X/none.json"], status: 66),
        Case(args: ["emulate", "--card", "TMP"], status: 74),
        Case(args: ["cards", "show", "X/none.json", "--json"], status: 66),
        Case(args: ["cards", "show", "TMP"], status: 74),
        Case(args: ["cards", "show", "F"], status: 65),
    ]

    @Test(arguments: cases)
    func eachFailureModeExitsAsTheTableSays(_ c: Case) async throws {
        let tmp = try temporaryDirectory()
        let file = tmp + "/plain-file"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let trace = tmp + "/bad.apdu"
        try Data("not a trace\n".utf8).write(to: URL(fileURLWithPath: trace))
        let args = c.args.map { a -> String in
            switch a {
            case "D": tmp + "/data"
            case "F": file
            case "T": trace
            case "TMP": tmp
            default: a.replacingOccurrences(of: "X/", with: tmp + "/missing/").replacingOccurrences(of: "X", with: tmp + "/missing")
            }
        }
        let r = await runCLI(args)
        #expect(r.status == c.status, "\(args): \(r.err)")
        // Documented: by the command's help, or the table's usage status.
        if c.status != 0 && c.status != ExitCode.usage {
            let words = try #require(TapemuCLI.lookup(args, in: CommandRegistry.commands)).0.configuration
            #expect(words.exitCodes.contains { $0.code == c.status }
                    || (c.status == 2 || c.status == 3 || c.status == 4) && ["pay", "sale"].contains(words.commandName),
                    "tapemu help \(words.commandName) does not document \(c.status)")
        }
        if args.contains("--json") {
            let doc = try JSONSerialization.jsonObject(with: Data(r.out.utf8))
            // A failure's document says its status: `{error: {exitCode, …}}`, or (pay) a top-level
            // exitCode; a declined payment is a result, not a failure.
            if c.status != 0, let object = doc as? [String: Any], object["error"] != nil {
                let exitCode = (object["error"] as? [String: Any])?["exitCode"] as? Int ?? object["exitCode"] as? Int
                #expect(exitCode == Int(c.status), "\(r.out)")
            }
        }
    }
}

@Suite("Commands never overwrite their input", .temporaryDirectories)
struct NoOverwriteTests {
    @Test func recordingOverTheReplayedTraceIsRefused() async throws {
        let dir = try temporaryDirectory()
        let trace = dir + "/v.apdu"
        #expect(await runCLI(["read", "--card", "visa-qvsdc", "--record", trace]).status == 0)
        let before = try String(contentsOfFile: trace, encoding: .utf8)
        let r = await runCLI(["read", "--trace", trace, "--record", dir + "/./v.apdu"])
        #expect(r.status == 64)
        #expect(r.err.contains("would be overwritten"))
        #expect(try String(contentsOfFile: trace, encoding: .utf8) == before)
    }

    @Test func importingOverTheCaptureIsRefused() async throws {
        let dir = try temporaryDirectory()
        let capture = dir + "/c.spylog"
        try Data("whatever".utf8).write(to: URL(fileURLWithPath: capture))
        let r = await runCLI(["trace", "import", capture, "-o", capture])
        #expect(r.status == 64)
        #expect(try String(contentsOfFile: capture, encoding: .utf8) == "whatever")
    }
}
