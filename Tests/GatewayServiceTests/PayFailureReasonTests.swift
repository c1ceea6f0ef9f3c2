import Foundation
import GatewayService
import PaymentGateway
import Testing
import TestSupport
@testable import tapemu

/// Every failure names its cause (issue 33, item 5): `pay --json`'s `reason` is never null when
/// the token or a pre-check fails, and stderr says what the gateway answered.
@Suite("pay names the cause of a failed token or pre-check", .temporaryDirectories)
struct PayFailureReasonTests {
    @Test("a token the gateway refuses: exit 3, reason says so in --json and on stderr")
    func refusedToken() async throws {
        let live = try LiveService()
        let device = try temporaryDirectory()
        let r = await runCLI(["pay", "--amount", "1250", "--order-id", "bad-token", "--gateway", live.url,
                              "--token", "not-a-token", "--data-dir", device, "--json"])
        #expect(r.status == PayCommand.failedNoPayment, "\(r.err)")
        let doc = try jsonObject(Array(r.out.utf8))
        let reason = try #require(doc["reason"] as? String, "reason is null: \(r.out)")
        #expect(reason.contains("the gateway refused the token"), "\(reason)")
        #expect(r.err.contains("the gateway refused the token"), "\(r.err)")
        await live.server.stop()
    }

    @Test("a gateway that stops answering after the token was issued: the reason names the check that failed")
    func unreachableAtPrepare() async throws {
        let (live, token) = try await LiveService.stoppedAfterIssuingAToken()
        let r = await runCLI(["pay", "--amount", "1250", "--order-id", "gone", "--gateway", live.url,
                              "--token", token, "--data-dir", try temporaryDirectory(), "--json"])
        #expect(r.status == PayCommand.failedNoPayment, "\(r.err)")
        let reason = try #require(try jsonObject(Array(r.out.utf8))["reason"] as? String, "reason is null: \(r.out)")
        // Which check, and why: the SDK-version check is the first request.
        #expect(reason.contains("the SDK version check failed: connectionLost"), "\(reason)")
        #expect(r.err.contains("the SDK version check failed"), "\(r.err)")
    }
}
