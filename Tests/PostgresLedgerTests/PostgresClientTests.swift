import Foundation
import PostgresClient
import Testing

@Suite("PostgreSQL client", .enabled(if: TestPostgres.available, Comment(rawValue: TestPostgres.skipMessage)))
struct PostgresClientTests {
    @Test("parameters are values, never SQL: a quote, a NULL and a number come back as sent")
    func parameters() throws {
        let c = try PostgresConnection(url: try TestPostgres.freshDatabase())
        let r = try c.query("SELECT $1::text, $2::text, $3::bigint + 1", [.text("o'; DROP TABLE x; --"), .null, .integer(41)])
        #expect(r.rows == [PostgresRow(fields: ["o'; DROP TABLE x; --", nil, "42"])])
    }

    @Test("a unique violation carries SQLSTATE 23505 and the transaction commits nothing")
    func uniqueViolation() throws {
        let c = try PostgresConnection(url: try TestPostgres.freshDatabase())
        try c.query("CREATE TABLE t (k TEXT PRIMARY KEY)")
        try c.query("INSERT INTO t VALUES ($1)", ["a"])
        #expect {
            try c.transaction { () throws(PostgresError) in
                try c.query("INSERT INTO t VALUES ($1)", ["b"])
                try c.query("INSERT INTO t VALUES ($1)", ["a"])
            }
        } throws: { ($0 as? PostgresError)?.isUniqueViolation == true && ($0 as? PostgresError)?.mayHaveReachedServer == false }
        #expect(try c.query("SELECT count(*) FROM t").rows.first?.int(0) == 1)
    }

    @Test("two serializable transactions that conflict: one fails with SQLSTATE 40001")
    func serializationFailure() throws {
        let url = try TestPostgres.freshDatabase()
        let a = try PostgresConnection(url: url), b = try PostgresConnection(url: url)
        try a.query("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        try a.query("INSERT INTO t VALUES (1, 0)")
        try a.query("BEGIN ISOLATION LEVEL SERIALIZABLE")
        try b.query("BEGIN ISOLATION LEVEL SERIALIZABLE")
        _ = try a.query("SELECT v FROM t WHERE k = 1")
        _ = try b.query("SELECT v FROM t WHERE k = 1")
        try a.query("UPDATE t SET v = v + 1 WHERE k = 1")
        try a.query("COMMIT")
        #expect { try b.query("UPDATE t SET v = v + 1 WHERE k = 1") } throws: {
            ($0 as? PostgresError)?.isSerializationFailure == true
        }
        try b.query("ROLLBACK")
    }

    @Test("a connection cut by the server: the statement under way may have reached it; the next one reconnects")
    func connectionLossAndReconnect() throws {
        let url = try TestPostgres.freshDatabase()
        let c = try PostgresConnection(url: url)
        try c.query("CREATE TABLE t (k TEXT)")
        try TestPostgres.cutConnections(to: url)
        #expect { try c.query("SELECT 1") } throws: { ($0 as? PostgresError)?.code == .connectionLost }
        #expect(try c.query("SELECT 1").rows.first?[0] == "1")
        // Cut inside a transaction, before COMMIT: nothing committed, and it says so.
        #expect {
            try c.transaction { () throws(PostgresError) in
                try c.query("INSERT INTO t VALUES ('x')")
                try TestPostgres.cutConnectionsRethrowing(to: url)
                try c.query("INSERT INTO t VALUES ('y')")
            }
        } throws: { e in
            guard let e = e as? PostgresError else { return false }
            return e.code == .notSent && !e.committedUnknown && !e.mayHaveReachedServer
        }
        #expect(try c.query("SELECT count(*) FROM t").rows.first?.int(0) == 0)
    }

    @Test("a server that cannot be reached: a connect error, nothing sent")
    func unreachable() {
        #expect { try PostgresConnection(url: "postgres://tapemu@127.0.0.1:1/none?connect_timeout=2") } throws: {
            ($0 as? PostgresError)?.code == .connect
        }
    }

    @Test("a password in the URL is hidden in messages")
    func redaction() {
        #expect(PostgresURL.redacted("postgres://u:secret@h:5432/db") == "postgres://u:***@h:5432/db")
        #expect(PostgresURL.redacted("postgres://u@h/db") == "postgres://u@h/db")
    }
}

extension TestPostgres {
    /// `cutConnections` as a PostgresError (for use inside a transaction body).
    static func cutConnectionsRethrowing(to url: String) throws(PostgresError) {
        do { try cutConnections(to: url) } catch let e as PostgresError { throw e } catch {
            throw PostgresError(.server, "\(error)")
        }
    }
}
