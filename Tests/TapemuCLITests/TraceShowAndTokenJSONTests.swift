import Foundation
import Testing
@testable import tapemu
import TestSupport

@Suite("--json for trace show and gateway token", .temporaryDirectories)
struct TraceShowAndTokenJSONTests {
    @Test("trace show --json: headers in order, each exchange with its instruction, status and masked bytes")
    func traceShow() async throws {
        let file = ReadCommandTests.traces + "/tear-at-gpo.apdu"
        let r = await runCLI(["trace", "show", "--json", file])
        #expect(r.status == 0, "\(r.err)")
        let doc = try jsonObject(r.out)
        let headers = try #require(doc["headers"] as? [[String: String]])
        #expect(headers.first?["key"] == "title")
        #expect(headers.contains { $0["key"] == "redacted" && $0["value"] == "yes" })
        let exchanges = try #require(doc["exchanges"] as? [[String: Any]])
        #expect(exchanges.first?["instruction"] as? String == "SELECT 2PAY.SYS.DDF01")
        #expect(exchanges.first?["sw"] as? String == "9000")
        #expect(exchanges.last?["event"] as? String == "card-removed")
        #expect(exchanges.last?["instruction"] as? String == "GET PROCESSING OPTIONS")
        #expect((exchanges.first?["cardTime"] as? Double ?? -1) >= 0)

        let visa = await runCLI(["trace", "show", "--json", ReadCommandTests.traces + "/visa-qvsdc.apdu"])
        #expect(visa.out.contains("******"))
        for pan in fullPANs { #expect(!visa.out.contains(pan)) }
        #expect(await runCLI(["trace", "show", "--json", "/nonexistent.apdu"]).status == 66)
    }

    @Test("gateway token --json: the token and the claims the gateway reads from it")
    func gatewayToken() async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["gateway", "token", "--json", "--account", "acct_42", "--ttl", "10m", "--data-dir", dir])
        #expect(r.status == 0, "\(r.err)")
        let doc = try jsonObject(r.out)
        #expect((doc["token"] as? String)?.hasPrefix("tpm_test_") == true)
        #expect(doc["accountId"] as? String == "acct_42")
        #expect(doc["mode"] as? String == "test")
        let iso = ISO8601DateFormatter()
        let issued = try #require((doc["issuedAt"] as? String).flatMap(iso.date(from:)))
        let expires = try #require((doc["expiresAt"] as? String).flatMap(iso.date(from:)))
        #expect(expires.timeIntervalSince(issued) == 600)
        // Without --json: the bare token, as before.
        let plain = await runCLI(["gateway", "token", "--data-dir", dir])
        #expect(plain.out.hasPrefix("tpm_test_") && !plain.out.contains("{"))
    }
}
