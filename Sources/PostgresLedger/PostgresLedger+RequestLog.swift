public import Foundation
public import PaymentGateway
import PostgresClient

/// The request log in the shared ledger (schema version 4 here; the SQLite ledger's version 5):
/// every server writes its requests and webhook attempts; `tapemu gateway logs --ledger` on any
/// machine follows them all.
///
/// Each write takes ``requestLogLock`` for its transaction, so ids are handed out in commit
/// order: a follower whose cursor is the last id it printed never skips a row that another
/// server committed later with a smaller id (a sequence alone does not promise that).
extension PostgresLedger {
    static let requestLogMigration = [
        """
        CREATE TABLE IF NOT EXISTS request_log (
            id BIGSERIAL PRIMARY KEY,
            at BIGINT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('request', 'webhook')),
            method TEXT NOT NULL,
            target TEXT NOT NULL,
            status INTEGER,
            duration_ms INTEGER NOT NULL,
            request_id TEXT,
            order_id TEXT,
            detail TEXT
        )
        """,
    ]

    /// The advisory lock request-log writes hold ("TPRL").
    static let requestLogLock: Int64 = 0x5450_524C

    static func insertRequestLog(_ c: PostgresConnection, _ entries: [RequestLogEntry], keeping bound: Int) throws(PostgresError) {
        try c.query("SELECT pg_advisory_xact_lock($1)", [.integer(requestLogLock)])
        for e in entries {
            try c.query("""
                INSERT INTO request_log (at, kind, method, target, status, duration_ms, request_id, order_id, detail)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                """, [.integer(LedgerRules.millis(e.at)), .text(e.kind.rawValue), .text(e.method), .text(e.target),
                      PostgresValue(e.status), PostgresValue(e.durationMs), PostgresValue(e.requestId),
                      PostgresValue(e.orderId), PostgresValue(e.detail)])
        }
        try c.query("DELETE FROM request_log WHERE id <= (SELECT max(id) FROM request_log) - $1",
                    [.integer(Int64(max(1, bound)))])
    }

    public func appendRequestLog(_ entries: [RequestLogEntry], keeping bound: Int) throws(GatewayError) {
        guard !entries.isEmpty else { return }
        try write { (c) throws(PostgresError) -> Result<Void, GatewayError> in
            try Self.insertRequestLog(c, entries, keeping: bound)
            return .success(())
        }
    }

    public func requestLog(after id: Int64, since: Date?, limit: Int) throws(GatewayError) -> [RequestLogEntry] {
        let rows = try read { (c) throws(PostgresError) in
            try c.query("""
                SELECT id, at, kind, method, target, status, duration_ms, request_id, order_id, detail
                FROM request_log WHERE id > $1 AND at >= $2 ORDER BY id LIMIT $3
                """, [.integer(id), .integer(since.map(LedgerRules.millis) ?? Int64.min), .integer(Int64(max(0, limit)))]).rows
        }
        var out: [RequestLogEntry] = []
        for r in rows {
            guard let id = r.int64(0), let at = r.int64(1), let kind = r[2].flatMap(RequestLogEntry.Kind.init(rawValue:)),
                  let method = r[3], let target = r[4], let ms = r.int(6) else {
                throw GatewayError(.corruptLedger, "the ledger database holds a request_log row this tapemu did not write")
            }
            var e = RequestLogEntry(at: LedgerRules.date(at), kind: kind, method: method, target: target, status: r.int(5),
                                    durationMs: ms, requestId: r[7], orderId: r[8], detail: r[9])
            e.id = id
            out.append(e)
        }
        return out
    }
}
