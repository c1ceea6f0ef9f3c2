public import Foundation
import Synchronization
public import Storage
import Cryptography
import PaymentRules

/// The gateway's ledger: one SQLite file (`gateway.sqlite3`) in a data directory.
///
/// - Write-ahead logging and `synchronous=FULL`: a call that returned has its write on disk;
///   a crash loses nothing that was answered. A write that throws recorded nothing.
/// - One connection for writes, guarded by a mutex; every read-check-write runs in one
///   immediate transaction, so two processes sharing the directory never double-charge an
///   orderId. The reads a request makes before it writes (``withReader(_:)``) go through
///   read-only connections of their own (WAL readers): they see the last commit and never wait
///   for a write transaction in progress — a group commit holds the writer through its fsync.
/// - Schema versioned with `PRAGMA user_version` (``schemaVersion``); a newer file throws
///   ``GatewayError/Code/unsupportedLedgerVersion``, a damaged one
///   ``GatewayError/Code/corruptLedger``.
/// - It holds no full PAN: first 6 + last 4, a keyed fingerprint for idempotency checks, and
///   the EMV data without the objects that carry the PAN or track data.
///
/// The ledger also keeps the gateway's secrets (webhook signing, token signing, card
/// fingerprints), made at random when the file is created, so separate runs on one data
/// directory agree. The directory is created with mode 0700 and the file set to 0600.
public final class Ledger: Sendable {
    /// The file name inside the data directory.
    public static let fileName = "gateway.sqlite3"
    /// The schema version this code writes (2: webhook delivery state, ``migrationV2``; 3:
    /// MONEI's AUTHORIZED state and the refund and cancellation reasons, ``migrationV3``; 4:
    /// which terminal sent each order, ``migrationV4``; 5: the request log, ``migrationV5``).
    public static let schemaVersion = 5

    /// The database file.
    public let path: String
    /// The key that signs webhooks (`MONEI-Signature`): the merchant API key's UTF-8 bytes
    /// (``LedgerStore/webhookSecret``); receivers verify with the API key.
    public let webhookSecret: [UInt8]
    /// The merchant API key (``MerchantAPIKey``); empty only on an unmigrated ledger opened
    /// read only that never had one.
    public let merchantAPIKey: String
    /// The secret that signed webhooks before schema version 3.
    public let legacyWebhookSecret: [UInt8]
    let tokenSecret: [UInt8]
    private let fingerprintKey: [UInt8]
    private let connection: Mutex<SQLiteConnection>
    /// The readers (``withReader(_:)``), each opened when first used; none on a ledger opened
    /// read only, whose one connection only reads.
    private let readers: [ReaderSlot]
    private let nextReader = Atomic<UInt>(0)
    private let busyTimeout: Duration
    /// How many read-only connections a writable ledger opens at most: the gateway service's
    /// ledger threads (four), each reading while a commit holds the writer.
    static let readerCount = 4

    /// One reader connection, opened at its first read.
    private final class ReaderSlot: Sendable {
        let connection = Mutex<SQLiteConnection?>(nil)
    }

    /// `PRAGMA application_id` of a ledger ("TPML").
    static let applicationId = 0x5450_4D4C

    /// Opens the ledger in `directory` (``DataDirectoryLayout``): `.create` makes the directory
    /// and the ledger when they are not there; `.existing` needs both; `.readOnly` writes
    /// nothing. A ledger the directory held that is missing, empty or another directory's is
    /// ``GatewayError/Code/storeMissing``, never a new one. Checks the schema and the file
    /// (a quick check when read only, a full integrity check otherwise).
    public init(directory: String, busyTimeout: Duration = .seconds(5),
                access: DataDirectoryLayout.Access = .create) throws(GatewayError) {
        let layout = DataDirectoryLayout(path: directory)
        let path = layout.file(Self.fileName)
        guard let conn = try layout.open(Self.layoutStore, access: access, busyTimeout: busyTimeout) else {
            throw GatewayError(.noDataDirectory, "no ledger in \(directory): no payment was ever made with this --data-dir")
        }
        try Self.checkShape(conn, path: path)
        try Self.migrate(conn, path: path, writable: access != .readOnly)
        try conn.checkIntegrity(full: access != .readOnly)
        var secrets: [String: [UInt8]] = [:]
        for name in ["webhook_secret", "token_secret", "fingerprint_key"] {
            guard let v = try conn.query("SELECT value FROM settings WHERE key = ?", [.text(name)]).first?[0].bytes,
                  v.count == 32 else {
                throw GatewayError(.corruptLedger, "\(path) is damaged: its \(name) is gone (tapemu never makes new secrets for a ledger that had them)")
            }
            secrets[name] = v
        }
        if access != .readOnly { conn.holdReserve(at: path + Self.reserveSuffix, bytes: Self.reserveBytes) }
        self.path = path
        legacyWebhookSecret = secrets["webhook_secret"]!
        // Made by migration 3 (or by a service on a version-2 ledger); never made read only.
        let keyRow = try conn.query("SELECT value FROM settings WHERE key = ?", [.text(MerchantAPIKey.settingName)])
        if let key = keyRow.first?[0].bytes, key.count == 32 {
            merchantAPIKey = MerchantAPIKey.text(key)
            webhookSecret = Array(merchantAPIKey.utf8)
        } else if access == .readOnly {
            merchantAPIKey = ""
            webhookSecret = legacyWebhookSecret
        } else {
            throw GatewayError(.corruptLedger, "\(path) is damaged: its \(MerchantAPIKey.settingName) is gone (tapemu never makes a new API key for a ledger that had one)")
        }
        tokenSecret = secrets["token_secret"]!
        fingerprintKey = secrets["fingerprint_key"]!
        connection = Mutex(conn)
        self.busyTimeout = busyTimeout
        readers = access == .readOnly ? [] : (0..<Self.readerCount).map { _ in ReaderSlot() }
    }

    /// The reserve beside the ledger (`gateway.sqlite3-reserve`): given back when a write meets
    /// a full disk so the WAL can always be checkpointed (``SQLiteConnection/holdReserve(at:bytes:)``).
    public static let reserveSuffix = "-reserve"
    public static let reserveBytes = 512 * 1024

    static let layoutStore = DataDirectoryLayout.Store(
        fileName: fileName, applicationId: applicationId, holds: "the gateway's payments, webhooks and secrets",
        create: { conn, id throws(GatewayError) in
            try conn.execute(schemaV1)
            for step in steps { try conn.execute(step.sql) }
            try makeMerchantAPIKey(conn)
            try conn.execute("PRAGMA user_version = \(schemaVersion)")
            for name in ["webhook_secret", "token_secret", "fingerprint_key"] {
                try conn.run("INSERT INTO settings (key, value) VALUES (?, ?)", [.text(name), .blob(Crypto.randomBytes(32))])
            }
            try conn.run("INSERT INTO settings (key, value) VALUES ('data_directory_id', ?)", [.blob(Array(id.utf8))])
        },
        readId: { conn throws(GatewayError) in
            guard try conn.tableNames().contains("settings") else { return nil }
            return try conn.query("SELECT value FROM settings WHERE key = 'data_directory_id'").first?[0].bytes
                .map { String(decoding: $0, as: UTF8.self) }
        },
        recognises: { $0.isSuperset(of: ["payments", "settings"]) },
        stamp: { conn, id throws(GatewayError) in
            try conn.run("INSERT OR REPLACE INTO settings (key, value) VALUES ('data_directory_id', ?)", [.blob(Array(id.utf8))])
            try conn.execute("PRAGMA application_id = \(applicationId)")
        })

    /// The tables a ledger has; one gone (dropped, or lost with a damaged page) is damage.
    private static func checkShape(_ conn: SQLiteConnection, path: String) throws(GatewayError) {
        let version = try conn.userVersion
        if version > schemaVersion {
            throw GatewayError(.unsupportedLedgerVersion,
                               "\(path) has schema version \(version); this tapemu knows up to \(schemaVersion)")
        }
        guard version > 0 else {
            throw GatewayError(.storeMissing, "\(path) holds no tapemu ledger (no schema version): move it aside")
        }
        let expected: Set<String> = ["payments", "webhooks", "accounts", "blocked_sdk_versions", "settings"]
        let missing = expected.subtracting(try conn.tableNames())
        guard missing.isEmpty else {
            throw GatewayError(.corruptLedger, "\(path) is damaged: its \(missing.sorted().joined(separator: ", ")) table\(missing.count == 1 ? " is" : "s are") gone")
        }
    }

    // MARK: Schema

    private static let schemaV1 = """
        CREATE TABLE payments (
            payment_id TEXT PRIMARY KEY NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('sale', 'refund', 'reversal')),
            order_id TEXT NOT NULL,
            parent_id TEXT REFERENCES payments(payment_id),
            amount INTEGER NOT NULL CHECK (amount > 0),
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
            refunded_amount INTEGER NOT NULL DEFAULT 0 CHECK (refunded_amount >= 0),
            card_fingerprint TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE UNIQUE INDEX payments_sale_order ON payments(order_id) WHERE kind = 'sale';
        CREATE INDEX payments_order ON payments(order_id);
        CREATE INDEX payments_last4 ON payments(last4);
        CREATE TABLE webhooks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            payment_id TEXT NOT NULL REFERENCES payments(payment_id),
            order_id TEXT NOT NULL,
            event TEXT NOT NULL,
            url TEXT NOT NULL,
            body TEXT NOT NULL,
            signature TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            delivered_at INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT
        );
        CREATE INDEX webhooks_pending ON webhooks(delivered_at);
        CREATE TABLE accounts (
            account_id TEXT PRIMARY KEY NOT NULL,
            terms_accepted INTEGER NOT NULL DEFAULT 0,
            updated_at INTEGER NOT NULL
        );
        CREATE TABLE blocked_sdk_versions (version TEXT PRIMARY KEY NOT NULL);
        CREATE TABLE settings (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL);
        """


    // MARK: Rows

    private static let columns = """
        payment_id, kind, order_id, parent_id, amount, currency, status, status_code, status_message,
        authorisation_code, unique_ref, brand, last4, masked_pan, expiry, psn, emv_hex, cryptogram,
        callback_url, account_id, sdk_version, reversed, refunded_amount, created_at, updated_at, card_fingerprint,
        captured, last_refund_amount, last_refund_reason, cancellation_reason
        """
    /// ``columns`` of a ledger before version 3 (read only, unmigrated): its columns read as
    /// their defaults.
    private static let columnsV2 = columns.replacingOccurrences(
        of: "captured, last_refund_amount, last_refund_reason, cancellation_reason",
        with: "1, NULL, NULL, NULL")

    private static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(ms) / 1000) }
    static func millis(_ d: Date) -> Int64 { Int64((d.timeIntervalSince1970 * 1000).rounded(.down)) }

    private static func payment(_ r: SQLRow) throws(GatewayError) -> (Payment, fingerprint: String) {
        guard let id = r[0].string, let kind = r[1].string.flatMap(TransactionKind.init(rawValue:)),
              let orderId = r[2].string, let amount = r[4].int, let currency = r[5].string,
              let status = r[6].string.flatMap(AuthorisationStatus.init(rawValue:)),
              let code = r[7].string, let message = r[8].string, let uniqueRef = r[10].string,
              let brand = r[11].string, let last4 = r[12].string, let masked = r[13].string,
              let emvHex = r[16].string, let emv = Encoding.unhex(emvHex),
              let crypto = r[17].string.flatMap(CryptogramCheck.init(rawValue:)),
              let reversed = r[21].int, let refunded = r[22].int,
              let created = r[23].int64, let updated = r[24].int64, let fingerprint = r[25].string else {
            throw GatewayError(.corruptLedger, "a payment row does not have the shape this tapemu wrote")
        }
        let p = Payment(paymentId: id, kind: kind, orderId: orderId, parentPaymentId: r[3].string, amount: amount,
                        currency: currency, status: status, statusCode: code, statusMessage: message,
                        authorisationCode: r[9].string, uniqueRef: uniqueRef, cardBrand: CardBrand(rawValue: brand),
                        last4: last4, maskedPAN: masked, expiry: r[14].string,
                        panSequenceNumber: r[15].int.flatMap { UInt8(exactly: $0) }, emvData: emv,
                        cryptogram: crypto, callbackUrl: r[18].string, accountId: r[19].string,
                        sdkVersion: r[20].string, reversed: reversed != 0, refundedAmount: refunded,
                        createdAt: date(created), updatedAt: date(updated), captured: r[26].int != 0,
                        lastRefundReason: r[28].string, lastRefundAmount: r[27].int,
                        cancellationReason: r[29].string)
        return (p, fingerprint)
    }

    private static func insert(_ p: Payment, fingerprint: String, _ conn: SQLiteConnection) throws(GatewayError) {
        try conn.run("INSERT INTO payments (\(columns)) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", [
            .text(p.paymentId), .text(p.kind.rawValue), .text(p.orderId), SQLValue(p.parentPaymentId),
            SQLValue(p.amount), .text(p.currency), .text(p.status.rawValue), .text(p.statusCode),
            .text(p.statusMessage), SQLValue(p.authorisationCode), .text(p.uniqueRef), .text(p.cardBrand.rawValue),
            .text(p.last4), .text(p.maskedPAN), SQLValue(p.expiry), SQLValue(p.panSequenceNumber.map { Int64($0) }),
            .text(Encoding.hex(p.emvData)), .text(p.cryptogram.rawValue), SQLValue(p.callbackUrl),
            SQLValue(p.accountId), SQLValue(p.sdkVersion), SQLValue(p.reversed), SQLValue(p.refundedAmount),
            .integer(millis(p.createdAt)), .integer(millis(p.updatedAt)), .text(fingerprint),
            SQLValue(p.captured), SQLValue(p.lastRefundAmount.map { Int64($0) }), SQLValue(p.lastRefundReason), SQLValue(p.cancellationReason),
        ])
    }

    static func select(_ conn: SQLiteConnection, _ whereClause: String,
                               _ bindings: [SQLValue]) throws(GatewayError) -> [Payment] {
        let list = try conn.userVersion >= 3 ? columns : columnsV2
        return try conn.query("SELECT \(list) FROM payments \(whereClause)", bindings).map { (r) throws(GatewayError) in
            try payment(r).0
        }
    }

    func withConnection<T: Sendable>(_ body: (SQLiteConnection) throws(GatewayError) -> T) throws(GatewayError) -> T {
        try connection.withLock { (conn: inout SQLiteConnection) throws(GatewayError) -> T in try body(conn) }
    }

    /// Runs `body`, which only reads, on a reader: a read-only connection (WAL) that sees every
    /// commit finished before each of its statements starts and none in progress, and never
    /// waits for the writer (``withConnection(_:)``), which a group commit holds through its
    /// fsync. A free reader if there is one, else the next in turn. On a ledger opened read
    /// only: its one connection. A check made here is an early answer only: what must hold when
    /// money moves is checked again inside the write transaction (the terminal's claim in its
    /// sale's savepoint, ``recordSales(_:beforeCommit:)``).
    func withReader<T: Sendable>(_ body: (SQLiteConnection) throws(GatewayError) -> T) throws(GatewayError) -> T {
        guard !readers.isEmpty else { return try withConnection(body) }
        let first = Int(nextReader.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(readers.count))
        for k in 0..<readers.count {
            let slot = readers[(first + k) % readers.count]
            if let r = try slot.connection.withLockIfAvailable({ (c: inout SQLiteConnection?) throws(GatewayError) -> T in
                try body(try openReader(&c))
            }) {
                return r
            }
        }
        return try readers[first].connection.withLock { (c: inout SQLiteConnection?) throws(GatewayError) -> T in
            try body(try openReader(&c))
        }
    }

    private func openReader(_ c: inout SQLiteConnection?) throws(GatewayError) -> SQLiteConnection {
        if let c { return c }
        let opened = try SQLiteConnection(path: path, busyTimeout: busyTimeout, mode: .reader)
        c = opened
        return opened
    }

    // MARK: Writes (the gateway's decisions)

    /// A keyed fingerprint of a PAN (hex HMAC-SHA256 under the ledger's key): compares cards
    /// across requests without storing the PAN.
    func fingerprint(of digits: String) -> String {
        Encoding.hex(Crypto.hmacSHA256(key: fingerprintKey, message: Array(digits.utf8)))
    }

    /// Records a new sale, or returns the stored sale for its orderId (`isReplay`) when amount,
    /// currency and card match; a mismatch throws `orderConflict`. Atomic with its webhook.
    func recordSale(_ sale: Payment, fingerprint: String) throws(GatewayError) -> (Payment, isReplay: Bool) {
        try withConnection { (conn) throws(GatewayError) in
            try conn.transaction { () throws(GatewayError) -> (Payment, isReplay: Bool) in
                let o = try writeSale(sale, fingerprint: fingerprint, conn)
                return (o.payment, o.isReplay)
            }
        }
    }

    /// The work of ``recordSale(_:fingerprint:)`` for one sale inside an open transaction.
    private func writeSale(_ sale: Payment, fingerprint: String,
                           _ conn: SQLiteConnection) throws(GatewayError) -> SaleOutcome {
        if let row = try conn.query("SELECT \(Self.columns) FROM payments WHERE kind = 'sale' AND order_id = ?",
                                    [.text(sale.orderId)]).first {
            let (existing, storedFingerprint) = try Self.payment(row)
            try LedgerRules.checkReplay(stored: existing, storedFingerprint: storedFingerprint, sale: sale,
                                        fingerprint: fingerprint)
            return SaleOutcome(payment: existing, isReplay: true)
        }
        try Self.insert(sale, fingerprint: fingerprint, conn)
        try enqueueWebhook(for: sale, event: WebhookEvent.ofNewSale(sale), at: sale.createdAt, conn)
        return SaleOutcome(payment: sale, isReplay: false)
    }

    /// Records `sales` in ONE immediate transaction and one durable commit (group commit),
    /// each exactly as ``recordSale(_:fingerprint:)`` would one after another in this order:
    /// a later sale of an orderId met earlier in the batch is a replay or an `orderConflict`.
    /// Each sale runs inside its own savepoint, so one that throws writes nothing and the
    /// others go on. Returns one result per sale, in order, only after the commit; when the
    /// transaction cannot be opened, committed, or a statement's failure ended it, every sale
    /// gets that error and nothing of the batch was written. `beforeCommit` is called with the
    /// batch's orderIds after every sale of it was written, before COMMIT. (SQLite's
    /// ``LedgerStore/storeSales(_:beforeCommit:)``, which ``SaleGroupCommit`` calls.)
    func recordSales(_ sales: [(sale: Payment, fingerprint: String, claim: TerminalClaim?)],
                     beforeCommit: (@Sendable ([String]) -> Void)? = nil) -> [Result<SaleOutcome, GatewayError>] {
        let hook = batchHooks.withLock { $0 }
        do throws(GatewayError) {
            return try withConnection { (conn) throws(GatewayError) -> [Result<SaleOutcome, GatewayError>] in
                try conn.transaction { () throws(GatewayError) -> [Result<SaleOutcome, GatewayError>] in
                    var results: [Result<SaleOutcome, GatewayError>] = []
                    results.reserveCapacity(sales.count)
                    for (sale, fingerprint, claim) in sales {
                        if sales.count > 1 { try conn.run("SAVEPOINT sale") }
                        do throws(GatewayError) {
                            // A terminal's claim and its sale: one savepoint (alone: the one
                            // transaction), so a refused claim or a failed sale writes neither.
                            if let claim {
                                let found = try Self.claim(sale.orderId, by: claim.terminal, tokenId: claim.tokenId,
                                                           at: sale.createdAt, conn)
                                if let refusal = found.refusal(of: sale.orderId) { throw refusal }
                            }
                            results.append(.success(try writeSale(sale, fingerprint: fingerprint, conn)))
                            if sales.count > 1 { try conn.run("RELEASE sale") }
                        } catch {
                            // A statement's failure may have ended the transaction (a full
                            // disk, an I/O error): then the whole batch fails with it.
                            guard sales.count > 1, conn.inTransaction else { throw error }
                            try conn.run("ROLLBACK TO sale")
                            try conn.run("RELEASE sale")
                            results.append(.failure(error))
                        }
                    }
                    if let beforeCommit { beforeCommit(sales.map(\.sale.orderId)) }
                    if hook.failCommits > 0 {
                        batchHooks.withLock { $0.failCommits -= 1 }
                        conn.failNextCommit()
                    }
                    return results
                }
            }
        } catch {
            return Array(repeating: .failure(error), count: sales.count)
        }
    }

    /// Sales without a terminal's claim.
    func recordSales(_ sales: [(sale: Payment, fingerprint: String)],
                     beforeCommit: (@Sendable ([String]) -> Void)? = nil) -> [Result<SaleOutcome, GatewayError>] {
        recordSales(sales.map { ($0.sale, $0.fingerprint, nil) }, beforeCommit: beforeCommit)
    }

    /// Test hooks of ``recordSales(_:beforeCommit:)``.
    struct BatchHooks: Sendable {
        /// How many batch commits SQLite refuses (its commit hook turns COMMIT into ROLLBACK).
        var failCommits = 0
    }
    let batchHooks = Mutex(BatchHooks())

    /// Reverses the sale with `uniqueRef` once. Returns the updated sale and the reversal row.
    func recordReversal(uniqueRef: String, at now: Date) throws(GatewayError) -> (sale: Payment, reversal: Payment) {
        try withConnection { (conn) throws(GatewayError) in
            try conn.transaction { () throws(GatewayError) -> (sale: Payment, reversal: Payment) in
                guard let row = try conn.query("SELECT \(Self.columns) FROM payments WHERE unique_ref = ?",
                                               [.text(uniqueRef)]).first else {
                    throw GatewayError(.notFound, "no transaction has uniqueRef \(uniqueRef)")
                }
                var (sale, fingerprint) = try Self.payment(row)
                try LedgerRules.checkReversible(sale, uniqueRef: uniqueRef)
                let changed = try conn.run(
                    "UPDATE payments SET reversed = 1, updated_at = ? WHERE payment_id = ? AND reversed = 0",
                    [.integer(Self.millis(now)), .text(sale.paymentId)])
                guard changed == 1 else {
                    throw GatewayError(.alreadyReversed, "\(uniqueRef) was reversed before; it is not reversed again")
                }
                sale.reversed = true
                sale.updatedAt = now
                let reversal = LedgerRules.child(of: sale, kind: .reversal, amount: sale.amount, message: "Reversed", at: now)
                try Self.insert(reversal, fingerprint: fingerprint, conn)
                try self.enqueueWebhook(for: sale, event: .reversed, at: now, conn)
                return (sale, reversal)
            }
        }
    }

    /// Refunds `amount` (nil: all that is left) of the sale with `uniqueRef`; `reason` becomes
    /// its `lastRefundReason` (and the amount its `lastRefundAmount`).
    func recordRefund(uniqueRef: String, amount: Int?, reason: String? = nil,
                      at now: Date) throws(GatewayError) -> (sale: Payment, refund: Payment) {
        try changeSale(uniqueRef: uniqueRef) { (sale, fingerprint, conn) throws(GatewayError) -> (sale: Payment, refund: Payment) in
            var sale = sale
            let value = try LedgerRules.refundValue(sale, uniqueRef: uniqueRef, amount: amount)
            let changed = try conn.run("""
                UPDATE payments SET refunded_amount = refunded_amount + ?, last_refund_amount = ?,
                    last_refund_reason = ?, updated_at = ? WHERE payment_id = ? AND refunded_amount = ?
                """, [SQLValue(value), SQLValue(value), SQLValue(reason), .integer(Self.millis(now)), .text(sale.paymentId),
                      SQLValue(sale.refundedAmount)])
            guard changed == 1 else { throw GatewayError(.busy, "the sale changed during the refund; nothing was done") }
            sale.refundedAmount += value
            sale.lastRefundAmount = value
            sale.lastRefundReason = reason
            sale.updatedAt = now
            let refund = LedgerRules.child(of: sale, kind: .refund, amount: value, message: "Refunded", at: now)
            try Self.insert(refund, fingerprint: fingerprint, conn)
            try self.enqueueWebhook(for: sale, event: sale.remainingAmount == 0 ? .refunded : .partiallyRefunded,
                                    at: now, conn)
            return (sale, refund)
        }
    }

    /// MONEI's cancel of an AUTHORIZED sale (``LedgerStore/storeCancel(uniqueRef:reason:at:)``).
    func recordCancel(uniqueRef: String, reason: String?, at now: Date) throws(GatewayError) -> (sale: Payment, reversal: Payment) {
        try changeSale(uniqueRef: uniqueRef) { (sale, fingerprint, conn) throws(GatewayError) -> (sale: Payment, reversal: Payment) in
            var sale = sale
            try LedgerRules.checkCancelable(sale, id: sale.paymentId)
            let changed = try conn.run(
                "UPDATE payments SET reversed = 1, cancellation_reason = ?, updated_at = ? WHERE payment_id = ? AND reversed = 0 AND captured = 0",
                [SQLValue(reason), .integer(Self.millis(now)), .text(sale.paymentId)])
            guard changed == 1 else { throw GatewayError(.busy, "the payment changed during the cancel; nothing was done") }
            sale.reversed = true
            sale.cancellationReason = reason
            sale.updatedAt = now
            let reversal = LedgerRules.child(of: sale, kind: .reversal, amount: sale.amount, message: "Canceled", at: now)
            try Self.insert(reversal, fingerprint: fingerprint, conn)
            try self.enqueueWebhook(for: sale, event: .canceled, at: now, conn)
            return (sale, reversal)
        }
    }

    /// MONEI's capture of an AUTHORIZED sale (``LedgerStore/storeCapture(uniqueRef:amount:at:)``).
    func recordCapture(uniqueRef: String, amount: Int?, at now: Date) throws(GatewayError) -> Payment {
        try changeSale(uniqueRef: uniqueRef) { (sale, _, conn) throws(GatewayError) -> Payment in
            var sale = sale
            try LedgerRules.checkCapturable(sale, id: sale.paymentId, amount: amount)
            let changed = try conn.run(
                "UPDATE payments SET captured = 1, updated_at = ? WHERE payment_id = ? AND captured = 0 AND reversed = 0",
                [.integer(Self.millis(now)), .text(sale.paymentId)])
            guard changed == 1 else { throw GatewayError(.busy, "the payment changed during the capture; nothing was done") }
            sale.captured = true
            sale.updatedAt = now
            try self.enqueueWebhook(for: sale, event: .captured, at: now, conn)
            return sale
        }
    }

    /// `body` on the row with `uniqueRef` (and its card fingerprint), in one immediate transaction.
    private func changeSale<T: Sendable>(uniqueRef: String,
                               _ body: (Payment, String, SQLiteConnection) throws(GatewayError) -> T) throws(GatewayError) -> T {
        try withConnection { (conn) throws(GatewayError) in
            try conn.transaction { () throws(GatewayError) -> T in
                guard let row = try conn.query("SELECT \(Self.columns) FROM payments WHERE unique_ref = ?",
                                               [.text(uniqueRef)]).first else {
                    throw GatewayError(.notFound, "no transaction has uniqueRef \(uniqueRef)")
                }
                let (sale, fingerprint) = try Self.payment(row)
                return try body(sale, fingerprint, conn)
            }
        }
    }

    /// Writes the webhook of `sale`'s new state to the outbox, when it has a callbackUrl.
    private func enqueueWebhook(for sale: Payment, event: WebhookEvent, at now: Date,
                                _ conn: SQLiteConnection) throws(GatewayError) {
        guard let url = sale.callbackUrl else { return }
        let (body, header) = LedgerRules.webhookMessage(for: sale, event: event, at: now, secret: webhookSecret)
        try conn.run("""
            INSERT INTO webhooks (payment_id, order_id, event, url, body, signature, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.text(sale.paymentId), .text(sale.orderId), .text(event.rawValue), .text(url), .text(body),
                  .text(header), .integer(Self.millis(now))])
    }

    // MARK: Queries

    /// Every row with this paymentId (nil if none).
    public func payment(paymentId: String) throws(GatewayError) -> Payment? {
        try withReader { (c) throws(GatewayError) in try Self.select(c, "WHERE payment_id = ?", [.text(paymentId)]).first }
    }

    /// The row with this uniqueRef (nil if none).
    public func payment(uniqueRef: String) throws(GatewayError) -> Payment? {
        try withReader { (c) throws(GatewayError) in try Self.select(c, "WHERE unique_ref = ?", [.text(uniqueRef)]).first }
    }

    /// The sale of an order (at most one: the ledger never holds two sales per orderId), as
    /// a list like MONEI's `charges(filter: {orderId})`.
    public func sales(orderId: String) throws(GatewayError) -> [Payment] {
        try withReader { (c) throws(GatewayError) in
            try Self.select(c, "WHERE kind = 'sale' AND order_id = ? ORDER BY created_at, rowid", [.text(orderId)])
        }
    }

    /// Every row of the ledger (sales, refunds, reversals), oldest first.
    public func allPayments() throws(GatewayError) -> [Payment] {
        try withConnection { (c) throws(GatewayError) in try Self.select(c, "ORDER BY created_at, rowid", []) }
    }

    /// How many sales the ledger holds for `orderId` (0 or 1), and how many rows in all.
    public func saleCount(orderId: String) throws(GatewayError) -> Int {
        try withReader { (c) throws(GatewayError) in
            try c.query("SELECT count(*) FROM payments WHERE kind = 'sale' AND order_id = ?", [.text(orderId)])
                .first?[0].int ?? 0
        }
    }

    /// Sales and refunds matching the filter: sales first, newest first. Reversals are not
    /// items of their own: a reversed sale shows code `C`.
    public func transactions(_ filter: TransactionFilter) throws(GatewayError) -> [Payment] {
        var clauses = ["kind IN ('sale', 'refund')"]
        var bindings: [SQLValue] = []
        if let o = filter.orderId { clauses.append("order_id = ?"); bindings.append(.text(o)) }
        if let l = filter.panLastFour { clauses.append("last4 = ?"); bindings.append(.text(l)) }
        let sql = "WHERE " + clauses.joined(separator: " AND ")
            + " ORDER BY (kind = 'sale') DESC, created_at DESC, rowid DESC"
        return try withReader { (c) throws(GatewayError) in try Self.select(c, sql, bindings) }
    }

    // MARK: Webhook outbox

    /// Webhooks in outbox order, optionally for one order and/or only those not delivered yet.
    public func webhooks(orderId: String? = nil, pendingOnly: Bool = false) throws(GatewayError) -> [Webhook] {
        var clauses: [String] = []
        var bindings: [SQLValue] = []
        if let orderId { clauses.append("order_id = ?"); bindings.append(.text(orderId)) }
        if pendingOnly { clauses.append("delivered_at IS NULL") }
        let whereSQL = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        let sql = """
            SELECT id, payment_id, order_id, event, url, body, signature, created_at, delivered_at, attempts, last_error
            FROM webhooks \(whereSQL) ORDER BY id
            """
        return try withConnection { (c) throws(GatewayError) in
            try c.query(sql, bindings).map { (r) throws(GatewayError) -> Webhook in
                guard let id = r[0].int64, let pid = r[1].string, let oid = r[2].string,
                      let event = r[3].string.flatMap(WebhookEvent.init(rawValue:)), let url = r[4].string,
                      let body = r[5].string, let sig = r[6].string, let created = r[7].int64,
                      let attempts = r[9].int else {
                    throw GatewayError(.corruptLedger, "a webhook row does not have the shape this tapemu wrote")
                }
                return Webhook(id: id, paymentId: pid, orderId: oid, event: event, url: url, body: body, signature: sig,
                               createdAt: Self.date(created), deliveredAt: r[8].int64.map(Self.date),
                               attempts: attempts, lastError: r[10].string)
            }
        }
    }

    /// Marks a webhook delivered (a later delivery service calls this).
    public func markWebhookDelivered(id: Int64, at date: Date) throws(GatewayError) {
        try withConnection { (c) throws(GatewayError) in
            _ = try c.run("UPDATE webhooks SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?",
                          [.integer(Self.millis(date)), .integer(id)])
        }
    }

    /// Records a failed delivery attempt.
    public func recordWebhookFailure(id: Int64, error: String) throws(GatewayError) {
        try withConnection { (c) throws(GatewayError) in
            _ = try c.run("UPDATE webhooks SET attempts = attempts + 1, last_error = ? WHERE id = ?",
                          [.text(error), .integer(id)])
        }
    }

    // MARK: Accounts and SDK versions

    /// Whether the account accepted the terms (false for an account never seen).
    public func termsAccepted(accountId: String) throws(GatewayError) -> Bool {
        try withReader { (c) throws(GatewayError) in
            try c.query("SELECT terms_accepted FROM accounts WHERE account_id = ?", [.text(accountId)])
                .first?[0].int == 1
        }
    }

    public func setTermsAccepted(_ accepted: Bool, accountId: String, at date: Date) throws(GatewayError) {
        try withConnection { (c) throws(GatewayError) in
            _ = try c.run("""
                INSERT INTO accounts (account_id, terms_accepted, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (account_id) DO UPDATE SET terms_accepted = excluded.terms_accepted, updated_at = excluded.updated_at
                """, [.text(accountId), SQLValue(accepted), .integer(Self.millis(date))])
        }
    }

    /// SDK versions blocked in this ledger (besides the configuration's).
    public func blockedSDKVersions() throws(GatewayError) -> Set<String> {
        try withReader { (c) throws(GatewayError) in
            Set(try c.query("SELECT version FROM blocked_sdk_versions").compactMap { $0[0].string })
        }
    }

    public func blockSDKVersion(_ version: String) throws(GatewayError) {
        try withConnection { (c) throws(GatewayError) in
            _ = try c.run("INSERT OR IGNORE INTO blocked_sdk_versions (version) VALUES (?)", [.text(version)])
        }
    }

    public func unblockSDKVersion(_ version: String) throws(GatewayError) {
        try withConnection { (c) throws(GatewayError) in
            _ = try c.run("DELETE FROM blocked_sdk_versions WHERE version = ?", [.text(version)])
        }
    }

    // MARK: Named secrets (the gateway service's merchant API key)

    /// The ledger's secret named `name` (32 random bytes), made and stored the first time it is
    /// asked for, so every later run on this data directory gets the same one. Names of the
    /// ledger's own secrets are refused.
    public func secret(named name: String) throws(GatewayError) -> [UInt8] {
        guard !["webhook_secret", "token_secret", "fingerprint_key", "data_directory_id"].contains(name) else {
            throw GatewayError(.invalidRequest, "\(name) is one of the ledger's own settings")
        }
        return try withConnection { (c) throws(GatewayError) -> [UInt8] in
            try c.transaction { () throws(GatewayError) -> [UInt8] in
                if let v = try c.query("SELECT value FROM settings WHERE key = ?", [.text(name)]).first?[0].bytes,
                   v.count == 32 {
                    return v
                }
                let v = Crypto.randomBytes(32)
                _ = try c.run("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", [.text(name), .blob(v)])
                return v
            }
        }
    }
}
