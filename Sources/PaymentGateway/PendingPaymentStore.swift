public import Foundation
import Synchronization

/// A payment whose outcome the device does not know yet: written durably *before* the
/// authorisation request starts leaving (the submission point), removed once the gateway's
/// answer is known, and resolved later (webhook, charges query, transaction list, reversal)
/// when the answer never came. Holds no full PAN: the masked PAN and last four only.
public struct PendingPayment: Sendable, Hashable, Codable {
    /// Which SDK face wrote it.
    public enum Origin: String, Sendable, Hashable, Codable {
        /// `TapToPay.acceptPayment` (MONEI-style).
        case tapToPay
        /// `CoreAPI.processSale` (CoreAPI-style); ``sale`` holds `CoreSale.convertToDictionary()`.
        case coreAPI
    }

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

    public init(orderId: String, origin: Origin, amount: Int, currency: String, maskedPAN: String? = nil,
                last4: String? = nil, cardBrand: String? = nil, callbackUrl: String? = nil,
                createdAt: Date, sale: [String: String] = [:]) {
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
}

/// The device's durable store of pending payments: SQLite in WAL mode with `synchronous=FULL`,
/// so a `save` that returned survives a crash or power loss. Separate from the gateway's ledger
/// (it stands for the phone's disk, not the acquirer's).
public final class PendingPaymentStore: Sendable {
    /// The file name inside a data directory.
    public static let fileName = "device.sqlite"

    public let path: String
    private let connection: Mutex<SQLiteConnection>

    /// Opens (creating) the store at `path`.
    public init(path: String) throws(GatewayError) {
        self.path = path
        let dir = (path as NSString).deletingLastPathComponent
        if !dir.isEmpty {
            do {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            } catch {
                throw GatewayError(.storage, "cannot create the directory \(dir): \(error.localizedDescription)")
            }
        }
        let c = try SQLiteConnection(path: path, busyTimeout: .seconds(5))
        try c.execute("""
            CREATE TABLE IF NOT EXISTS pending (
                order_id TEXT PRIMARY KEY NOT NULL,
                body TEXT NOT NULL,
                created_at INTEGER NOT NULL
            );
            """)
        connection = Mutex(c)
    }

    /// Opens the store in a data directory.
    public convenience init(dataDirectory: String) throws(GatewayError) {
        try self.init(path: (dataDirectory as NSString).appendingPathComponent(Self.fileName))
    }

    /// Writes (or replaces) a pending payment; durable when it returns.
    public func save(_ payment: PendingPayment) throws(GatewayError) {
        let body: String
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            body = String(decoding: try encoder.encode(payment), as: UTF8.self)
        } catch {
            throw GatewayError(.storage, "cannot encode the pending payment: \(error)")
        }
        _ = try connection.withLock { c throws(GatewayError) in
            try c.run("INSERT OR REPLACE INTO pending (order_id, body, created_at) VALUES (?, ?, ?)",
                      [.text(payment.orderId), .text(body), .integer(Int64(payment.createdAt.timeIntervalSince1970 * 1000))])
        }
    }

    /// Forgets a pending payment (its outcome is known). Returns whether it was there.
    @discardableResult
    public func remove(orderId: String) throws(GatewayError) -> Bool {
        try connection.withLock { c throws(GatewayError) in
            try c.run("DELETE FROM pending WHERE order_id = ?", [.text(orderId)]) > 0
        }
    }

    /// The pending payment of an order, if any.
    public func get(orderId: String) throws(GatewayError) -> PendingPayment? {
        let rows = try connection.withLock { c throws(GatewayError) in
            try c.query("SELECT body FROM pending WHERE order_id = ?", [.text(orderId)])
        }
        return try rows.first.map { row throws(GatewayError) in try Self.decode(row[0]) }
    }

    /// Every pending payment, oldest first.
    public func all() throws(GatewayError) -> [PendingPayment] {
        let rows = try connection.withLock { c throws(GatewayError) in
            try c.query("SELECT body FROM pending ORDER BY created_at, order_id")
        }
        var out: [PendingPayment] = []
        for row in rows { out.append(try Self.decode(row[0])) }
        return out
    }

    private static func decode(_ value: SQLValue) throws(GatewayError) -> PendingPayment {
        guard let text = value.string else { throw GatewayError(.corruptLedger, "a pending payment row has no body") }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(PendingPayment.self, from: Data(text.utf8))
        } catch {
            throw GatewayError(.corruptLedger, "a pending payment row cannot be read: \(error)")
        }
    }
}
