import Foundation
import PaymentGateway
import Testing
import TestSupport

@Suite("tapemu gateway", .temporaryDirectories)
struct GatewayCommandTests {
    @Test("triggers lists every documented trigger")
    func triggers() async throws {
        let r = await runCLI(["gateway", "triggers", "--json"])
        #expect(r.status == 0)
        let rows = try jsonRows(r.out)
        #expect(rows.count == EmbeddedGateway.triggers.count)
        #expect(rows.contains { ($0["match"] as? String) == "amount ending 51" && ($0["result"] as? String) == "decline" })
    }

    @Test("a paid order's webhook is in the outbox, signed so that receivers can verify it")
    func webhookAfterPay() async throws {
        let (dir, hook) = try await paidOrder("hook-1")
        #expect(hook["url"] as? String == "https://merchant.test/hooks")
        let body = try #require(hook["body"] as? String)
        let header = try #require(hook["signature"] as? String)
        let secret = try EmbeddedGateway(dataDirectory: dir).webhookSecret
        _ = try WebhookSignature.verify(header: header, body: Array(body.utf8), secret: secret,
                                    tolerance: .seconds(86_400 * 365 * 10))
        var tampered = Array(body.utf8)
        tampered[tampered.count / 2] ^= 0x01
        #expect(throws: WebhookSignatureError.self) {
            _ = try WebhookSignature.verify(header: header, body: tampered, secret: secret,
                                        tolerance: .seconds(86_400 * 365 * 10))
        }
    }

    @Test("a token it issues prepares a payment")
    func token() async throws {
        let dir = try temporaryDirectory()
        let t = await runCLI(["gateway", "token", "--data-dir", dir])
        #expect(t.status == 0)
        let token = t.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let pay = await runCLI(["pay", "--amount", "1000", "--order-id", "tok-1", "--token", token,
                                "--data-dir", dir, "--json"])
        #expect(pay.status == 0)
    }
}
