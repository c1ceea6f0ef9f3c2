import Foundation
@testable import PaymentGateway
import Testing
import TestSupport
import VirtualCard
import Storage

/// Ledger schema version 3 (MONEI's merchant API): a ledger an earlier tapemu made (version 2)
/// keeps working — read as it is when opened read only, migrated by a writable open, its
/// payments unchanged in meaning, its merchant API key kept, and the webhooks it left in the
/// outbox delivered signed with the API key (their stored signatures still verify with the
/// legacy secret that signed them).
@Suite("Ledger version 3: an earlier tapemu's ledger keeps working")
struct LedgerMigrationV3Tests {
    /// What version 3 added, dropped again (the tests' way to make an earlier tapemu's file).
    static let dropVersion3 = """
        ALTER TABLE payments DROP COLUMN captured; ALTER TABLE payments DROP COLUMN last_refund_amount;
        ALTER TABLE payments DROP COLUMN last_refund_reason; ALTER TABLE payments DROP COLUMN cancellation_reason;
        """

    /// A ledger with an approved sale (webhook pending, its stored signature made with the legacy
    /// secret as version 2 made it), turned back into version 2; with or without the API key a
    /// version-2 `gateway serve` would have made. Returns the sale's id and the old key's bytes.
    static func versionTwoLedger(_ dir: TempDir, keepAPIKey: Bool,
                                 now: WallClock = WallClock()) async throws -> (paymentId: String, key: [UInt8]?) {
        let g = try Fixture.gateway(dir, now: now)
        let sale = try await g.authorize(Fixture.request(orderId: "order-v2", amount: 1000))
        let path = dir.sub("data") + "/" + Ledger.fileName
        let c = try SQLiteConnection(path: path, busyTimeout: .seconds(1), mode: .readWrite)
        let key = try c.query("SELECT value FROM settings WHERE key = 'merchant_api_key'").first?[0].bytes
        let legacy = try #require(try c.query("SELECT value FROM settings WHERE key = 'webhook_secret'").first?[0].bytes)
        let w = try #require(try g.ledger.webhooks().first)
        let t = try #require(Int64(w.signature.split(separator: ",")[0].dropFirst(2)))
        try c.run("UPDATE webhooks SET signature = ?", [.text(WebhookSignature.header(body: Array(w.body.utf8), secret: legacy, timestamp: t))])
        try c.execute(dropVersion3 + (keepAPIKey ? "" : "DELETE FROM settings WHERE key = 'merchant_api_key';") + "PRAGMA user_version = 2;")
        return (sale.paymentId, keepAPIKey ? key : nil)
    }

    @Test("read only, a version-2 ledger is read as it is: its sale is SUCCEEDED, captured, and webhooks are checked with the legacy secret")
    func readOnly() async throws {
        let dir = TempDir()
        let (id, _) = try await Self.versionTwoLedger(dir, keepAPIKey: false)
        let old = try Ledger(directory: dir.sub("data"), access: .readOnly)
        let sale = try #require(try old.payment(paymentId: id))
        #expect(sale.captured && sale.state == .approved && MoneiStatus.of(sale) == "SUCCEEDED")
        #expect(sale.lastRefundReason == nil && sale.cancellationReason == nil)
        #expect(old.merchantAPIKey.isEmpty && old.webhookSecret == old.legacyWebhookSecret)
        let w = try #require(try old.webhooks().first)
        #expect(throws: Never.self) { try WebhookSignature.verify(header: w.signature, body: w.body, secret: old.legacyWebhookSecret,
                                                                 tolerance: .seconds(100_000_000)) }
    }

    @Test("a writable open migrates once to version 3: the sale unchanged, an API key made, refunds keep their reason, the pending webhook is delivered signed with the API key", arguments: [false, true])
    func migrates(keepAPIKey: Bool) async throws {
        let dir = TempDir(), now = WallClock()
        let (id, oldKey) = try await Self.versionTwoLedger(dir, keepAPIKey: keepAPIKey, now: now)
        let ledger = try Ledger(directory: dir.sub("data"))
        let again = try Ledger(directory: dir.sub("data"))   // a second open finds it migrated
        let c = try SQLiteConnection(path: dir.sub("data") + "/" + Ledger.fileName, busyTimeout: .seconds(1), mode: .readWrite)
        #expect(try c.userVersion == 5 && Ledger.schemaVersion == 5)
        #expect(ledger.merchantAPIKey.hasPrefix("tpk_test_") && ledger.merchantAPIKey == again.merchantAPIKey)
        if let oldKey { #expect(ledger.merchantAPIKey == MerchantAPIKey.text(oldKey)) }   // a served ledger keeps its key
        #expect(ledger.webhookSecret == Array(ledger.merchantAPIKey.utf8))
        let sale = try #require(try ledger.payment(paymentId: id))
        #expect(sale.captured && MoneiStatus.of(sale) == "SUCCEEDED")

        // The webhook the earlier tapemu left: delivered now, signed with the API key.
        let t = FakeTransport()
        let d = WebhookDeliverer(ledger: ledger, transport: t, now: now.provider)
        #expect(try await d.deliverDue().delivered.count == 1)
        let sent = try #require(t.received.first)
        #expect(throws: Never.self) {
            try WebhookSignature.verify(header: sent.signature, body: sent.body, secret: Array(ledger.merchantAPIKey.utf8),
                                        now: now.now)
        }
        #expect(throws: WebhookSignatureError.self) {
            try WebhookSignature.verify(header: sent.signature, body: sent.body, secret: ledger.legacyWebhookSecret, now: now.now)
        }

        // Version 3's columns work on the migrated rows.
        let (after, _) = try ledger.storeRefund(uniqueRef: sale.uniqueRef, amount: 100, reason: "fraudulent", at: now.now)
        #expect(after.lastRefundReason == "fraudulent" && after.lastRefundAmount == 100)
        #expect(try again.payment(paymentId: id)?.lastRefundReason == "fraudulent")
    }
}
