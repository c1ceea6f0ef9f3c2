public import Foundation
public import Storage

/// The request log in the SQLite ledger (schema version 5): one row per request answered and
/// per webhook attempt, pruned to a bound on every write.
extension Ledger {
    /// Version 5: the request log, additive. `AUTOINCREMENT`: an id is never reused after the
    /// oldest rows are pruned, so a follower's cursor (the last id it printed) stays valid.
    static let migrationV5 = """
        CREATE TABLE IF NOT EXISTS request_log (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('request', 'webhook')),
            method TEXT NOT NULL,
            target TEXT NOT NULL,
            status INTEGER,
            duration_ms INTEGER NOT NULL,
            request_id TEXT,
            order_id TEXT,
            detail TEXT
        );
        """

    /// Inserts `entries` and prunes beyond `bound` with the connection `c`, inside the caller's
    /// transaction (a webhook attempt's, or ``appendRequestLog(_:keeping:)``'s own).
    static func insertRequestLog(_ c: SQLiteConnection, _ entries: [RequestLogEntry], keeping bound: Int) throws(GatewayError) {
        for e in entries {
            _ = try c.run("""
                INSERT INTO request_log (at, kind, method, target, status, duration_ms, request_id, order_id, detail)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [.integer(millis(e.at)), .text(e.kind.rawValue), .text(e.method), .text(e.target),
                      SQLValue(e.status.map { Int64($0) }), SQLValue(e.durationMs), SQLValue(e.requestId),
                      SQLValue(e.orderId), SQLValue(e.detail)])
        }
        _ = try c.run("DELETE FROM request_log WHERE id <= (SELECT max(id) FROM request_log) - ?",
                      [.integer(Int64(max(1, bound)))])
    }

    public func appendRequestLog(_ entries: [RequestLogEntry], keeping bound: Int) throws(GatewayError) {
        guard !entries.isEmpty else { return }
        try withConnection { (c) throws(GatewayError) in
            try c.transaction { () throws(GatewayError) in try Self.insertRequestLog(c, entries, keeping: bound) }
        }
    }

    public func requestLog(after id: Int64, since: Date?, limit: Int) throws(GatewayError) -> [RequestLogEntry] {
        try withConnection { (c) throws(GatewayError) -> [RequestLogEntry] in
            guard try c.tableNames().contains("request_log") else { return [] }
            let rows = try c.query("""
                SELECT id, at, kind, method, target, status, duration_ms, request_id, order_id, detail
                FROM request_log WHERE id > ? AND at >= ? ORDER BY id LIMIT ?
                """, [.integer(id), .integer(since.map(Self.millis) ?? Int64.min), .integer(Int64(max(0, limit)))])
            var out: [RequestLogEntry] = []
            for r in rows {
                guard let id = r[0].int64, let at = r[1].int64, let kind = r[2].string.flatMap(RequestLogEntry.Kind.init(rawValue:)),
                      let method = r[3].string, let target = r[4].string, let ms = r[6].int else {
                    throw GatewayError(.corruptLedger, "\(path) is damaged: a request_log row cannot be read")
                }
                var e = RequestLogEntry(at: LedgerRules.date(at), kind: kind, method: method, target: target,
                                        status: r[5].int, durationMs: ms, requestId: r[7].string, orderId: r[8].string,
                                        detail: r[9].string)
                e.id = id
                out.append(e)
            }
            return out
        }
    }
}
