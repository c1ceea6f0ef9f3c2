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
        #expect(try c.query("SELECT version FROM tapemu_schema_migrations").rows.map { $0[0] } == ["1"])
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

    @Test("a database that is not there: a clear storage error")
    func unreachable() {
        #expect { try EmbeddedGateway.shared(ledgerURL: "postgres://tapemu@127.0.0.1:1/none?connect_timeout=2") } throws: {
            ($0 as? GatewayError)?.code == .storage
        }
        #expect { try EmbeddedGateway.shared(ledgerURL: "/var/lib/tapemu") } throws: {
            ($0 as? GatewayError)?.code == .invalidRequest
        }
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
        var lostAtCommit = PostgresError(.connectionLost, "server closed the connection")
        lostAtCommit.committedUnknown = true
        #expect(PostgresLedger.fault(lostAtCommit, writing: true).isCommunicationFailure)
        #expect(!PostgresLedger.fault(PostgresError(.notSent, "down"), writing: true).isCommunicationFailure)
        #expect(PostgresLedger.fault(PostgresError(.server, "x", sqlState: "40001"), writing: true).code == .busy)
    }
}
