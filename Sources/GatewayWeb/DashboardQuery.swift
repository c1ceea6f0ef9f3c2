public import Foundation
public import PaymentGateway
public import HTTPServer
import PaymentRules

/// What the dashboard's list shows: the one owner of its filter (order id prefix, status,
/// dates), its totals, its pages and its CSV export — the list, the totals and the CSV all come
/// from ``matching(_:)``, so they never disagree.
///
/// - `orderId`: a prefix of the order ID, case-insensitive (Unicode case folding); also tried
///   trimmed of stray spaces. ``exact(_:)`` says which match it exactly (byte for byte: an
///   order ID is the merchant's identifier, shown as given).
/// - `status`: one of ``statuses`` (MONEI's, as the list shows them).
/// - `from`, `to`: days (`YYYY-MM-DD`, UTC, both included) or ISO 8601 times.
/// - `limit` (1 to 1000, default 50) and `offset` (0 or more): the page.
public struct DashboardQuery: Sendable, Hashable {
    public var orderId: String = ""
    public var status: String?
    public var from: Date?
    /// Exclusive: the first moment after the range.
    public var to: Date?
    public var limit = 50
    public var offset = 0

    /// The statuses a sale can show (``MoneiStatus``).
    public static let statuses = ["SUCCEEDED", "FAILED", "AUTHORIZED", "PARTIALLY_REFUNDED", "REFUNDED", "CANCELED"]
    /// The newest sales the dashboard filters (a bound on each request's work).
    public static let scanLimit = 100_000

    public struct Invalid: Error, Sendable { public var message: String }

    public init() {}

    /// Parses the query string strictly: an unknown status, a date that is not one, a page out
    /// of range is ``Invalid`` (answered 400), never ignored.
    public init(_ request: HTTPRequest, paging: Bool = true) throws(Invalid) {
        orderId = request.queryValue("orderId") ?? ""
        if let s = request.queryValue("status"), !s.isEmpty {
            guard Self.statuses.contains(s) else {
                throw Invalid(message: "status must be one of \(Self.statuses.joined(separator: ", "))")
            }
            status = s
        }
        if let f = request.queryValue("from"), !f.isEmpty { from = try Self.date(f, "from", endOfDay: false) }
        if let t = request.queryValue("to"), !t.isEmpty { to = try Self.date(t, "to", endOfDay: true) }
        if let from, let to, to <= from { throw Invalid(message: "to must not be before from") }
        guard paging else { return }
        if let l = request.queryValue("limit") {
            guard let v = Int(l), (1...1000).contains(v) else { throw Invalid(message: "limit must be 1 to 1000") }
            limit = v
        }
        if let o = request.queryValue("offset") {
            guard let v = Int(o), v >= 0, v <= Self.scanLimit else { throw Invalid(message: "offset must be 0 to \(Self.scanLimit)") }
            offset = v
        }
    }

    /// `YYYY-MM-DD` (the day's start, or with `endOfDay` the next day's start) or an ISO 8601 time.
    static func date(_ text: String, _ name: String, endOfDay: Bool) throws(Invalid) -> Date {
        let t = text.prefix(64)
        if t.count == 10, let day = try? Date.ISO8601FormatStyle().year().month().day().parse(String(t)) {
            return endOfDay ? day.addingTimeInterval(86_400) : day
        }
        if let d = try? Date.ISO8601FormatStyle().parse(String(t)) { return d }
        if let d = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(String(t)) { return d }
        throw Invalid(message: "\(name) must be a day (2026-12-03) or an ISO 8601 time, not '\(t)'")
    }

    /// Case-insensitive prefix, as typed and trimmed.
    func matchesOrder(_ id: String) -> Bool {
        let trimmed = orderId.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return true }
        let folded = id.folding(options: [.caseInsensitive], locale: nil)
        for q in Set([orderId, trimmed]) where folded.hasPrefix(q.folding(options: [.caseInsensitive], locale: nil)) {
            return true
        }
        return false
    }

    /// Every sale of `sales` the filter keeps, in their order (newest first).
    public func matching(_ sales: [Payment]) -> [Payment] {
        sales.filter { p in
            guard matchesOrder(p.orderId) else { return false }
            if let status, MoneiStatus.of(p) != status { return false }
            if let from, p.createdAt < from { return false }
            if let to, p.createdAt >= to { return false }
            return true
        }
    }

    /// The sales whose order ID is the typed one exactly (as typed or trimmed).
    public func exact(_ matches: [Payment]) -> [Payment] {
        let trimmed = orderId.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return [] }
        return matches.filter { OrderID.same($0.orderId, orderId) || OrderID.same($0.orderId, trimmed) }
    }

    /// Per currency: how many, their amount, what was refunded of it, and what stays (amount
    /// less refunds of the approved ones; a declined or reversed sale moved no money).
    public struct Total: Sendable, Hashable {
        public var currency: String
        public var count = 0
        public var amount = 0
        public var refunded = 0
        public var net = 0
    }

    public static func totals(_ sales: [Payment]) -> [Total] {
        var byCurrency: [String: Total] = [:]
        for p in sales {
            var t = byCurrency[p.currency] ?? Total(currency: p.currency)
            t.count += 1
            t.amount += p.amount
            t.refunded += p.refundedAmount
            switch MoneiStatus.of(p) {
            case "SUCCEEDED", "PARTIALLY_REFUNDED", "REFUNDED", "AUTHORIZED": t.net += p.amount - p.refundedAmount
            default: break
            }
            byCurrency[p.currency] = t
        }
        return byCurrency.values.sorted { $0.currency < $1.currency }
    }

    // MARK: CSV

    static let csvHeader = ["paymentId", "orderId", "status", "amount", "currency", "refundedAmount", "cardBrand", "last4",
                            "createdAt", "statusCode", "statusMessage"]

    /// RFC 4180: CRLF line ends; a field with a comma, a quote, CR or LF quoted, its quotes
    /// doubled. A field a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`,
    /// tab or CR: an order ID is typed by anyone) is prefixed with `'` and quoted. Amounts in
    /// minor units, as the API gives them. Never a full PAN: brand and last four.
    public static func csv(_ sales: [Payment]) -> String {
        var out = csvHeader.joined(separator: ",") + "\r\n"
        for p in sales {
            let code = MoneiStatusCode.of(p.statusCode)
            let row = [p.paymentId, p.orderId, MoneiStatus.of(p), String(p.amount), p.currency, String(p.refundedAmount),
                       p.cardBrand.rawValue, p.last4, p.createdAt.formatted(.iso8601), code.code, code.message]
            out += row.map(csvField).joined(separator: ",") + "\r\n"
        }
        return out
    }

    static func csvField(_ s: String) -> String {
        var v = s
        var quote = false
        if let first = v.unicodeScalars.first, ["=", "+", "-", "@", "\t", "\r"].contains(first) {
            v = "'" + v
            quote = true
        }
        if v.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" }) { quote = true }
        return quote ? "\"" + v.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : v
    }
}
