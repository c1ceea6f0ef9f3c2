public import Foundation
public import Storage

/// A webhook of the outbox with its delivery state (schema version 2).
public struct WebhookDelivery: Sendable, Hashable {
    public var webhook: Webhook
    /// When the next attempt is due; nil when delivered, given up, or never tried (due at once).
    public var nextAttemptAt: Date?
    public var lastAttemptAt: Date?
    /// The HTTP status of the last attempt; nil when it got no answer (or none was made).
    public var lastStatus: Int?
    /// When the deliverer stopped trying (after ``WebhookRetryPolicy/maxAttempts``).
    public var gaveUpAt: Date?

    /// `delivered`, `pending`, `retrying` or `failed`.
    public var state: String {
        if webhook.deliveredAt != nil { return "delivered" }
        if gaveUpAt != nil { return "failed" }
        return webhook.attempts == 0 ? "pending" : "retrying"
    }
}

/// One delivery attempt of a webhook, as recorded.
public struct WebhookAttempt: Sendable, Hashable {
    public var webhookId: Int64
    /// 1 for the first attempt.
    public var attempt: Int
    public var startedAt: Date
    public var finishedAt: Date
    /// The receiver's HTTP status; nil when the request got no answer.
    public var status: Int?
    /// Why it did not count as delivered (nil when it did).
    public var error: String?
    /// When the next attempt was scheduled after this one (nil: delivered or given up).
    public var nextAttemptAt: Date?
    /// The fault injected in this attempt (`duplicate`, `stale-t`, `extra-v0`, …), if any.
    public var fault: String?
}

/// What one attempt came to, for ``Ledger/recordWebhookAttempt(_:)``.
public struct WebhookAttemptRecord: Sendable, Hashable {
    public var webhookId: Int64
    /// The deliverer that claimed it (its lease is released).
    public var owner: String
    public var startedAt: Date
    public var finishedAt: Date
    public var status: Int?
    public var error: String?
    public var delivered: Bool
    /// When to try again; nil with `delivered == false` means give up.
    public var nextAttemptAt: Date?
    public var fault: String?
    /// An extra copy sent on purpose (a `duplicate` fault): logged, counts nothing.
    public var isExtraCopy: Bool

    public init(webhookId: Int64, owner: String, startedAt: Date, finishedAt: Date, status: Int?, error: String?,
                delivered: Bool, nextAttemptAt: Date?, fault: String? = nil, isExtraCopy: Bool = false) {
        self.webhookId = webhookId
        self.owner = owner
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.status = status
        self.error = error
        self.delivered = delivered
        self.nextAttemptAt = nextAttemptAt
        self.fault = fault
        self.isExtraCopy = isExtraCopy
    }
}

extension Ledger {
    private static let deliveryColumns = """
        id, payment_id, order_id, event, url, body, signature, created_at, delivered_at, attempts, last_error,
        next_attempt_at, last_attempt_at, last_status, gave_up_at
        """

    private static func dateOrNil(_ v: Int64?) -> Date? {
        v.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) }
    }

    private static func delivery(_ r: SQLRow) throws(GatewayError) -> WebhookDelivery {
        guard let id = r[0].int64, let pid = r[1].string, let oid = r[2].string,
              let event = r[3].string.flatMap(WebhookEvent.init(rawValue:)), let url = r[4].string,
              let body = r[5].string, let sig = r[6].string, let created = r[7].int64, let attempts = r[9].int else {
            throw GatewayError(.corruptLedger, "a webhook row does not have the shape this tapemu wrote")
        }
        let w = Webhook(id: id, paymentId: pid, orderId: oid, event: event, url: url, body: body, signature: sig,
                        createdAt: dateOrNil(created)!, deliveredAt: dateOrNil(r[8].int64), attempts: attempts,
                        lastError: r[10].string)
        return WebhookDelivery(webhook: w, nextAttemptAt: dateOrNil(r[11].int64), lastAttemptAt: dateOrNil(r[12].int64),
                               lastStatus: r[13].int, gaveUpAt: dateOrNil(r[14].int64))
    }

    /// The outbox with delivery state, in outbox order; for one order or one sale when given.
    public func webhookDeliveries(orderId: String? = nil, paymentId: String? = nil) throws(GatewayError) -> [WebhookDelivery] {
        var clauses: [String] = []
        var bindings: [SQLValue] = []
        if let orderId { clauses.append("order_id = ?"); bindings.append(.text(orderId)) }
        if let paymentId { clauses.append("payment_id = ?"); bindings.append(.text(paymentId)) }
        let whereSQL = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        return try withConnection { (c) throws(GatewayError) in
            try c.query("SELECT \(Self.deliveryColumns) FROM webhooks \(whereSQL) ORDER BY id", bindings)
                .map { (r) throws(GatewayError) in try Self.delivery(r) }
        }
    }

    /// Every attempt of a webhook, oldest first.
    public func webhookAttempts(webhookId: Int64) throws(GatewayError) -> [WebhookAttempt] {
        try withConnection { (c) throws(GatewayError) in
            try c.query("""
                SELECT webhook_id, attempt, started_at, finished_at, status, error, next_attempt_at, fault
                FROM webhook_attempts WHERE webhook_id = ? ORDER BY id
                """, [.integer(webhookId)]).map { (r) throws(GatewayError) -> WebhookAttempt in
                guard let w = r[0].int64, let n = r[1].int, let s = r[2].int64, let f = r[3].int64 else {
                    throw GatewayError(.corruptLedger, "a webhook attempt row does not have the shape this tapemu wrote")
                }
                return WebhookAttempt(webhookId: w, attempt: n, startedAt: Self.dateOrNil(s)!, finishedAt: Self.dateOrNil(f)!,
                                      status: r[4].int, error: r[5].string, nextAttemptAt: Self.dateOrNil(r[6].int64),
                                      fault: r[7].string)
            }
        }
    }

    /// Claims up to `limit` webhooks due at `now` for `owner` until `now + lease`, in outbox
    /// order, in one immediate transaction: two deliverers (two processes) never hold one
    /// webhook at once. A webhook never tried is due `firstAttemptDelay` after it was made.
    /// A lease that ran out (its deliverer died mid-attempt) is claimed again: at least once.
    public func claimDueWebhooks(now: Date, owner: String, lease: Duration, limit: Int,
                                 firstAttemptDelay: Duration = .zero) throws(GatewayError) -> [Webhook] {
        let nowMs = Self.millis(now)
        let leaseMs = lease.components.seconds * 1000 + lease.components.attoseconds / 1_000_000_000_000_000
        let delay = firstAttemptDelay.components.seconds * 1000
            + firstAttemptDelay.components.attoseconds / 1_000_000_000_000_000
        return try withConnection { (c) throws(GatewayError) in
            try c.transaction { () throws(GatewayError) -> [Webhook] in
                let rows = try c.query("""
                    SELECT \(Self.deliveryColumns) FROM webhooks
                    WHERE delivered_at IS NULL AND gave_up_at IS NULL
                      AND (lease_until IS NULL OR lease_until <= ?)
                      AND ((next_attempt_at IS NULL AND created_at + ? <= ?) OR next_attempt_at <= ?)
                    ORDER BY id LIMIT ?
                    """, [.integer(nowMs), .integer(delay), .integer(nowMs), .integer(nowMs), SQLValue(max(0, limit))])
                var out: [Webhook] = []
                for r in rows {
                    let d = try Self.delivery(r)
                    _ = try c.run("UPDATE webhooks SET lease_owner = ?, lease_until = ? WHERE id = ?",
                                  [.text(owner), .integer(nowMs + leaseMs), .integer(d.webhook.id)])
                    out.append(d.webhook)
                }
                return out
            }
        }
    }

    /// When the next webhook is due (the earliest of the pending ones' next tries, first-try
    /// times and expiring leases); nil when none is pending.
    public func nextWebhookDue(firstAttemptDelay: Duration = .zero) throws(GatewayError) -> Date? {
        let delay = firstAttemptDelay.components.seconds * 1000
            + firstAttemptDelay.components.attoseconds / 1_000_000_000_000_000
        return try withConnection { (c) throws(GatewayError) in
            let v = try c.query("""
                SELECT min(max(coalesce(next_attempt_at, created_at + ?), coalesce(lease_until, 0)))
                FROM webhooks WHERE delivered_at IS NULL AND gave_up_at IS NULL
                """, [.integer(delay)]).first?[0].int64
            return Self.dateOrNil(v)
        }
    }

    /// Extends `owner`'s lease on webhook `id` to `until`; false when `owner` no longer holds
    /// it (``LedgerStore/renewWebhookLease(id:owner:until:)``).
    public func renewWebhookLease(id: Int64, owner: String, until: Date) throws(GatewayError) -> Bool {
        try withConnection { (c) throws(GatewayError) in
            try c.run("""
                UPDATE webhooks SET lease_until = ?
                WHERE id = ? AND lease_owner = ? AND delivered_at IS NULL AND gave_up_at IS NULL
                """, [.integer(Self.millis(until)), .integer(id), .text(owner)]) == 1
        }
    }

    /// Records an attempt and releases the lease, in one transaction. A delivered webhook
    /// stays delivered (a late failure of another copy does not undo it).
    public func recordWebhookAttempt(_ a: WebhookAttemptRecord) throws(GatewayError) {
        try withConnection { (c) throws(GatewayError) in
            try c.transaction { () throws(GatewayError) in
                guard let row = try c.query("SELECT attempts, delivered_at, order_id, event, url FROM webhooks WHERE id = ?",
                                            [.integer(a.webhookId)]).first, let attempts = row[0].int else {
                    throw GatewayError(.notFound, "no webhook \(a.webhookId) in the outbox")
                }
                let number = a.isExtraCopy ? attempts : attempts + 1
                // Its line of the request log, in the same transaction as the attempt.
                try Self.insertRequestLog(c, [.webhookAttempt(a, number: number, orderId: row[2].string ?? "",
                                                              event: row[3].string ?? "", url: row[4].string ?? "")],
                                          keeping: RequestLogEntry.defaultBound)
                _ = try c.run("""
                    INSERT INTO webhook_attempts (webhook_id, attempt, started_at, finished_at, status, error, next_attempt_at, fault)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, [.integer(a.webhookId), SQLValue(number), .integer(Self.millis(a.startedAt)),
                          .integer(Self.millis(a.finishedAt)), SQLValue(a.status.map { Int64($0) }), SQLValue(a.error),
                          SQLValue(a.delivered ? nil : a.nextAttemptAt.map(Self.millis)), SQLValue(a.fault)])
                guard !a.isExtraCopy else { return }
                let alreadyDelivered = row[1].int64 != nil
                if a.delivered || alreadyDelivered {
                    _ = try c.run("""
                        UPDATE webhooks SET attempts = attempts + 1, delivered_at = coalesce(delivered_at, ?),
                            last_attempt_at = ?, last_status = ?, last_error = NULL, next_attempt_at = NULL,
                            lease_owner = NULL, lease_until = NULL
                        WHERE id = ?
                        """, [.integer(Self.millis(a.finishedAt)), .integer(Self.millis(a.startedAt)),
                              SQLValue(a.status.map { Int64($0) }), .integer(a.webhookId)])
                } else {
                    _ = try c.run("""
                        UPDATE webhooks SET attempts = attempts + 1, last_attempt_at = ?, last_status = ?, last_error = ?,
                            next_attempt_at = ?, gave_up_at = ?,
                            lease_owner = CASE WHEN lease_owner = ? THEN NULL ELSE lease_owner END,
                            lease_until = CASE WHEN lease_owner = ? THEN NULL ELSE lease_until END
                        WHERE id = ?
                        """, [.integer(Self.millis(a.startedAt)), SQLValue(a.status.map { Int64($0) }), SQLValue(a.error),
                              SQLValue(a.nextAttemptAt.map(Self.millis)),
                              SQLValue(a.nextAttemptAt == nil ? Self.millis(a.finishedAt) : nil),
                              .text(a.owner), .text(a.owner), .integer(a.webhookId)])
                }
            }
        }
    }
}
