import Foundation
import PaymentGateway
import PostgresClient
import PostgresLedger
import Synchronization
import Testing

@Suite("PostgreSQL ledger", .enabled(if: TestPostgres.available, Comment(rawValue: TestPostgres.skipMessage)))
struct PostgresLedgerTests {
    @Test("eight servers opening one empty database at once: one migration, one set of secrets")
    func concurrentMigration() async throws {
        let url = try TestPostgres.freshDatabase()
        let secrets = try await withTaskExecutorPreference(testLedgerThreads) {
            try await withThrowingTaskGroup(of: [UInt8].self) { group in
                for _ in 0..<8 { group.addTask { try PostgresLedger(url: url, connections: 1).webhookSecret } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(secrets.count == 8 && Set(secrets).count == 1)
        let c = try PostgresConnection(url: url)
        #expect(try c.query("SELECT version FROM tapemu_schema_migrations ORDER BY version").rows.map { $0[0] } == ["1", "2", "3", "4"])
    }

    /// A fresh database whose gateway approved a sale for `orderId`, and a connection to it (to
    /// make it an earlier version's).
    static func databaseWithASale(_ orderId: String) async throws
        -> (url: String, sale: AuthorisationResponse, connection: PostgresConnection) {
        let url = try TestPostgres.freshDatabase()
        let sale = try await EmbeddedGateway.shared(ledgerURL: url).authorize(Card.request(orderId))
        return (url, sale, try PostgresConnection(url: url))
    }

    @Test("a version-1 database (an earlier tapemu's) is migrated to version 2 once: its sale unchanged, its webhook key the merchant API key, reasons kept from then on")
    func versionOneMigrates() async throws {
        let (url, sale, c) = try await Self.databaseWithASale("o-v1")
        try c.query("ALTER TABLE payments DROP COLUMN captured")
        for column in ["last_refund_amount", "last_refund_reason", "cancellation_reason"] {
            try c.query("ALTER TABLE payments DROP COLUMN \(column)")
        }
        // An earlier tapemu's database: version 1 only (version 3's table is left: IF NOT EXISTS).
        try c.query("DELETE FROM tapemu_schema_migrations WHERE version >= 2")
        try c.query("DELETE FROM settings WHERE key = 'merchant_api_key'")
        let a = try PostgresLedger(url: url, connections: 1)
        let b = try PostgresLedger(url: url, connections: 1)
        #expect(try c.query("SELECT version FROM tapemu_schema_migrations ORDER BY version").rows.map { $0[0] } == ["1", "2", "3", "4"])
        #expect(a.merchantAPIKey.hasPrefix("tpk_test_") && a.merchantAPIKey == b.merchantAPIKey)
        #expect(a.webhookSecret == Array(a.merchantAPIKey.utf8) && a.legacyWebhookSecret.count == 32)
        let stored = try #require(try a.payment(paymentId: sale.paymentId))
        #expect(stored.captured && MoneiStatus.of(stored) == "SUCCEEDED")
        let (after, _) = try b.storeRefund(uniqueRef: sale.uniqueRef, amount: 100, reason: "duplicated", at: Date())
        #expect(after.lastRefundReason == "duplicated" && after.lastRefundAmount == 100)
        #expect(try a.payment(paymentId: sale.paymentId)?.lastRefundReason == "duplicated")
    }

    @Test("a version-3 database (before the request log) is migrated to version 4 once: the request log is there and written")
    func versionThreeMigrates() async throws {
        let (url, sale, c) = try await Self.databaseWithASale("o-v3")
        try c.query("DROP TABLE request_log")
        try c.query("DELETE FROM tapemu_schema_migrations WHERE version >= 4")
        let a = try PostgresLedger(url: url, connections: 1)
        #expect(try c.query("SELECT version FROM tapemu_schema_migrations ORDER BY version").rows.map { $0[0] } == ["1", "2", "3", "4"])
        #expect(try a.payment(paymentId: sale.paymentId)?.orderId == "o-v3")
        try a.appendRequestLog([RequestLogEntry(at: Date(), kind: .request, method: "GET", target: "/x", status: 200, durationMs: 1)])
        #expect(try a.requestLog(after: 0, since: nil, limit: 10).map(\.target) == ["/x"])
    }

    @Test("a database migrated by a newer tapemu is refused, not written")
    func newerSchema() throws {
        let url = try TestPostgres.freshDatabase()
        _ = try PostgresLedger(url: url, connections: 1)
        try PostgresConnection(url: url).query("INSERT INTO tapemu_schema_migrations VALUES (99, 0)")
        #expect { try PostgresLedger(url: url, connections: 1) } throws: {
            ($0 as? GatewayError)?.code == .unsupportedLedgerVersion
        }
    }

    @Test("a database that is not there: connectionLost (gateway serve waits it out at start), not storage")
    func unreachable() {
        #expect { try EmbeddedGateway.shared(ledgerURL: "postgres://tapemu@127.0.0.1:1/none?connect_timeout=2") } throws: {
            ($0 as? GatewayError)?.code == .connectionLost
        }
        #expect { try EmbeddedGateway.shared(ledgerURL: "/var/lib/tapemu") } throws: {
            ($0 as? GatewayError)?.code == .invalidRequest
        }
    }

    @Test("a group commit whose session ends after its writes, before its COMMIT: every sale of the batch fails, none is recorded, and the same sales then succeed once")
    func batchBrokenBeforeCommit() async throws {
        let url = try TestPostgres.freshDatabase()
        let g = try EmbeddedGateway.shared(ledgerURL: url, connections: 2)
        let seed = try await g.authorize(Card.request("seed"))
        let template = try #require(try g.ledger.payment(paymentId: seed.paymentId))
        let fp = g.ledger.cardFingerprint(of: Card.visa.digits)
        let batch = (0..<8).map { (Card.sale(like: template, orderId: "cut-\($0)"), fp) }
        let results = g.ledger.storeSales(batch, beforeCommit: { _ in try? TestPostgres.cutConnections(to: url) })
        try #require(results.count == 8)
        for r in results {
            switch r {
            case .success(let o): Issue.record("\(o.payment.orderId) answered although its COMMIT never ran")
            // The client cannot tell whether the COMMIT reached the server: unknown (serverError)
            // or, when the cut was seen before sending it, storage; never a success.
            case .failure(let e): #expect(e.code == .serverError || e.code == .storage)
            }
        }
        #expect(try g.ledger.allPayments().map(\.orderId) == ["seed"])
        #expect(try g.ledger.webhooks().map(\.orderId) == ["seed"])
        let again = g.ledger.storeSales(batch, beforeCommit: nil)
        #expect(try again.map { try $0.get().isReplay } == Array(repeating: false, count: 8))
        #expect(try g.ledger.allPayments().count == 9 && g.ledger.webhooks().count == 9)
    }

    @Test("the database goes away: a write before COMMIT says nothing was recorded; when it returns, the gateway goes on")
    func outageAndRecovery() async throws {
        let url = try TestPostgres.freshDatabase()
        let g = try EmbeddedGateway.shared(ledgerURL: url, connections: 2)
        _ = try await g.authorize(Card.request("before"))
        // Every session cut (a restart): the idle connections reconnect at BEGIN; nothing is lost.
        try TestPostgres.cutConnections(to: url)
        let after = try await g.authorize(Card.request("after-restart"))
        #expect(!after.isReplay)
        // The database refuses connections: a clear refusal, nothing recorded.
        try TestPostgres.cutConnections(to: url, refuse: true)
        do throws(GatewayError) {
            _ = try await g.authorize(Card.request("while-down"))
            Issue.record("an authorisation succeeded with the database away")
        } catch {
            #expect(error.code == .storage)
            #expect(error.reason.contains("unreachable; nothing was"))
        }
        do throws(GatewayError) {
            _ = try g.ledger.storeRefund(uniqueRef: after.uniqueRef, amount: 1, at: Date())
            Issue.record("a refund succeeded with the database away")
        } catch {
            #expect(error.code == .storage && error.reason.contains("nothing was recorded"))
        }
        do throws(GatewayError) { _ = try await g.charges(orderId: "before"); Issue.record("a read succeeded with the database away") }
        catch { #expect(error.code == .storage) }
        try TestPostgres.allowConnections(to: url)
        #expect(try await g.charges(orderId: "while-down").isEmpty)
        let back = try await g.authorize(Card.request("while-down"))
        #expect(!back.isReplay && back.status == .approved)
        #expect(try g.ledger.allPayments().map(\.orderId) == ["before", "after-restart", "while-down"])
    }

    @Test("a failed commit's error maps to the terminal's unknown outcome; one before COMMIT to a refusal")
    func faultMapping() {
        let lostAtCommit = PostgresError(.connectionLost, "server closed the connection", committedUnknown: true)
        #expect(PostgresLedger.fault(lostAtCommit, writing: true).isCommunicationFailure)
        #expect(!PostgresLedger.fault(PostgresError(.notSent, "down"), writing: true).isCommunicationFailure)
        #expect(PostgresLedger.fault(PostgresError(.server, "x", sqlState: "40001"), writing: true).code == .busy)
    }

    @Test("the connection breaks while COMMIT is under way: the terminal's outcome is unknown; the order is then looked up, never charged twice")
    func lostDuringCommit() async throws {
        let url = try TestPostgres.freshDatabase()
        let g = try EmbeddedGateway.shared(ledgerURL: url, connections: 2)
        // A deferred trigger runs inside COMMIT: for this order it ends its own session there.
        let admin = try PostgresConnection(url: url)
        try admin.query("""
            CREATE FUNCTION die_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.order_id = 'die-at-commit' THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;
                RETURN NULL;
            END $$
            """)
        try admin.query("""
            CREATE CONSTRAINT TRIGGER die_at_commit AFTER INSERT ON payments
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION die_at_commit()
            """)
        do throws(GatewayError) {
            _ = try await g.authorize(Card.request("die-at-commit"))
            Issue.record("answered although the connection broke during COMMIT")
        } catch {
            #expect(error.isCommunicationFailure, "\(error)")
            #expect(error.reason.contains("may have been recorded"))
        }
        // The terminal's recovery: look the order up (the gateway reconnects by itself).
        let found = try await g.charges(orderId: "die-at-commit")
        #expect(found.count <= 1)
        try admin.query("DROP TRIGGER die_at_commit ON payments")
        let again = try await g.authorize(Card.request("die-at-commit"))
        #expect(again.isReplay == !found.isEmpty)
        #expect(try g.ledger.saleCount(orderId: "die-at-commit") == 1)
    }
}
