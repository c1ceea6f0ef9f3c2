public import Foundation
import BERTLV
import PaymentRules

/// One line of the served gateway's request log (`tapemu gateway logs`): a request and its
/// answer, or one webhook delivery attempt. Kept in the ledger (SQLite schema version 5,
/// PostgreSQL version 4), so every server of a shared ledger writes it and any process reads it.
///
/// What a line may hold is decided here, once (``init(at:kind:method:target:status:durationMs:requestId:orderId:detail:)``):
/// the target without its query string or user info (a dashboard URL's `?key=`, a callback
/// URL's token never reach it), a detail of at most ``maxDetail`` characters with every
/// PAN-like digit run masked (order ids stay as given: README's rule); never a header or a
/// body, so never an API key, a token, a signature or a card number.
public struct RequestLogEntry: Sendable, Hashable {
    public enum Kind: String, Sendable, CaseIterable {
        /// A request to the served gateway and its answer.
        case request
        /// One delivery attempt of a webhook to its callbackUrl.
        case webhook
    }

    /// The ledger's cursor: increasing in commit order (0 before it is stored).
    public var id: Int64
    /// When the request arrived (the attempt started).
    public var at: Date
    public var kind: Kind
    public var method: String
    /// The path (a request) or the callback URL (a webhook), without query string.
    public var target: String
    /// The HTTP status answered (received); nil: no answer (closed without one, or the
    /// receiver did not answer).
    public var status: Int?
    public var durationMs: Int
    /// The request's `X-Request-Id` (requests only).
    public var requestId: String?
    public var orderId: String?
    /// The answer's error code and message, or the webhook's event, attempt and error.
    public var detail: String?

    /// The longest detail kept.
    public static let maxDetail = 300
    /// The rows a ledger keeps: each write prunes the oldest beyond this, so a long run or a
    /// flood of requests cannot grow the log without end (about 200 bytes a row).
    public static let defaultBound = 10_000

    public init(id: Int64 = 0, at: Date, kind: Kind, method: String, target: String, status: Int?, durationMs: Int,
                requestId: String? = nil, orderId: String? = nil, detail: String? = nil) {
        self.id = id
        self.at = at
        self.kind = kind
        self.method = String(method.prefix(16))
        self.target = Self.sanitisedTarget(target)
        self.status = status
        self.durationMs = max(0, durationMs)
        self.requestId = requestId.map { String($0.prefix(64)) }
        let order = orderId.map { String($0.prefix(256)) }
        self.orderId = order
        self.detail = detail.map { SensitiveData.maskedText(String($0.prefix(Self.maxDetail)), keeping: order.map { [$0] } ?? []) }
    }

    /// A path or URL without its query string, fragment or user info, at most 512 characters,
    /// digit runs that could be a card number masked.
    static func sanitisedTarget(_ text: String) -> String {
        var t = Substring(text)
        if let cut = t.firstIndex(where: { $0 == "?" || $0 == "#" }) { t = t[..<cut] }
        if let scheme = t.range(of: "://") {
            let rest = t[scheme.upperBound...]
            let hostEnd = rest.firstIndex(of: "/") ?? rest.endIndex
            if let at = rest[..<hostEnd].lastIndex(of: "@") {
                t = t[..<scheme.upperBound] + rest[rest.index(after: at)...]
            }
        }
        return SensitiveData.maskedText(String(t.prefix(512)))
    }

    /// The line of one webhook delivery attempt (written in the attempt's own transaction).
    public static func webhookAttempt(_ a: WebhookAttemptRecord, number: Int, orderId: String, event: String,
                                      url: String) -> RequestLogEntry {
        var detail = "\(event) webhook \(a.webhookId) attempt \(number)"
        if a.isExtraCopy { detail += " (extra copy)" }
        if a.delivered { detail += ": delivered" } else if let e = a.error { detail += ": \(e)" }
        if !a.delivered && !a.isExtraCopy {
            if let next = a.nextAttemptAt {
                detail += ", next try \(next.formatted(.iso8601))"
            } else if a.status.map({ (200...299).contains($0) }) != true {
                detail += ", gave up"
            }
        }
        if let f = a.fault { detail += " [fault: \(f)]" }
        let ms = Int((a.finishedAt.timeIntervalSince(a.startedAt) * 1000).rounded())
        return RequestLogEntry(at: a.startedAt, kind: .webhook, method: "POST", target: url, status: a.status,
                               durationMs: ms, orderId: orderId, detail: detail)
    }
}
