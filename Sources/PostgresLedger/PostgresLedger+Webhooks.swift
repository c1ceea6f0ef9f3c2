public import Foundation
public import PaymentGateway
import PostgresClient

extension PostgresLedger {
    static let deliveryColumns = """
        id, payment_id, order_id, event, url, body, signature, created_at, delivered_at, attempts, last_error,
        next_attempt_at, last_attempt_at, last_status, gave_up_at
        """

    static func delivery(_ r: PostgresRow) throws(PostgresError) -> WebhookDelivery {
        guard let id = r.int64(0), let pid = r[1], let oid = r[2], let event = r[3].flatMap(WebhookEvent.init(rawValue:)),
              let url = r[4], let body = r[5], let sig = r[6], let created = r.int64(7), let attempts = r.int(9) else {
            throw PostgresError(.server, "a webhook row does not have the shape this tapemu wrote", sqlState: "XX001")
        }
        let w = LedgerRules.webhook(id: id, paymentId: pid, orderId: oid, event: event, url: url, body: body,
                                    signature: sig, createdAt: LedgerRules.date(created),
                                    deliveredAt: r.int64(8).map(LedgerRules.date), attempts: attempts, lastError: r[10])
        return LedgerRules.delivery(w, nextAttemptAt: r.int64(11).map(LedgerRules.date),
                                    lastAttemptAt: r.int64(12).map(LedgerRules.date), lastStatus: r.int(13),
                                    gaveUpAt: r.int64(14).map(LedgerRules.date))
    }

    public func webhooks(orderId: String?, pendingOnly: Bool) throws(GatewayError) -> [Webhook] {
        var clauses: [String] = []
        var parameters: [PostgresValue] = []
        if let orderId { parameters.append(.text(orderId)); clauses.append("order_id = $\(parameters.count)") }
        if pendingOnly { clauses.append("delivered_at IS NULL") }
        let whereSQL = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        return try read { (c) throws(PostgresError) in
            try c.query("SELECT \(Self.deliveryColumns) FROM webhooks \(whereSQL) ORDER BY id", parameters).rows
                .map { (r) throws(PostgresError) in try Self.delivery(r).webhook }
        }
    }

    public func webhookDeliveries(orderId: String?, paymentId: String?) throws(GatewayError) -> [WebhookDelivery] {
        var clauses: [String] = []
        var parameters: [PostgresValue] = []
        if let orderId { parameters.append(.text(orderId)); clauses.append("order_id = $\(parameters.count)") }
        if let paymentId { parameters.append(.text(paymentId)); clauses.append("payment_id = $\(parameters.count)") }
        let whereSQL = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        return try read { (c) throws(PostgresError) in
            try c.query("SELECT \(Self.deliveryColumns) FROM webhooks \(whereSQL) ORDER BY id", parameters).rows
                .map { (r) throws(PostgresError) in try Self.delivery(r) }
        }
    }

    public func webhookAttempts(webhookId: Int64) throws(GatewayError) -> [WebhookAttempt] {
        try read { (c) throws(PostgresError) in
            try c.query("""
                SELECT webhook_id, attempt, started_at, finished_at, status, error, next_attempt_at, fault
                FROM webhook_attempts WHERE webhook_id = $1 ORDER BY id
                """, [.integer(webhookId)]).rows.map { (r) throws(PostgresError) -> WebhookAttempt in
                guard let w = r.int64(0), let n = r.int(1), let s = r.int64(2), let f = r.int64(3) else {
                    throw PostgresError(.server, "a webhook attempt row does not have the shape this tapemu wrote")
                }
                return LedgerRules.attempt(webhookId: w, attempt: n, startedAt: LedgerRules.date(s),
                                           finishedAt: LedgerRules.date(f), status: r.int(4), error: r[5],
                                           nextAttemptAt: r.int64(6).map(LedgerRules.date), fault: r[7])
            }
        }
    }

    /// Claims up to `limit` due webhooks for `owner` until `now + lease`, skipping those another
    /// server holds (`FOR UPDATE SKIP LOCKED`) or holds a live lease on; a lease that ran out
    /// (its server died mid-delivery) is claimed again.
    public func claimDueWebhooks(now: Date, owner: String, lease: Duration, limit: Int,
                                 firstAttemptDelay: Duration) throws(GatewayError) -> [Webhook] {
        let nowMs = LedgerRules.millis(now)
        return try write { (c) throws(PostgresError) -> Result<[Webhook], GatewayError> in
            let rows = try c.query("""
                UPDATE webhooks SET lease_owner = $1, lease_until = $2
                WHERE id IN (
                    SELECT id FROM webhooks
                    WHERE delivered_at IS NULL AND gave_up_at IS NULL
                      AND (lease_until IS NULL OR lease_until <= $3)
                      AND ((next_attempt_at IS NULL AND created_at + $4 <= $3) OR next_attempt_at <= $3)
                    ORDER BY id LIMIT $5
                    FOR UPDATE SKIP LOCKED)
                RETURNING \(Self.deliveryColumns)
                """, [.text(owner), .integer(nowMs + LedgerRules.millis(lease)), .integer(nowMs),
                      .integer(LedgerRules.millis(firstAttemptDelay)), .integer(Int64(max(0, limit)))]).rows
            let claimed = try rows.map { (r) throws(PostgresError) in try Self.delivery(r).webhook }
            return .success(claimed.sorted { $0.id < $1.id })
        }
    }

    public func nextWebhookDue(firstAttemptDelay: Duration) throws(GatewayError) -> Date? {
        try read { (c) throws(PostgresError) in
            try c.query("""
                SELECT min(greatest(coalesce(next_attempt_at, created_at + $1), coalesce(lease_until, 0)))
                FROM webhooks WHERE delivered_at IS NULL AND gave_up_at IS NULL
                """, [.integer(LedgerRules.millis(firstAttemptDelay))]).rows.first?.int64(0).map(LedgerRules.date)
        }
    }

    public func renewWebhookLease(id: Int64, owner: String, until: Date) throws(GatewayError) -> Bool {
        try write { (c) throws(PostgresError) -> Result<Bool, GatewayError> in
            let r = try c.query("""
                UPDATE webhooks SET lease_until = $1
                WHERE id = $2 AND lease_owner = $3 AND delivered_at IS NULL AND gave_up_at IS NULL
                """, [.integer(LedgerRules.millis(until)), .integer(id), .text(owner)])
            return .success(r.affectedRows == 1)
        }
    }

    public func recordWebhookAttempt(_ a: WebhookAttemptRecord) throws(GatewayError) {
        try write { (c) throws(PostgresError) -> Result<Void, GatewayError> in
            guard let row = try c.query("SELECT attempts, delivered_at, order_id, event, url FROM webhooks WHERE id = $1 FOR UPDATE",
                                        [.integer(a.webhookId)]).rows.first, let attempts = row.int(0) else {
                return .failure(GatewayError(.notFound, "no webhook \(a.webhookId) in the outbox"))
            }
            let number = a.isExtraCopy ? attempts : attempts + 1
            // Its line of the request log, in the same transaction as the attempt.
            try Self.insertRequestLog(c, [.webhookAttempt(a, number: number, orderId: row[2] ?? "", event: row[3] ?? "",
                                                          url: row[4] ?? "")], keeping: RequestLogEntry.defaultBound)
            let status = PostgresValue(a.status)
            try c.query("""
                INSERT INTO webhook_attempts (webhook_id, attempt, started_at, finished_at, status, error, next_attempt_at, fault)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                """, [.integer(a.webhookId), .integer(Int64(number)), .integer(LedgerRules.millis(a.startedAt)),
                      .integer(LedgerRules.millis(a.finishedAt)), status, PostgresValue(a.error),
                      PostgresValue(a.delivered ? nil : a.nextAttemptAt.map(LedgerRules.millis)), PostgresValue(a.fault)])
            guard !a.isExtraCopy else { return .success(()) }
            if a.delivered || row[1] != nil {
                try c.query("""
                    UPDATE webhooks SET attempts = attempts + 1, delivered_at = coalesce(delivered_at, $1),
                        last_attempt_at = $2, last_status = $3, last_error = NULL, next_attempt_at = NULL,
                        lease_owner = NULL, lease_until = NULL
                    WHERE id = $4
                    """, [.integer(LedgerRules.millis(a.finishedAt)), .integer(LedgerRules.millis(a.startedAt)), status,
                          .integer(a.webhookId)])
            } else {
                try c.query("""
                    UPDATE webhooks SET attempts = attempts + 1, last_attempt_at = $1, last_status = $2, last_error = $3,
                        next_attempt_at = $4, gave_up_at = $5,
                        lease_owner = CASE WHEN lease_owner = $6 THEN NULL ELSE lease_owner END,
                        lease_until = CASE WHEN lease_owner = $6 THEN NULL ELSE lease_until END
                    WHERE id = $7
                    """, [.integer(LedgerRules.millis(a.startedAt)), status, PostgresValue(a.error),
                          PostgresValue(a.nextAttemptAt.map(LedgerRules.millis)),
                          PostgresValue(a.nextAttemptAt == nil ? LedgerRules.millis(a.finishedAt) : nil),
                          .text(a.owner), .integer(a.webhookId)])
            }
            return .success(())
        }
    }

    public func markWebhookDelivered(id: Int64, at date: Date) throws(GatewayError) {
        try write { (c) throws(PostgresError) -> Result<Void, GatewayError> in
            try c.query("UPDATE webhooks SET delivered_at = $1, attempts = attempts + 1 WHERE id = $2",
                        [.integer(LedgerRules.millis(date)), .integer(id)])
            return .success(())
        }
    }

    public func recordWebhookFailure(id: Int64, error: String) throws(GatewayError) {
        try write { (c) throws(PostgresError) -> Result<Void, GatewayError> in
            try c.query("UPDATE webhooks SET attempts = attempts + 1, last_error = $1 WHERE id = $2",
                        [.text(error), .integer(id)])
            return .success(())
        }
    }
}
