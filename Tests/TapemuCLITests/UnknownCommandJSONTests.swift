import Foundation
import Testing
@testable import tapemu

/// DESIGN: "`--json` prints one JSON document on stdout"; README: a command that fails before it
/// has a result prints `{"error": {"exitCode", "message"}}`. A mistyped command or subcommand
/// with --json printed nothing on stdout (`tapemu gateway webhook --json | jq` got no input;
/// found by the review). It now prints the error document, with stderr's reason, exit 64.
@Suite("--json on an unknown command: one JSON document")
struct UnknownCommandJSONTests {
    @Test(arguments: [
        (["frobnicate", "--json"], "unknown command 'frobnicate'"),
        (["gateway", "webhook", "--json"], "unknown command 'gateway webhook'"),
        (["gateway", "--json"], "'gateway' needs a subcommand"),
    ])
    func theErrorDocumentIsPrinted(args: [String], reason: String) async throws {
        let r = await runCLI(args)
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("tapemu: \(reason)"), "\(r.err)")
        let doc = try jsonObject(r.out)
        let error = try #require(doc["error"] as? [String: Any], "\(r.out)")
        #expect(error["exitCode"] as? Int == 64)
        #expect((error["message"] as? String)?.hasPrefix(reason) == true, "\(r.out)")
    }

    @Test func withoutJSONStdoutStaysEmpty() async {
        let r = await runCLI(["gateway", "webhook"])
        #expect(r.status == 64)
        #expect(r.out.isEmpty)
    }
}
