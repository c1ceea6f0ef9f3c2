import Foundation
@testable import PaymentGateway
import Testing
import TestSupport
import Storage

/// `tapemu pay` of `orderId` with the callback URL https://merchant.test/hooks in a new data dir
/// (inside a test with `.temporaryDirectories`); the dir and the order's webhook row from
/// `gateway webhooks --json`.
func paidOrder(_ orderId: String = "wh-1") async throws -> (dir: String, hook: [String: Any]) {
    let dir = try temporaryDirectory()
    let pay = await runCLI(["pay", "--amount", "1000", "--order-id", orderId, "--callback-url",
                            "https://merchant.test/hooks", "--data-dir", dir])
    #expect(pay.status == 0)
    let r = await runCLI(["gateway", "webhooks", "--order-id", orderId, "--data-dir", dir, "--json"])
    #expect(r.status == 0)
    return (dir, try #require(try jsonRows(r.out).first))
}

@Suite("tapemu gateway secret, webhook verify, gateway webhooks", .temporaryDirectories)
struct WebhookCommandTests {

    @Test("the key it prints (the merchant API key, MONEI's rule) verifies the webhook it stored; a changed byte or a stale t does not")
    func secretAndVerify() async throws {
        let (dir, hook) = try await paidOrder()
        let secret = await runCLI(["gateway", "secret", "--data-dir", dir])
        #expect(secret.status == 0)
        let s = secret.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let gateway = try EmbeddedGateway(dataDirectory: dir)
        #expect(s.hasPrefix("tpk_test_") && s == gateway.ledger.merchantAPIKey)
        #expect(Array(s.utf8) == gateway.webhookSecret)
        let json = await runCLI(["gateway", "secret", "--data-dir", dir, "--json"])
        let doc = try jsonObject(json.out)
        #expect(doc["apiKey"] as? String == s)
        #expect(doc["legacySecret"] as? String == WebhookSignature.secretText(gateway.ledger.legacyWebhookSecret))
        // --api-key and --secret: one of them, not both, not neither.
        let none = await runCLI(["webhook", "verify", "--header", "t=1,v1=00", "--body-file", "-"])
        #expect(none.status == 64 && none.err.contains("--api-key"))
        let both = await runCLI(["webhook", "verify", "--api-key", s, "--secret", "x", "--header", "t=1,v1=00",
                                 "--body-file", "-"])
        #expect(both.status == 64)

        let body = dir + "/body.json"
        try Data((try #require(hook["body"] as? String)).utf8).write(to: URL(fileURLWithPath: body))
        let header = try #require(hook["signature"] as? String)
        let ok = await runCLI(["webhook", "verify", "--api-key", s, "--header", "MONEI-Signature: " + header,
                               "--body-file", body, "--tolerance", "600s"])
        #expect(ok.status == 0 && ok.out.hasPrefix("valid"), "\(ok.out)\(ok.err)")

        // Now is far from the webhook's t: stale under the default tolerance.
        let stale = await runCLI(["webhook", "verify", "--api-key", s, "--header", header, "--body-file", body,
                                  "--now", "4000000000", "--json"])
        #expect(stale.status == 1)
        #expect(try jsonObject(stale.out)["code"] as? String == "staleTimestamp")

        var tampered = Array(try Data(contentsOf: URL(fileURLWithPath: body)))
        tampered[tampered.count / 2] ^= 0x01
        try Data(tampered).write(to: URL(fileURLWithPath: body))
        let bad = await runCLI(["webhook", "verify", "--api-key", s, "--header", header, "--body-file", body,
                                "--tolerance", "600s"])
        #expect(bad.status == 1)
        #expect(bad.out.contains("noMatchingSignature"))
    }

    @Test("an earlier tapemu's ledger (version 2, no API key): read only, gateway secret says so (exit 1) and --legacy prints the old secret; the next payment migrates it and gateway secret prints the API key")
    func earlierLedger() async throws {
        let (dir, _) = try await paidOrder()
        let c = try SQLiteConnection(path: dir + "/" + Ledger.fileName, busyTimeout: .seconds(1), mode: .readWrite)
        try c.execute("""
            ALTER TABLE payments DROP COLUMN captured; ALTER TABLE payments DROP COLUMN last_refund_amount;
            ALTER TABLE payments DROP COLUMN last_refund_reason; ALTER TABLE payments DROP COLUMN cancellation_reason;
            DELETE FROM settings WHERE key = 'merchant_api_key';
            PRAGMA user_version = 2;
            """)
        let none = await runCLI(["gateway", "secret", "--data-dir", dir])
        #expect(none.status == 1 && none.err.contains("no merchant API key yet"), "\(none.err)")
        let legacy = await runCLI(["gateway", "secret", "--legacy", "--data-dir", dir])
        #expect(legacy.status == 0 && legacy.out.trimmingCharacters(in: .whitespacesAndNewlines).count == 64)
        let charges = await runCLI(["charges", "--order-id", "wh-1", "--data-dir", dir, "--json"])
        #expect(charges.status == 0 && charges.out.contains("wh-1"))
        #expect(try c.userVersion == 2)   // queries never migrate
        #expect(await runCLI(["pay", "--amount", "1000", "--order-id", "wh-2", "--data-dir", dir]).status == 0)
        #expect(try c.userVersion == Ledger.schemaVersion)
        let key = await runCLI(["gateway", "secret", "--data-dir", dir])
        #expect(key.status == 0 && key.out.hasPrefix("tpk_test_"))
        let legacyAfter = await runCLI(["gateway", "secret", "--legacy", "--data-dir", dir])
        #expect(legacyAfter.out == legacy.out)
    }

    @Test("gateway webhooks shows the delivery state: attempts, next try, last error")
    func deliveryState() async throws {
        let (dir, hook) = try await paidOrder()
        #expect(hook["state"] as? String == "pending")
        #expect(hook["attempts"] as? Int == 0)
        // A failed attempt, recorded as a deliverer would.
        let ledger = try Ledger(directory: dir)
        let id = try #require(hook["id"] as? Int)
        let next = Date(timeIntervalSince1970: 1_900_000_000)
        try ledger.recordWebhookAttempt(WebhookAttemptRecord(
            webhookId: Int64(id), owner: "test", startedAt: Date(), finishedAt: Date(), status: 503,
            error: "HTTP 503", delivered: false, nextAttemptAt: next))
        let r = await runCLI(["gateway", "webhooks", "--data-dir", dir, "--json"])
        let row = try #require((try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [[String: Any]])?.first)
        #expect(row["state"] as? String == "retrying")
        #expect(row["attempts"] as? Int == 1)
        #expect(row["lastStatus"] as? Int == 503)
        #expect(row["lastError"] as? String == "HTTP 503")
        #expect(row["nextAttemptAt"] as? String == "2030-03-17T17:46:40Z")
        let text = await runCLI(["gateway", "webhooks", "--data-dir", dir])
        #expect(text.out.contains("retrying, attempts 1, next try 2030-03-17T17:46:40Z, last status 503, last error: HTTP 503"))
    }
}
