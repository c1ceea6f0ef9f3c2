public import Foundation
public import Storage
import BERTLV
public import PaymentRules
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One payment attempt whose outcome the device has not handed over yet: written durably
/// *before* the authorisation request starts leaving (the submission point), kept — with the
/// gateway's answer once it comes — until the result has been handed over, and resolved later
/// (webhook, charges query, transaction list, reversal) when no answer came. Holds no full PAN:
/// the masked PAN and last four only.
///
/// One record per attempt (``attemptId``), not per order: a second attempt on the same order id
/// never replaces the first one's record.
public struct PendingPayment: Sendable, Hashable, Codable {
    /// Which SDK face wrote it.
    public enum Origin: String, Sendable, Hashable, Codable {
        /// `TapToPay.acceptPayment` (MONEI-style).
        case tapToPay
        /// `CoreAPI.processSale` (CoreAPI-style); ``sale`` holds `CoreSale.convertToDictionary()`.
        case coreAPI
    }

    /// Where the attempt stands.
    public enum State: String, Sendable, Hashable, Codable {
        /// Sent (or about to be): no answer known.
        case pending
        /// The gateway answered (``answer``) but the result was not handed over: the process
        /// ended between the two.
        case answered
        /// Closed deliberately without an answer (``closure``); kept as an audit entry.
        case closed
    }

    /// The gateway's answer, as the device received it.
    public struct Answer: Sendable, Hashable, Codable {
        public var paymentId: String
        public var status: AuthorisationStatus
        public var statusCode: String
        public var statusMessage: String
        /// The transaction-list code (`A`, `D`, `R`, `E`).
        public var transactionCode: String
        public var uniqueRef: String
        public var amount: Int
        public var currency: String
        public var cardBrand: String
        public var last4: String
        public var maskedPAN: String
        public var answeredAt: Date

        /// The answer as the device keeps it (the payment flow makes it from the gateway's
        /// `AuthorisationResponse`: `PaymentFlow`'s `Answer.init(_:at:)`).
        public init(paymentId: String, status: AuthorisationStatus, statusCode: String, statusMessage: String,
                    transactionCode: String, uniqueRef: String, amount: Int, currency: String, cardBrand: String,
                    last4: String, maskedPAN: String, answeredAt: Date) {
            self.paymentId = paymentId
            self.status = status
            self.statusCode = statusCode
            self.statusMessage = statusMessage
            self.transactionCode = transactionCode
            self.uniqueRef = uniqueRef
            self.amount = amount
            self.currency = currency
            self.cardBrand = cardBrand
            self.last4 = last4
            self.maskedPAN = maskedPAN
            self.answeredAt = answeredAt
        }
    }

    /// Why and when a record was closed without an answer.
    public struct Closure: Sendable, Hashable, Codable {
        public var reason: String
        public var closedAt: Date
    }

    /// This attempt's id (a UUID): the record's key.
    public var attemptId: String
    public var orderId: String
    public var origin: Origin
    /// Minor units.
    public var amount: Int
    public var currency: String
    public var maskedPAN: String?
    public var last4: String?
    public var cardBrand: String?
    public var callbackUrl: String?
    /// When it was written.
    public var createdAt: Date
    /// The sale as a dictionary (CoreAPI `convertToDictionary()`), for the CoreAPI face.
    public var sale: [String: String]
    /// The gateway's answer, once it came (then ``state`` is `answered`).
    public var answer: Answer?
    /// Set when the record was closed without an answer.
    public var closure: Closure?
    /// The process that wrote it (for display: whether it is alive is known from its lease).
    public var ownerProcess: Int32?

    public var state: State {
        if closure != nil { return .closed }
        return answer == nil ? .pending : .answered
    }

    public init(orderId: String, origin: Origin, amount: Int, currency: String, maskedPAN: String? = nil,
                last4: String? = nil, cardBrand: String? = nil, callbackUrl: String? = nil,
                createdAt: Date, sale: [String: String] = [:], attemptId: String = UUID().uuidString) {
        self.attemptId = attemptId
        self.orderId = orderId
        self.origin = origin
        self.amount = amount
        self.currency = currency
        self.maskedPAN = maskedPAN
        self.last4 = last4
        self.cardBrand = cardBrand
        self.callbackUrl = callbackUrl
        self.createdAt = createdAt
        self.sale = sale
    }

    private enum CodingKeys: String, CodingKey {
        case attemptId, orderId, origin, amount, currency, maskedPAN, last4, cardBrand, callbackUrl, createdAt, sale,
             answer, closure, ownerProcess
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        // Records written before attempts had ids get theirs from the row.
        attemptId = try c.decodeIfPresent(String.self, forKey: .attemptId) ?? ""
        orderId = try c.decode(String.self, forKey: .orderId)
        origin = try c.decode(Origin.self, forKey: .origin)
        amount = try c.decode(Int.self, forKey: .amount)
        currency = try c.decode(String.self, forKey: .currency)
        maskedPAN = try c.decodeIfPresent(String.self, forKey: .maskedPAN)
        last4 = try c.decodeIfPresent(String.self, forKey: .last4)
        cardBrand = try c.decodeIfPresent(String.self, forKey: .cardBrand)
        callbackUrl = try c.decodeIfPresent(String.self, forKey: .callbackUrl)
        createdAt = try c.decode(Date.self, forKey: .createdAt)
        sale = try c.decodeIfPresent([String: String].self, forKey: .sale) ?? [:]
        answer = try c.decodeIfPresent(Answer.self, forKey: .answer)
        closure = try c.decodeIfPresent(Closure.self, forKey: .closure)
        ownerProcess = try c.decodeIfPresent(Int32.self, forKey: .ownerProcess)
    }

    /// Whether `payment` is what this attempt asked for: the same order, amount, currency and
    /// card (last four; brand where both are known), and — once an answer was stored — the very
    /// transaction that answered. Nil when it is; else why not.
    public func mismatch(orderId: String, amount: Int, currency: String, last4: String?, brand: String?,
                         uniqueRef: String?) -> String? {
        if !OrderID.same(orderId, self.orderId) { return "its order id is \(orderId), not \(self.orderId)" }
        if amount != self.amount || currency.uppercased() != self.currency.uppercased() {
            return "its amount is \(amount) \(currency), this attempt's \(self.amount) \(self.currency)"
        }
        if let mine = self.last4, let theirs = last4, !theirs.hasSuffix(mine) {
            return "its card ends in \(theirs.suffix(4)), this attempt's in \(mine)"
        }
        if self.last4 == nil || last4 == nil {
            return "the card of \(self.last4 == nil ? "this attempt" : "that payment") is not known"
        }
        if let mine = cardBrand?.lowercased(), let theirs = brand?.lowercased(), mine != theirs,
           !mine.isEmpty, !theirs.isEmpty, theirs != "unknown", mine != "unknown" {
            return "its card is \(theirs), this attempt's \(mine)"
        }
        if let stored = answer?.uniqueRef, let uniqueRef, stored != uniqueRef {
            return "its reference is \(uniqueRef), the answer this attempt got was \(stored)"
        }
        return nil
    }
}

/// A record the store holds but cannot read back: reported by its order id, never blocking the
/// others.
public struct UnreadablePendingRecord: Error, Sendable, Hashable {
    public var attemptId: String
    public var orderId: String
    public var reason: String
}

/// What the store holds: every record that reads back, and those that do not.
public struct PendingScan: Sendable {
    public var records: [PendingPayment]
    public var unreadable: [UnreadablePendingRecord]
}

/// The device's durable store of payment attempts whose result has not been handed over:
/// `device.sqlite` in a data directory, SQLite in WAL mode with `synchronous=FULL`, so a write
/// that returned survives a crash or power loss. Separate from the gateway's ledger (it stands
/// for the phone's disk, not the acquirer's).
///
/// The rules it keeps (DESIGN.md, "The device's pending store"):
/// - **One record per attempt**, keyed by ``PendingPayment/attemptId``.
/// - **A live payment owns its record**: ``begin(_:)`` takes a lease (an exclusive `flock` on
///   `device-leases/<attemptId>`) *before* the record is written, and holds it until the result
///   is handed over or the payment ends unclear. Recovery ``claim(_:)``s a record, which works
///   only when the owner is gone; recoveries run one at a time (``withRecovery(_:)``).
/// - **The record outlives the result**: the answer is stored in it (``PendingLease/recordAnswer(_:)``)
///   and the record leaves only when the result has been handed over (``PendingLease/complete()``).
/// - **Nothing is silently created anew** (``DataDirectoryLayout``); damage is reported; a failed
///   write throws; an unreadable row is reported by its order id and the others still read.
public final class PendingPaymentStore: Sendable {
    /// The file name inside a data directory.
    public static let fileName = "device.sqlite"
    /// The folder of lease files inside a data directory.
    public static let leaseDirectoryName = "device-leases"
    static let recoveryLockName = "device-recovery.lock"
    /// The schema version this code writes.
    public static let schemaVersion = 2
    /// `PRAGMA application_id` of a device store ("TPMD").
    static let applicationId = 0x5450_4D44

    public typealias Access = DataDirectoryLayout.Access

    public let dataDirectory: String
    public let path: String
    public let access: Access
    /// Nil when the store was never created in the directory and the access does not create.
    private let connection: Mutex<SQLiteConnection?>

    /// Opens the store in a data directory. `.create` (the default) makes the directory and the
    /// store when they are not there; `.existing` needs the directory; `.readOnly` writes nothing.
    /// Checks the schema version and the file's integrity (a quick check when read only, a full
    /// one otherwise: a store about to act on money is checked whole).
    public init(dataDirectory: String, access: Access = .create, busyTimeout: Duration = .seconds(5)) throws(DeviceStoreError) {
        self.dataDirectory = dataDirectory
        self.access = access
        let layout = DataDirectoryLayout(path: dataDirectory)
        path = layout.file(Self.fileName)
        let path = path
        let conn = try { () throws(DeviceStoreError) -> SQLiteConnection? in
            var conn = try layout.open(Self.layoutStore, access: access, busyTimeout: busyTimeout)
            if access == .readOnly, let c = conn, try c.userVersion < Self.schemaVersion {
                // A store an older tapemu wrote: it is upgraded once, by the first command that may
                // write (a query included, when the disk lets it); on a read-only disk it cannot be.
                conn = try layout.open(Self.layoutStore, access: .existing, busyTimeout: busyTimeout)
            }
            if let conn {
                try Self.migrate(conn, path: path, writable: conn.mode != .readOnly)
                try conn.checkIntegrity(full: access != .readOnly)
            }
            return conn
        }()
        connection = Mutex(conn)
    }

    /// Whether the directory ever held a device store.
    public var exists: Bool { connection.withLock { $0 != nil } }

    // MARK: Schema

    static let layoutStore = DataDirectoryLayout.Store(
        fileName: fileName, applicationId: applicationId, holds: "the device's pending payments",
        create: { conn, id throws(DeviceStoreError) in
            try conn.execute(schemaV2)
            try conn.run("INSERT INTO meta (key, value) VALUES ('data_directory_id', ?)", [.text(id)])
            try conn.execute("PRAGMA user_version = \(schemaVersion)")
        },
        readId: { conn throws(DeviceStoreError) in
            guard try conn.tableNames().contains("meta") else { return nil }
            return try conn.query("SELECT value FROM meta WHERE key = 'data_directory_id'").first?[0].string
        },
        recognises: { $0.contains("pending") || $0.isSuperset(of: ["attempts", "meta"]) },
        stamp: { conn, id throws(DeviceStoreError) in
            try migrate(conn, path: conn.path, writable: true)
            try conn.run("INSERT OR REPLACE INTO meta (key, value) VALUES ('data_directory_id', ?)", [.text(id)])
            try conn.execute("PRAGMA application_id = \(applicationId)")
        })

    private static let schemaV2 = """
        CREATE TABLE attempts (
            attempt_id TEXT PRIMARY KEY NOT NULL,
            order_id TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('pending', 'answered', 'closed')),
            body TEXT NOT NULL,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX attempts_order ON attempts(order_id);
        CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
        """

    /// Brings an older store to ``schemaVersion`` (version 1: one `pending` row per order id,
    /// no version number written) and checks that the tables are there.
    private static func migrate(_ conn: SQLiteConnection, path: String, writable: Bool) throws(DeviceStoreError) {
        let version = try conn.userVersion
        if version > schemaVersion {
            throw DeviceStoreError(.unsupportedVersion,
                               "\(path) has schema version \(version); this tapemu knows up to \(schemaVersion)")
        }
        let tables = try conn.tableNames()
        if version < schemaVersion {
            guard writable else {
                throw DeviceStoreError(.readOnlyStorage, "\(path) has schema version \(version) and must be upgraded, which needs write access")
            }
            try conn.transaction { () throws(DeviceStoreError) in
                // Checked again inside the write lock: another process may have migrated it.
                guard try conn.userVersion < schemaVersion else { return }
                let now = try conn.tableNames()
                if now.contains("pending") && !now.contains("attempts") {
                    try conn.execute(schemaV2)
                    for row in try conn.query("SELECT order_id, body, created_at FROM pending") {
                        try conn.run("INSERT INTO attempts (attempt_id, order_id, state, body, created_at) VALUES (?, ?, 'pending', ?, ?)",
                                     [.text(UUID().uuidString), row[0], row[1], row[2]])
                    }
                    try conn.execute("DROP TABLE pending")
                } else if now.isEmpty {
                    try conn.execute(schemaV2)
                } else if !now.isSuperset(of: ["attempts", "meta"]) {
                    throw DeviceStoreError(.storeMissing, "\(path) holds tables that are not a device store's (\(now.sorted().joined(separator: ", ")))")
                }
                try conn.execute("PRAGMA user_version = \(schemaVersion)")
            }
            return
        }
        guard tables.isSuperset(of: ["attempts", "meta"]) else {
            throw DeviceStoreError(.corruptStore, "\(path) is damaged: its tables are gone (it holds \(tables.sorted().joined(separator: ", ")))")
        }
    }

    // MARK: Writing

    private func withConnection<T: Sendable>(_ body: (SQLiteConnection) throws(DeviceStoreError) -> T) throws(DeviceStoreError) -> T {
        try connection.withLock { (conn: inout SQLiteConnection?) throws(DeviceStoreError) -> T in
            guard let c = conn else {
                throw DeviceStoreError(.storeMissing, "no device store in \(dataDirectory): nothing was ever stored there")
            }
            return try body(c)
        }
    }

    private static func encode(_ payment: PendingPayment) throws(DeviceStoreError) -> String {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            return String(decoding: try encoder.encode(payment), as: UTF8.self)
        } catch {
            throw DeviceStoreError(.storage, "cannot encode the pending payment: \(error)")
        }
    }

    private func write(_ payment: PendingPayment, _ c: SQLiteConnection) throws(DeviceStoreError) {
        let body = try Self.encode(payment)
        let createdAt = Int64((payment.createdAt.timeIntervalSince1970 * 1000).rounded(.down))
        _ = try { () throws(DeviceStoreError) in
            try c.run("INSERT OR REPLACE INTO attempts (attempt_id, order_id, state, body, created_at) VALUES (?, ?, ?, ?, ?)",
                      [.text(payment.attemptId), .text(payment.orderId), .text(payment.state.rawValue),
                       .text(body), .integer(createdAt)])
        }()
    }

    /// Writes (or replaces) a record without taking its lease: as a process that wrote it and
    /// ended would leave it. Durable when it returns.
    public func save(_ payment: PendingPayment) throws(DeviceStoreError) {
        try withConnection { c throws(DeviceStoreError) in try write(payment, c) }
    }

    /// Takes the attempt's lease, then writes its record durably: from then on the record is
    /// there for recovery, which leaves it alone while the lease is held.
    ///
    /// One live attempt per order: when another attempt of the order is owned by a live process —
    /// a payment in progress, or a recovery acting on it (which may be about to reverse the
    /// order's sale) — the record is taken back and ``DeviceStoreError/Code/busy`` thrown: nothing
    /// may be sent. (A recovery claims a record, then checks the order's other attempts; a
    /// payment writes its record, then checks: of two that overlap, at least one sees the other.)
    public func begin(_ payment: PendingPayment) throws(DeviceStoreError) -> PendingLease {
        var payment = payment
        payment.ownerProcess = getpid()
        let lock = try lockLease(payment.attemptId, wait: false)
        guard let lock else {
            throw DeviceStoreError(.busy, "the attempt \(payment.attemptId) is already owned by a live process")
        }
        try save(payment)
        let lease = PendingLease(store: self, record: payment, lock: lock)
        let live: PendingPayment?
        do {
            live = try records(orderId: payment.orderId)
                .first { $0.attemptId != payment.attemptId && ((try? isOwned($0.attemptId)) ?? true) }
        } catch {
            try? lease.discard()
            throw error
        }
        guard let live else { return lease }
        // Held with the gateway's answer: a finished sale whose answer is still being handed over
        // (an app that has not acknowledged it yet, or a recovery writing its reports).
        let why = live.answer != nil
            ? "the answer of another attempt of order \(payment.orderId) is still being handed over (not acknowledged yet)"
            : "another attempt of order \(payment.orderId) is in progress or being resolved"
        do {
            try lease.discard()
        } catch {
            throw DeviceStoreError(error.code, "\(why), and this attempt's record (never sent) could not be taken back: \(error.reason)")
        }
        throw DeviceStoreError(.busy, "\(why): nothing was sent")
    }

    /// Takes over a record whose owner is gone; nil while its owner (a payment in progress, or
    /// another recovery) is alive. The record is read again under the lease: nil too when it
    /// left meanwhile.
    public func claim(_ attemptId: String) throws(DeviceStoreError) -> PendingLease? {
        guard let lock = try lockLease(attemptId, wait: false) else { return nil }
        guard let record = try record(attemptId: attemptId) else {
            lock.releaseAndRemove()
            return nil
        }
        return PendingLease(store: self, record: record, lock: lock)
    }

    /// Whether a live process holds the attempt's lease.
    public func isOwned(_ attemptId: String) throws(DeviceStoreError) -> Bool {
        guard let lock = try lockLease(attemptId, wait: false, create: false) else {
            return FileManager.default.fileExists(atPath: leasePath(attemptId))
        }
        lock.release()
        return false
    }

    /// Runs `body` as the only recovery on this data directory: a second one waits for the
    /// first to finish, then sees what it left (so each reports each record once, truthfully).
    public func withRecovery<T>(_ body: () async throws(DeviceStoreError) -> T) async throws(DeviceStoreError) -> T {
        let lock: FileLock
        do {
            lock = try await FileLock.acquire((dataDirectory as NSString).appendingPathComponent(Self.recoveryLockName))
        } catch {
            throw DeviceStoreError(error.isReadOnly ? .readOnlyStorage : .storage, "cannot take the recovery lock: \(error.reason)")
        }
        defer { lock.release() }
        return try await body()
    }

    private func leasePath(_ attemptId: String) -> String {
        ((dataDirectory as NSString).appendingPathComponent(Self.leaseDirectoryName) as NSString)
            .appendingPathComponent(attemptId + ".lock")
    }

    private func lockLease(_ attemptId: String, wait: Bool, create: Bool = true) throws(DeviceStoreError) -> FileLock? {
        guard !attemptId.isEmpty, attemptId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw DeviceStoreError(.storage, "'\(attemptId)' is not an attempt id")
        }
        let path = leasePath(attemptId)
        if !create && !FileManager.default.fileExists(atPath: path) {
            // No lease file: nobody ever held it, or its holder finished; nobody holds it now.
            return nil
        }
        let dir = (path as NSString).deletingLastPathComponent
        if mkdir(dir, 0o700) != 0 && errno != EEXIST {
            throw DeviceStoreError(DataDirectoryLayout.posixError("cannot create \(dir)"))
        }
        do {
            return wait ? try FileLock.acquire(path) : try FileLock.tryAcquire(path)
        } catch {
            throw DeviceStoreError(error.isReadOnly ? .readOnlyStorage : .storage, error.reason)
        }
    }

    fileprivate func update(_ payment: PendingPayment) throws(DeviceStoreError) {
        let body = try Self.encode(payment)
        try withConnection { c throws(DeviceStoreError) in
            let changed = try { () throws(DeviceStoreError) in
                try c.run("UPDATE attempts SET state = ?, body = ? WHERE attempt_id = ?",
                          [.text(payment.state.rawValue), .text(body), .text(payment.attemptId)])
            }()
            guard changed == 1 else {
                throw DeviceStoreError(.storage, "the record of attempt \(payment.attemptId) (order \(payment.orderId)) is gone")
            }
        }
    }

    /// Deletes the attempt's record, and — once its order's result is handed over — the other
    /// open attempts of that order asking for the same amount and card, whichever face wrote
    /// them: the gateway holds one sale per order id (whatever face asked for it), so their
    /// outcome is the one just handed over. (Left behind, a CoreAPI attempt's recovery would find
    /// that sale, which matches it, and reverse a sale the app was told was approved.) When one
    /// of them is held by another process, nothing is deleted and ``DeviceStoreError/Code/busy``
    /// is thrown: the record keeps the answer for recovery.
    fileprivate func delete(_ payment: PendingPayment, supersedingSiblings: Bool) throws(DeviceStoreError) {
        var siblings: [(PendingPayment, FileLock)] = []
        defer { for (_, lock) in siblings { lock.release() } }
        if supersedingSiblings {
            for other in try records(orderId: payment.orderId) where other.attemptId != payment.attemptId
                && other.state != .closed
                && other.amount == payment.amount && other.currency == payment.currency
                && (other.last4 == nil || other.last4 == payment.last4) {
                // Held by another process right now (a recovery that claimed it, a probe of its
                // lease): it cannot be taken, and this record — the device's only trace of the
                // answer — must not leave without it, or the next recovery of that attempt finds
                // the sale, which matches it, and (CoreAPI) reverses a sale handed over approved.
                guard let lock = try lockLease(other.attemptId, wait: false) else {
                    throw DeviceStoreError(.busy, "another attempt of order \(payment.orderId) for the same sale (attempt \(other.attemptId)) is held by another process: this record, with the gateway's answer, stays, and the recovery reports that answer for both")
                }
                siblings.append((other, lock))
            }
        }
        try withConnection { c throws(DeviceStoreError) in
            try { () throws(DeviceStoreError) in try c.transaction { () throws(DeviceStoreError) in
                let changed = try c.run("DELETE FROM attempts WHERE attempt_id = ?", [.text(payment.attemptId)])
                guard changed == 1 else {
                    throw DeviceStoreError(.storage, "the record of attempt \(payment.attemptId) (order \(payment.orderId)) is gone")
                }
                for (other, _) in siblings {
                    try c.run("DELETE FROM attempts WHERE attempt_id = ?", [.text(other.attemptId)])
                }
            } }()
        }
        for (_, lock) in siblings { lock.releaseAndRemove() }
        siblings = []
    }

    // MARK: Reading

    private static func decode(_ row: SQLRow) -> Result<PendingPayment, UnreadablePendingRecord> {
        let attemptId = row[0].string ?? "?"
        let orderId = row[1].string ?? "?"
        guard let text = row[2].string else {
            return .failure(UnreadablePendingRecord(attemptId: attemptId, orderId: orderId, reason: "the record has no body"))
        }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            var p = try decoder.decode(PendingPayment.self, from: Data(text.utf8))
            p.attemptId = attemptId
            guard OrderID.same(p.orderId, orderId) else {
                return .failure(UnreadablePendingRecord(attemptId: attemptId, orderId: orderId,
                                                        reason: "the record's body names another order"))
            }
            return .success(p)
        } catch {
            return .failure(UnreadablePendingRecord(attemptId: attemptId, orderId: orderId,
                                                    reason: "the record cannot be read back (\(Self.describe(error)))"))
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "no \(key.stringValue)"
        case DecodingError.typeMismatch(_, let c), DecodingError.valueNotFound(_, let c): "bad \(c.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.dataCorrupted(let c): c.debugDescription
        default: "\(error)"
        }
    }

    private func rows(_ whereClause: String, _ bindings: [SQLValue]) throws(DeviceStoreError) -> [SQLRow] {
        try connection.withLock { (conn: inout SQLiteConnection?) throws(DeviceStoreError) -> [SQLRow] in
            guard let c = conn else { return [] }
            return try { () throws(DeviceStoreError) in try c.query("SELECT attempt_id, order_id, body FROM attempts \(whereClause) ORDER BY created_at, attempt_id",
                               bindings) }()
        }
    }

    /// Every record that reads back, oldest first, and those that do not. Closed records (audit
    /// entries) only with `includingClosed`.
    public func scan(includingClosed: Bool = false) throws(DeviceStoreError) -> PendingScan {
        Self.scan(try rows(includingClosed ? "" : "WHERE state != 'closed'", []))
    }

    private static func scan(_ rows: [SQLRow]) -> PendingScan {
        var scan = PendingScan(records: [], unreadable: [])
        for row in rows {
            switch decode(row) {
            case .success(let p): scan.records.append(p)
            case .failure(let u): scan.unreadable.append(u)
            }
        }
        return scan
    }

    /// Every open record that reads back (pending or answered), oldest first.
    public func all() throws(DeviceStoreError) -> [PendingPayment] {
        try scan().records
    }

    /// The open records of an order that read back, oldest first (its damaged rows:
    /// ``scan(orderId:)``).
    public func records(orderId: String) throws(DeviceStoreError) -> [PendingPayment] {
        try scan(orderId: orderId).records
    }

    /// The open records of an order that read back, oldest first, and the order's open rows that
    /// do not: a recovery that would act on the order looks at both (a damaged record may hold
    /// the answer of the sale a look-up finds).
    public func scan(orderId: String) throws(DeviceStoreError) -> PendingScan {
        Self.scan(try rows("WHERE order_id = ? AND state != 'closed'", [.text(orderId)]))
    }

    /// The newest open record of an order, if any.
    public func get(orderId: String) throws(DeviceStoreError) -> PendingPayment? {
        try records(orderId: orderId).last
    }

    /// One record by attempt id (closed ones included).
    public func record(attemptId: String) throws(DeviceStoreError) -> PendingPayment? {
        guard let row = try rows("WHERE attempt_id = ?", [.text(attemptId)]).first else { return nil }
        switch Self.decode(row) {
        case .success(let p): return p
        case .failure(let u): throw DeviceStoreError(.corruptStore, "the record of order \(u.orderId) (attempt \(u.attemptId)): \(u.reason)")
        }
    }

    /// Forgets every open record of an order that nobody owns. Returns whether one was there.
    @discardableResult
    public func remove(orderId: String) throws(DeviceStoreError) -> Bool {
        var removed = false
        for p in try records(orderId: orderId) {
            guard let lease = try claim(p.attemptId) else { continue }
            try lease.complete()
            removed = true
        }
        return removed
    }

    /// Closes a record without an answer — after the seed's "contact support" — as a deliberate,
    /// recorded act: the record stays as an audit entry (``PendingPayment/closure``), shown with
    /// the closed ones. `attemptId` picks one attempt when the order has several open. A record
    /// that holds the gateway's answer is refused (``DeviceStoreError/Code/invalidRequest``): its
    /// outcome is known, and the recovery reports it.
    public func close(orderId: String, attemptId: String? = nil, reason: String, at date: Date = Date()) throws(DeviceStoreError) -> PendingPayment {
        let trimmed = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw DeviceStoreError(.invalidRequest, "a reason is needed to close a record") }
        let open = try records(orderId: orderId).filter { attemptId == nil || $0.attemptId == attemptId }
        guard let target = open.first else {
            throw DeviceStoreError(.notFound, "no open record for order \(orderId)\(attemptId.map { " with attempt \($0)" } ?? "")")
        }
        guard open.count == 1 else {
            throw DeviceStoreError(.invalidRequest, "order \(orderId) has \(open.count) open attempts (\(open.map(\.attemptId).joined(separator: ", "))): name one")
        }
        guard let lease = try claim(target.attemptId) else {
            throw DeviceStoreError(.busy, "the record of order \(orderId) is owned by a payment in progress")
        }
        // A record that holds the gateway's answer is not unclear: closed, its answer would never
        // be reported (read under the lease: the answer may have come since the list was read).
        if let answer = lease.record.answer {
            lease.release()
            throw DeviceStoreError(.invalidRequest, "the record of order \(orderId) (attempt \(target.attemptId)) holds the gateway's answer (\(answer.status.rawValue), code \(answer.transactionCode), ref \(answer.uniqueRef)): its outcome is known and the recovery reports it; it is not closed")
        }
        // The reason is free text a person typed (a ticket, a note — sometimes the card number
        // read out by the customer): it is stored and shown masked by the one policy.
        return try lease.close(reason: SensitiveData.maskedText(trimmed), at: date)
    }
}

/// The lease of one attempt's record: held by the payment that wrote it (or the recovery that
/// claimed it) for as long as it acts on the record. Dropping it keeps the record for recovery.
public final class PendingLease: Sendable {
    private let store: PendingPaymentStore
    private let lock: Mutex<FileLock?>
    private let current: Mutex<PendingPayment>

    fileprivate init(store: PendingPaymentStore, record: PendingPayment, lock: FileLock) {
        self.store = store
        self.lock = Mutex(lock)
        self.current = Mutex(record)
    }

    deinit { lock.withLock { $0?.release() } }

    /// The record as this lease last wrote or read it.
    public var record: PendingPayment { current.withLock { $0 } }
    public var attemptId: String { record.attemptId }

    /// Stores the gateway's answer in the record (durable when it returns), so a process that
    /// ends before handing the result over leaves it for recovery to report.
    public func recordAnswer(_ answer: PendingPayment.Answer) throws(DeviceStoreError) {
        var p = record
        p.answer = answer
        try store.update(p)
        current.withLock { $0 = p }
    }

    /// The result is handed over (or the record is resolved): the record leaves, and the lease is
    /// let go. When the record holds the gateway's answer, or `settlingTheSale` (a recovery's
    /// look-up found the order's sale, which matches this attempt, and that is what was handed
    /// over), the order's other attempts for the same amount and card leave with it: the gateway
    /// holds one sale per order id, so their outcome is the one just handed over (left behind, a
    /// CoreAPI attempt's recovery would reverse a sale just reported approved). When one of
    /// those is held by another process at that moment, the record stays and
    /// ``DeviceStoreError/Code/busy`` is thrown: recovery reports it again later.
    public func complete(settlingTheSale: Bool = false) throws(DeviceStoreError) {
        let p = record
        try store.delete(p, supersedingSiblings: settlingTheSale || p.answer != nil)
        lock.withLock { $0?.releaseAndRemove(); $0 = nil }
    }

    /// Deletes the record of an attempt that never left (cancelled before the submission point).
    public func discard() throws(DeviceStoreError) {
        try store.delete(record, supersedingSiblings: false)
        lock.withLock { $0?.releaseAndRemove(); $0 = nil }
    }

    /// Closes the record without an answer, keeping it as an audit entry.
    func close(reason: String, at date: Date) throws(DeviceStoreError) -> PendingPayment {
        var p = record
        p.closure = .init(reason: reason, closedAt: date)
        try store.update(p)
        current.withLock { $0 = p }
        release()
        return p
    }

    /// Lets go of the record, keeping it (an unclear outcome, or a result not handed over).
    public func release() {
        lock.withLock { $0?.release(); $0 = nil }
    }
}
