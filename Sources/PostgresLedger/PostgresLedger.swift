public import Foundation
public import PaymentGateway
public import PostgresClient
import PaymentRules

/// The gateway's ledger in a PostgreSQL database, shared by every gateway server pointed at it
/// (`tapemu gateway serve --ledger postgres://…`). The same guarantees as the SQLite ledger
/// (``LedgerStore``):
///
/// - One sale per orderId across servers: a unique index on the sales' order ids and
///   `INSERT … ON CONFLICT DO NOTHING`; the loser of a race reads the winner's sale (a replay)
///   or refuses with `orderConflict`.
/// - Reversals and refunds lock their sale (`SELECT … FOR UPDATE`): once, and never beyond the
///   remainder.
/// - The webhook is inserted in the transaction of the state it announces.
/// - Deliverers claim webhooks with `FOR UPDATE SKIP LOCKED` under a lease: one server at a
///   time; a server that died mid-delivery leaves the webhook to another once its lease ran out.
/// - Schema migrations are versioned (`tapemu_schema_migrations`) and run under
///   `pg_advisory_xact_lock`, so servers starting together migrate once.
///
/// The database going away is a gateway fault: a write that broke before its COMMIT was sent
/// throws ``GatewayError/Code/storage`` (nothing recorded); one that broke while its COMMIT was
/// under way throws ``GatewayError/Code/serverError`` (it may be recorded: the terminal's
/// outcome is unknown). Each connection reconnects on its next use once the database is back.
public final class PostgresLedger: LedgerStore, Sendable {
    /// The schema version this code writes (2: MONEI's AUTHORIZED state and the refund and
    /// cancellation reasons, as the SQLite ledger's version 3; 3: which terminal sent each order,
    /// as the SQLite ledger's version 4; 4: the request log, as the SQLite ledger's version 5).
    /// One per entry of ``migrations``.
    public static let schemaVersion = migrations.count
    /// The advisory lock key migrations hold ("TPML").
    static let migrationLock: Int64 = 0x5450_4D4C

    public let url: String
    public let pool: PostgresPool
    /// The merchant API key's UTF-8 bytes (``LedgerStore/webhookSecret``).
    public let webhookSecret: [UInt8]
    public let merchantAPIKey: String
    public let legacyWebhookSecret: [UInt8]
    public let tokenSigningSecret: [UInt8]
    private let fingerprintKey: [UInt8]

    /// Connects to `url` (`postgres://user[:password]@host[:port]/db`), migrates the schema
    /// (creating it in an empty database) and reads the ledger's secrets (made once, by the first
    /// server; every server shares them). `connections` is the pool's size.
    public init(url: String, connections: Int = 4) throws(GatewayError) {
        self.url = url
        do {
            pool = try PostgresPool(url: url, size: connections)
        } catch {
            // Not there (nothing listens, no route): `connectionLost`, which `gateway serve`
            // waits out at start; anything else (a refused login, no such database) is storage.
            throw GatewayError(error.code == .connect ? .connectionLost : .storage,
                               "cannot open the ledger database: \(error.reason)")
        }
        let secrets = try Self.migrate(pool, url: url)
        legacyWebhookSecret = secrets["webhook_secret"]!
        merchantAPIKey = MerchantAPIKey.text(secrets[MerchantAPIKey.settingName]!)
        webhookSecret = Array(merchantAPIKey.utf8)
        tokenSigningSecret = secrets["token_secret"]!
        fingerprintKey = secrets["fingerprint_key"]!
    }

    public var location: String { PostgresURL.redacted(url) }

    public func cardFingerprint(of digits: String) -> String { LedgerRules.hmac(key: fingerprintKey, digits) }

    // MARK: Schema

    /// Each version's statements, in order (index 0 is version 1).
    static let migrations: [[String]] = [[
        """
        CREATE TABLE payments (
            seq BIGSERIAL NOT NULL UNIQUE,
            payment_id TEXT PRIMARY KEY NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('sale', 'refund', 'reversal')),
            order_id TEXT NOT NULL,
            parent_id TEXT REFERENCES payments(payment_id),
            amount BIGINT NOT NULL CHECK (amount > 0),
            currency TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('approved', 'declined')),
            status_code TEXT NOT NULL,
            status_message TEXT NOT NULL,
            authorisation_code TEXT,
            unique_ref TEXT NOT NULL UNIQUE,
            brand TEXT NOT NULL,
            last4 TEXT NOT NULL,
            masked_pan TEXT NOT NULL,
            expiry TEXT,
            psn INTEGER,
            emv_hex TEXT NOT NULL,
            cryptogram TEXT NOT NULL CHECK (cryptogram IN ('verified', 'unverified', 'failed')),
            callback_url TEXT,
            account_id TEXT,
            sdk_version TEXT,
            reversed INTEGER NOT NULL DEFAULT 0 CHECK (reversed IN (0, 1)),
            refunded_amount BIGINT NOT NULL DEFAULT 0 CHECK (refunded_amount >= 0 AND refunded_amount <= amount),
            card_fingerprint TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL
        )
        """,
        "CREATE UNIQUE INDEX payments_sale_order ON payments(order_id) WHERE kind = 'sale'",
        "CREATE INDEX payments_order ON payments(order_id)",
        "CREATE INDEX payments_last4 ON payments(last4)",
        "CREATE INDEX payments_parent ON payments(parent_id)",
        """
        CREATE TABLE webhooks (
            id BIGSERIAL PRIMARY KEY,
            payment_id TEXT NOT NULL REFERENCES payments(payment_id),
            order_id TEXT NOT NULL,
            event TEXT NOT NULL,
            url TEXT NOT NULL,
            body TEXT NOT NULL,
            signature TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            delivered_at BIGINT,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            next_attempt_at BIGINT,
            last_attempt_at BIGINT,
            last_status INTEGER,
            lease_owner TEXT,
            lease_until BIGINT,
            gave_up_at BIGINT
        )
        """,
        "CREATE INDEX webhooks_pending ON webhooks(id) WHERE delivered_at IS NULL AND gave_up_at IS NULL",
        "CREATE INDEX webhooks_order ON webhooks(order_id)",
        "CREATE INDEX webhooks_payment ON webhooks(payment_id)",
        """
        CREATE TABLE webhook_attempts (
            id BIGSERIAL PRIMARY KEY,
            webhook_id BIGINT NOT NULL REFERENCES webhooks(id),
            attempt INTEGER NOT NULL,
            started_at BIGINT NOT NULL,
            finished_at BIGINT NOT NULL,
            status INTEGER,
            error TEXT,
            next_attempt_at BIGINT,
            fault TEXT
        )
        """,
        "CREATE INDEX webhook_attempts_webhook ON webhook_attempts(webhook_id)",
        """
        CREATE TABLE accounts (
            account_id TEXT PRIMARY KEY NOT NULL,
            terms_accepted INTEGER NOT NULL DEFAULT 0,
            updated_at BIGINT NOT NULL
        )
        """,
        "CREATE TABLE blocked_sdk_versions (version TEXT PRIMARY KEY NOT NULL)",
        "CREATE TABLE settings (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
    ], [
        // Version 2: as the SQLite ledger's version 3 (Ledger.migrationV3). Additive.
        "ALTER TABLE payments ADD COLUMN captured INTEGER NOT NULL DEFAULT 1 CHECK (captured IN (0, 1))",
        "ALTER TABLE payments ADD COLUMN last_refund_amount BIGINT",
        "ALTER TABLE payments ADD COLUMN last_refund_reason TEXT",
        "ALTER TABLE payments ADD COLUMN cancellation_reason TEXT",
    ], terminalOrdersMigration, requestLogMigration]

    /// Brings the database to ``schemaVersion`` under an advisory lock (one server migrates;
    /// the others wait, then find it done), makes the secrets if none, and reads them.
    static func migrate(_ pool: PostgresPool, url: String) throws(GatewayError) -> [String: [UInt8]] {
        let outcome: Result<[String: [UInt8]], GatewayError>
        do {
            outcome = try pool.withConnection { (c) throws(PostgresError) in
                try c.transaction { () throws(PostgresError) -> Result<[String: [UInt8]], GatewayError> in
                    try c.query("SELECT pg_advisory_xact_lock($1)", [.integer(migrationLock)])
                    try c.query("""
                        CREATE TABLE IF NOT EXISTS tapemu_schema_migrations (
                            version INTEGER PRIMARY KEY NOT NULL, applied_at BIGINT NOT NULL)
                        """)
                    let current = try c.query("SELECT coalesce(max(version), 0) FROM tapemu_schema_migrations")
                        .rows.first?.int(0) ?? 0
                    guard current <= schemaVersion else {
                        return .failure(GatewayError(.unsupportedLedgerVersion,
                                                     "the ledger database has schema version \(current); this tapemu knows up to \(schemaVersion)"))
                    }
                    if current < schemaVersion {
                        for v in (current + 1)...schemaVersion {
                            for statement in migrations[v - 1] { try c.query(statement) }
                            try c.query("INSERT INTO tapemu_schema_migrations (version, applied_at) VALUES ($1, $2)",
                                        [.integer(Int64(v)), .integer(LedgerRules.millis(Date()))])
                        }
                    }
                    var secrets: [String: [UInt8]] = [:]
                    for name in ["webhook_secret", "token_secret", "fingerprint_key", MerchantAPIKey.settingName] {
                        try c.query("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                                    [.text(name), .text(LedgerRules.hex(LedgerRules.randomSecret()))])
                        guard let hex = try c.query("SELECT value FROM settings WHERE key = $1", [.text(name)]).rows.first?[0],
                              let v = LedgerRules.unhex(hex), v.count == 32 else {
                            return .failure(GatewayError(.corruptLedger, "the ledger database's \(name) is damaged"))
                        }
                        secrets[name] = v
                    }
                    return .success(secrets)
                }
            }
        } catch {
            throw GatewayError(.storage, "cannot migrate the ledger database at \(PostgresURL.redacted(url)): \(error)")
        }
        return try outcome.get()
    }

    // MARK: Plumbing

    /// The gateway fault a database error is.
    public static func fault(_ e: PostgresError, writing: Bool) -> GatewayError {
        if e.committedUnknown || (writing && e.code == .connectionLost) {
            return GatewayError(.serverError,
                                "the ledger database went away while the write was committing: it may have been recorded (look it up): \(e.reason)")
        }
        if e.sqlState == "XX001" {
            return GatewayError(.corruptLedger, "the ledger database holds a row this tapemu did not write: \(e.reason)")
        }
        if e.isSerializationFailure {
            return GatewayError(.busy, "the ledger database was busy (\(e.sqlState ?? "")); nothing was recorded, retrying is safe")
        }
        if e.isConnectionFailure {
            return GatewayError(.storage, "the ledger database is unreachable; \(writing ? "nothing was recorded" : "nothing was read"): \(e.reason)")
        }
        return GatewayError(.storage, "the ledger database refused the \(writing ? "write; nothing was recorded" : "read"): \(e)")
    }

    /// A write transaction: `body` decides (a refusal is `.failure`, committed as a no-op: the
    /// refusals come before any write). A serialization failure or deadlock is retried.
    func write<T>(_ body: (PostgresConnection) throws(PostgresError) -> Result<T, GatewayError>) throws(GatewayError) -> T {
        var tries = 0
        while true {
            tries += 1
            do {
                let r = try pool.withConnection { (c) throws(PostgresError) in
                    try c.transaction { () throws(PostgresError) in try body(c) }
                }
                return try r.get()
            } catch let e as PostgresError where e.isSerializationFailure && tries < 5 {
                continue
            } catch let e as PostgresError {
                throw Self.fault(e, writing: true)
            } catch let e as GatewayError {
                throw e
            } catch {
                throw GatewayError(.storage, "\(error)")
            }
        }
    }

    /// A read; one that met a connection the server had dropped (a restart, an idle cut) runs
    /// once more on a new connection: reading twice changes nothing.
    func read<T>(_ body: (PostgresConnection) throws(PostgresError) -> T) throws(GatewayError) -> T {
        do {
            return try pool.withConnection(body)
        } catch where error.code == .connectionLost {
            do {
                return try pool.withConnection(body)
            } catch {
                throw Self.fault(error, writing: false)
            }
        } catch {
            throw Self.fault(error, writing: false)
        }
    }

    // MARK: Rows

    static let columns = """
        payment_id, kind, order_id, parent_id, amount, currency, status, status_code, status_message,
        authorisation_code, unique_ref, brand, last4, masked_pan, expiry, psn, emv_hex, cryptogram,
        callback_url, account_id, sdk_version, reversed, refunded_amount, created_at, updated_at, card_fingerprint,
        captured, last_refund_amount, last_refund_reason, cancellation_reason
        """

    static func payment(_ r: PostgresRow) throws(PostgresError) -> (Payment, fingerprint: String) {
        guard let id = r[0], let kind = r[1].flatMap(TransactionKind.init(rawValue:)), let orderId = r[2],
              let amount = r.int(4), let currency = r[5], let status = r[6].flatMap(AuthorisationStatus.init(rawValue:)),
              let code = r[7], let message = r[8], let uniqueRef = r[10], let brand = r[11], let last4 = r[12],
              let masked = r[13], let emvHex = r[16], let emv = LedgerRules.unhex(emvHex),
              let crypto = r[17].flatMap(CryptogramCheck.init(rawValue:)), let reversed = r.int(21),
              let refunded = r.int(22), let created = r.int64(23), let updated = r.int64(24), let fingerprint = r[25] else {
            throw PostgresError(.server, "a payment row does not have the shape this tapemu wrote", sqlState: "XX001")
        }
        let p = Payment(paymentId: id, kind: kind, orderId: orderId, parentPaymentId: r[3], amount: amount,
                        currency: currency, status: status, statusCode: code, statusMessage: message,
                        authorisationCode: r[9], uniqueRef: uniqueRef, cardBrand: CardBrand(rawValue: brand),
                        last4: last4, maskedPAN: masked, expiry: r[14],
                        panSequenceNumber: r.int(15).flatMap { UInt8(exactly: $0) }, emvData: emv,
                        cryptogram: crypto, callbackUrl: r[18], accountId: r[19], sdkVersion: r[20],
                        reversed: reversed != 0, refundedAmount: refunded,
                        createdAt: LedgerRules.date(created), updatedAt: LedgerRules.date(updated))
        var q = p
        q.captured = r.int(26) != 0
        q.lastRefundAmount = r.int(27)
        q.lastRefundReason = r[28]
        q.cancellationReason = r[29]
        return (q, fingerprint)
    }

    static func insert(_ p: Payment, fingerprint: String, onConflictOrder: Bool, _ c: PostgresConnection) throws(PostgresError) -> Bool {
        let placeholders = (1...30).map { "$\($0)" }.joined(separator: ",")
        let conflict = onConflictOrder ? " ON CONFLICT (order_id) WHERE kind = 'sale' DO NOTHING" : ""
        let r = try c.query("INSERT INTO payments (\(columns)) VALUES (\(placeholders))\(conflict)", [
            .text(p.paymentId), .text(p.kind.rawValue), .text(p.orderId), PostgresValue(p.parentPaymentId),
            .integer(Int64(p.amount)), .text(p.currency), .text(p.status.rawValue), .text(p.statusCode),
            .text(p.statusMessage), PostgresValue(p.authorisationCode), .text(p.uniqueRef), .text(p.cardBrand.rawValue),
            .text(p.last4), .text(p.maskedPAN), PostgresValue(p.expiry), PostgresValue(p.panSequenceNumber.map { Int($0) }),
            .text(LedgerRules.hex(p.emvData)), .text(p.cryptogram.rawValue), PostgresValue(p.callbackUrl),
            PostgresValue(p.accountId), PostgresValue(p.sdkVersion), .integer(p.reversed ? 1 : 0),
            .integer(Int64(p.refundedAmount)), .integer(LedgerRules.millis(p.createdAt)),
            .integer(LedgerRules.millis(p.updatedAt)), .text(fingerprint),
            .integer(p.captured ? 1 : 0), PostgresValue(p.lastRefundAmount), PostgresValue(p.lastRefundReason),
            PostgresValue(p.cancellationReason),
        ])
        return r.affectedRows == 1
    }

    func select(_ whereClause: String, _ parameters: [PostgresValue]) throws(GatewayError) -> [Payment] {
        try read { (c) throws(PostgresError) in
            try c.query("SELECT \(Self.columns) FROM payments \(whereClause)", parameters).rows
                .map { (r) throws(PostgresError) in try Self.payment(r).0 }
        }
    }

    /// Writes the webhook of `sale`'s new state to the outbox (in the caller's transaction).
    func enqueueWebhook(for sale: Payment, event: WebhookEvent, at now: Date, _ c: PostgresConnection) throws(PostgresError) {
        guard let url = sale.callbackUrl else { return }
        let (body, signature) = LedgerRules.webhookMessage(for: sale, event: event, at: now, secret: webhookSecret)
        try c.query("""
            INSERT INTO webhooks (payment_id, order_id, event, url, body, signature, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """, [.text(sale.paymentId), .text(sale.orderId), .text(event.rawValue), .text(url), .text(body),
                  .text(signature), .integer(LedgerRules.millis(now))])
    }

    // MARK: Writes

    public func storeSale(_ sale: Payment, fingerprint: String) throws(GatewayError) -> (Payment, isReplay: Bool) {
        try write { (c) throws(PostgresError) -> Result<(Payment, isReplay: Bool), GatewayError> in
            try self.writeSale(sale, fingerprint: fingerprint, c).map { ($0.payment, $0.isReplay) }
        }
    }

    /// The work of ``storeSale(_:fingerprint:)`` inside an open transaction; a refusal is
    /// `.failure` (and wrote nothing).
    private func writeSale(_ sale: Payment, fingerprint: String,
                           _ c: PostgresConnection) throws(PostgresError) -> Result<SaleOutcome, GatewayError> {
        if try Self.insert(sale, fingerprint: fingerprint, onConflictOrder: true, c) {
            try enqueueWebhook(for: sale, event: WebhookEvent.ofNewSale(sale), at: sale.createdAt, c)
            return .success(SaleOutcome(payment: sale, isReplay: false))
        }
        // Another request (maybe another server, maybe earlier in this batch) holds this order:
        // read its sale (committed, or this transaction's own).
        guard let row = try c.query("SELECT \(Self.columns) FROM payments WHERE kind = 'sale' AND order_id = $1",
                                    [.text(sale.orderId)]).rows.first else {
            return .failure(GatewayError(.busy, "order \(sale.orderId) changed during the authorisation; nothing was charged"))
        }
        let (existing, storedFingerprint) = try Self.payment(row)
        do throws(GatewayError) {
            try LedgerRules.checkReplay(stored: existing, storedFingerprint: storedFingerprint, sale: sale,
                                        fingerprint: fingerprint)
        } catch {
            return .failure(error)
        }
        return .success(SaleOutcome(payment: existing, isReplay: true))
    }

    /// Group commit on PostgreSQL: the batch in ONE transaction (one COMMIT, one WAL flush),
    /// each sale in its own savepoint and decided as ``storeSale(_:fingerprint:)`` would in this
    /// order. A statement the server refused (a constraint, a row of the wrong shape) rolls
    /// back to its sale's savepoint: that sale fails alone. A connection failure, a
    /// serialization failure or deadlock (the whole batch is retried, as ``write(_:)`` does),
    /// or a COMMIT that broke fails every sale of the batch with the same error — `serverError`
    /// when the COMMIT may have happened. The unique index on sales' orderIds keeps one payment
    /// per order across servers whatever their batches hold.
    public func storeSales(_ sales: [(sale: Payment, fingerprint: String, claim: TerminalClaim?)],
                           beforeCommit: (@Sendable ([String]) -> Void)?) -> [Result<SaleOutcome, GatewayError>] {
        let batched = sales.count > 1
        do throws(GatewayError) {
            return try write { (c) throws(PostgresError) -> Result<[Result<SaleOutcome, GatewayError>], GatewayError> in
                var results = [Result<SaleOutcome, GatewayError>?](repeating: nil, count: sales.count)
                // In orderId order (stable: one order's requests keep their arrival order), so that
                // every server's batches take the order-id index entries in one global order and
                // two batches never wait on each other in a cycle (a deadlock would fail both).
                let writeOrder = sales.indices.sorted {
                    (sales[$0].sale.orderId, $0) < (sales[$1].sale.orderId, $1)
                }
                for index in writeOrder {
                    let (sale, fingerprint, claim) = sales[index]
                    guard batched || claim != nil else {
                        results[index] = try self.writeSale(sale, fingerprint: fingerprint, c)
                        continue
                    }
                    // A terminal's claim and its sale share the savepoint: a refused claim, or a
                    // sale that fails, writes neither (the claim is taken back with the sale).
                    try c.query("SAVEPOINT sale")
                    do throws(PostgresError) {
                        var result: Result<SaleOutcome, GatewayError>
                        if let claim, let refusal = try Self.claim(sale.orderId, by: claim.terminal, tokenId: claim.tokenId,
                                                                   at: sale.createdAt, c).refusal(of: sale.orderId) {
                            result = .failure(refusal)
                        } else {
                            result = try self.writeSale(sale, fingerprint: fingerprint, c)
                        }
                        if case .failure = result, claim != nil { try c.query("ROLLBACK TO SAVEPOINT sale") }
                        results[index] = result
                        try c.query("RELEASE SAVEPOINT sale")
                    } catch where error.code == .server && !error.isSerializationFailure {
                        try c.query("ROLLBACK TO SAVEPOINT sale")
                        try c.query("RELEASE SAVEPOINT sale")
                        results[index] = .failure(Self.fault(error, writing: true))
                    }
                }
                beforeCommit?(sales.map(\.sale.orderId))
                return .success(results.map { $0! })
            }
        } catch {
            return Array(repeating: .failure(error), count: sales.count)
        }
    }

    /// The sale with `uniqueRef`, locked for this transaction.
    private static func lockedSale(_ uniqueRef: String, _ c: PostgresConnection) throws(PostgresError) -> (Payment, String)? {
        guard let row = try c.query("SELECT \(columns) FROM payments WHERE unique_ref = $1 FOR UPDATE",
                                    [.text(uniqueRef)]).rows.first else { return nil }
        return try payment(row)
    }

    public func storeReversal(uniqueRef: String, at now: Date) throws(GatewayError) -> (sale: Payment, reversal: Payment) {
        try write { (c) throws(PostgresError) -> Result<(sale: Payment, reversal: Payment), GatewayError> in
            guard let (found, fingerprint) = try Self.lockedSale(uniqueRef, c) else {
                return .failure(GatewayError(.notFound, "no transaction has uniqueRef \(uniqueRef)"))
            }
            var sale = found
            do throws(GatewayError) { try LedgerRules.checkReversible(sale, uniqueRef: uniqueRef) } catch { return .failure(error) }
            try c.query("UPDATE payments SET reversed = 1, updated_at = $1 WHERE payment_id = $2",
                        [.integer(LedgerRules.millis(now)), .text(sale.paymentId)])
            sale.reversed = true
            sale.updatedAt = now
            let reversal = LedgerRules.child(of: sale, kind: .reversal, amount: sale.amount, message: "Reversed", at: now)
            _ = try Self.insert(reversal, fingerprint: fingerprint, onConflictOrder: false, c)
            try self.enqueueWebhook(for: sale, event: .reversed, at: now, c)
            return .success((sale, reversal))
        }
    }

    public func storeRefund(uniqueRef: String, amount: Int?, reason: String?,
                            at now: Date) throws(GatewayError) -> (sale: Payment, refund: Payment) {
        try write { (c) throws(PostgresError) -> Result<(sale: Payment, refund: Payment), GatewayError> in
            guard let (found, fingerprint) = try Self.lockedSale(uniqueRef, c) else {
                return .failure(GatewayError(.notFound, "no transaction has uniqueRef \(uniqueRef)"))
            }
            var sale = found
            let value: Int
            do throws(GatewayError) { value = try LedgerRules.refundValue(sale, uniqueRef: uniqueRef, amount: amount) } catch { return .failure(error) }
            try c.query("""
                UPDATE payments SET refunded_amount = refunded_amount + $1, last_refund_amount = $1,
                    last_refund_reason = $2, updated_at = $3 WHERE payment_id = $4
                """, [.integer(Int64(value)), PostgresValue(reason), .integer(LedgerRules.millis(now)), .text(sale.paymentId)])
            sale.refundedAmount += value
            sale.lastRefundAmount = value
            sale.lastRefundReason = reason
            sale.updatedAt = now
            let refund = LedgerRules.child(of: sale, kind: .refund, amount: value, message: "Refunded", at: now)
            _ = try Self.insert(refund, fingerprint: fingerprint, onConflictOrder: false, c)
            try self.enqueueWebhook(for: sale, event: sale.remainingAmount == 0 ? .refunded : .partiallyRefunded,
                                    at: now, c)
            return .success((sale, refund))
        }
    }

    public func storeCancel(uniqueRef: String, reason: String?,
                            at now: Date) throws(GatewayError) -> (sale: Payment, reversal: Payment) {
        try write { (c) throws(PostgresError) -> Result<(sale: Payment, reversal: Payment), GatewayError> in
            guard let (found, fingerprint) = try Self.lockedSale(uniqueRef, c) else {
                return .failure(GatewayError(.notFound, "no transaction has uniqueRef \(uniqueRef)"))
            }
            var sale = found
            do throws(GatewayError) { try LedgerRules.checkCancelable(sale, id: sale.paymentId) } catch { return .failure(error) }
            try c.query("UPDATE payments SET reversed = 1, cancellation_reason = $1, updated_at = $2 WHERE payment_id = $3",
                        [PostgresValue(reason), .integer(LedgerRules.millis(now)), .text(sale.paymentId)])
            sale.reversed = true
            sale.cancellationReason = reason
            sale.updatedAt = now
            let reversal = LedgerRules.child(of: sale, kind: .reversal, amount: sale.amount, message: "Canceled", at: now)
            _ = try Self.insert(reversal, fingerprint: fingerprint, onConflictOrder: false, c)
            try self.enqueueWebhook(for: sale, event: .canceled, at: now, c)
            return .success((sale, reversal))
        }
    }

    public func storeCapture(uniqueRef: String, amount: Int?, at now: Date) throws(GatewayError) -> Payment {
        try write { (c) throws(PostgresError) -> Result<Payment, GatewayError> in
            guard let (found, _) = try Self.lockedSale(uniqueRef, c) else {
                return .failure(GatewayError(.notFound, "no transaction has uniqueRef \(uniqueRef)"))
            }
            var sale = found
            do throws(GatewayError) { try LedgerRules.checkCapturable(sale, id: sale.paymentId, amount: amount) } catch { return .failure(error) }
            try c.query("UPDATE payments SET captured = 1, updated_at = $1 WHERE payment_id = $2",
                        [.integer(LedgerRules.millis(now)), .text(sale.paymentId)])
            sale.captured = true
            sale.updatedAt = now
            try self.enqueueWebhook(for: sale, event: .captured, at: now, c)
            return .success(sale)
        }
    }

    // MARK: Reads

    public func payment(paymentId: String) throws(GatewayError) -> Payment? {
        try select("WHERE payment_id = $1", [.text(paymentId)]).first
    }

    public func payment(uniqueRef: String) throws(GatewayError) -> Payment? {
        try select("WHERE unique_ref = $1", [.text(uniqueRef)]).first
    }

    public func sales(orderId: String) throws(GatewayError) -> [Payment] {
        try select("WHERE kind = 'sale' AND order_id = $1 ORDER BY created_at, seq", [.text(orderId)])
    }

    public func allPayments() throws(GatewayError) -> [Payment] { try select("ORDER BY created_at, seq", []) }

    public func saleCount(orderId: String) throws(GatewayError) -> Int {
        try read { (c) throws(PostgresError) in
            try c.query("SELECT count(*) FROM payments WHERE kind = 'sale' AND order_id = $1", [.text(orderId)])
                .rows.first?.int(0) ?? 0
        }
    }

    public func transactions(_ filter: TransactionFilter) throws(GatewayError) -> [Payment] {
        var clauses = ["kind IN ('sale', 'refund')"]
        var parameters: [PostgresValue] = []
        if let o = filter.orderId { parameters.append(.text(o)); clauses.append("order_id = $\(parameters.count)") }
        if let l = filter.panLastFour { parameters.append(.text(l)); clauses.append("last4 = $\(parameters.count)") }
        return try select("WHERE " + clauses.joined(separator: " AND ")
                          + " ORDER BY (kind = 'sale') DESC, created_at DESC, seq DESC", parameters)
    }

    public func payments(orderId: String) throws(GatewayError) -> [Payment] {
        try select("WHERE order_id = $1 ORDER BY created_at, seq", [.text(orderId)])
    }

    public func children(ofPaymentId paymentId: String) throws(GatewayError) -> [Payment] {
        try select("WHERE parent_id = $1 ORDER BY created_at, seq", [.text(paymentId)])
    }

    public func recentSales(limit: Int) throws(GatewayError) -> [Payment] {
        try select("WHERE kind = 'sale' ORDER BY created_at DESC, seq DESC LIMIT $1", [.integer(Int64(max(0, limit)))])
    }

    // MARK: Accounts, SDK versions, secrets

    public func termsAccepted(accountId: String) throws(GatewayError) -> Bool {
        try read { (c) throws(PostgresError) in
            try c.query("SELECT terms_accepted FROM accounts WHERE account_id = $1", [.text(accountId)]).rows.first?.int(0) == 1
        }
    }

    public func setTermsAccepted(_ accepted: Bool, accountId: String, at date: Date) throws(GatewayError) {
        try write { (c) throws(PostgresError) -> Result<Void, GatewayError> in
            try c.query("""
                INSERT INTO accounts (account_id, terms_accepted, updated_at) VALUES ($1, $2, $3)
                ON CONFLICT (account_id) DO UPDATE SET terms_accepted = excluded.terms_accepted, updated_at = excluded.updated_at
                """, [.text(accountId), .integer(accepted ? 1 : 0), .integer(LedgerRules.millis(date))])
            return .success(())
        }
    }

    public func blockedSDKVersions() throws(GatewayError) -> Set<String> {
        try read { (c) throws(PostgresError) in
            Set(try c.query("SELECT version FROM blocked_sdk_versions").rows.compactMap { $0[0] })
        }
    }

    public func blockSDKVersion(_ version: String) throws(GatewayError) {
        try write { (c) throws(PostgresError) -> Result<Void, GatewayError> in
            try c.query("INSERT INTO blocked_sdk_versions (version) VALUES ($1) ON CONFLICT DO NOTHING", [.text(version)])
            return .success(())
        }
    }

    public func unblockSDKVersion(_ version: String) throws(GatewayError) {
        try write { (c) throws(PostgresError) -> Result<Void, GatewayError> in
            try c.query("DELETE FROM blocked_sdk_versions WHERE version = $1", [.text(version)])
            return .success(())
        }
    }

    public func secret(named name: String) throws(GatewayError) -> [UInt8] {
        guard !LedgerRules.reservedSettings.contains(name) else {
            throw GatewayError(.invalidRequest, "\(name) is one of the ledger's own settings")
        }
        return try write { (c) throws(PostgresError) -> Result<[UInt8], GatewayError> in
            try c.query("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                        [.text(name), .text(LedgerRules.hex(LedgerRules.randomSecret()))])
            guard let hex = try c.query("SELECT value FROM settings WHERE key = $1", [.text(name)]).rows.first?[0],
                  let v = LedgerRules.unhex(hex), v.count == 32 else {
                return .failure(GatewayError(.corruptLedger, "the ledger database's \(name) is damaged"))
            }
            return .success(v)
        }
    }
}
