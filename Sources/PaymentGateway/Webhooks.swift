public import CodedErrors
public import Foundation
import Cryptography

/// The final state a webhook announces.
public enum WebhookEvent: String, Sendable, Hashable, Codable, CaseIterable {
    case approved
    case declined
    case reversed
    case refunded
    /// A refund that leaves part of the sale standing.
    case partiallyRefunded
    /// An authorisation only (MONEI `transactionType: AUTH`) approved: the funds are held.
    case authorized
    /// An authorisation captured: the payment is now SUCCEEDED.
    case captured
    /// An authorisation cancelled through MONEI's cancel: the payment is now CANCELED.
    case canceled
}

extension WebhookEvent {
    /// The event of a sale just recorded: `approved`, `authorized` (an AUTH approved) or `declined`.
    public static func ofNewSale(_ sale: Payment) -> WebhookEvent {
        guard sale.status == .approved else { return .declined }
        return sale.captured ? .approved : .authorized
    }
}

/// One webhook in the gateway's outbox: the raw JSON body and its `MONEI-Signature` header,
/// computed when the final state was recorded (in the same transaction).
public struct Webhook: Sendable, Hashable {
    /// Outbox order (increasing).
    public var id: Int64
    /// The sale the webhook is about.
    public var paymentId: String
    public var orderId: String
    public var event: WebhookEvent
    /// The payment's `callbackUrl`.
    public var url: String
    /// The raw body, exactly as it must be sent (the signature covers these bytes).
    public var body: String
    /// The value of the `MONEI-Signature` header: `t=<unix>,v1=<hex HMAC-SHA256>`, signed when
    /// the state was recorded. ``WebhookDeliverer`` signs each attempt again at its own time.
    public var signature: String
    public var createdAt: Date
    /// When a delivery succeeded; nil while pending.
    public var deliveredAt: Date?
    public var attempts: Int
    public var lastError: String?

    /// The header that carries ``signature``.
    public static let signatureHeaderName = "MONEI-Signature"
}

/// A reason a webhook signature does not verify. Tests compare ``code`` only.
public struct WebhookSignatureError: PlainCodedError {
    public typealias Code = ErrorCode<WebhookSignatureError>
    public let core: ErrorCore<Code>
    public init(core: ErrorCore<Code>) { self.core = core }

    public var description: String { "\(code): \(reason)" }
}

extension ErrorCode<WebhookSignatureError> {
    /// No `MONEI-Signature` header, or an empty one.
    public static var missingHeader: Self { Self("missingHeader") }
    /// The header is not `key=value` pairs separated by commas, or its `t` is missing, not
    /// a whole number of seconds, or given twice.
    public static var malformedHeader: Self { Self("malformedHeader") }
    /// `t` is further from now than the tolerance (a replayed or delayed delivery).
    public static var staleTimestamp: Self { Self("staleTimestamp") }
    /// No `v1` signature matches the body under the secret (or the header has none).
    public static var noMatchingSignature: Self { Self("noMatchingSignature") }
    /// The signature holds, but the body is not strict JSON (a key named twice in one
    /// object, which parsers read differently): `tapemu webhook verify` refuses it.
    public static var malformedBody: Self { Self("malformedBody") }
}

/// Webhook signatures as MONEI makes them: header `MONEI-Signature: t=<unix>,v1=<hex>`, where
/// the hex is HMAC-SHA256 under the account's secret of `"<t>.<raw body>"`.
public enum WebhookSignature {
    /// The default tolerance between the header's `t` and the receiver's clock.
    public static let defaultTolerance: Duration = .seconds(300)

    /// The header value for `body` signed at `timestamp` (unix seconds).
    public static func header(body: some Collection<UInt8>, secret: some Collection<UInt8>, timestamp: Int64) -> String {
        "t=\(timestamp),v1=\(signature(body: body, secret: secret, timestamp: timestamp))"
    }

    /// The hex HMAC-SHA256 of `"<timestamp>.<body>"`.
    public static func signature(body: some Collection<UInt8>, secret: some Collection<UInt8>, timestamp: Int64) -> String {
        let message = Array("\(timestamp).".utf8) + Array(body)
        return Encoding.hex(Crypto.hmacSHA256(key: secret, message: message))
    }

    /// Verifies a received webhook. `header` is the `MONEI-Signature` value (nil when absent),
    /// `body` the raw body bytes as received.
    ///
    /// - The header is comma-separated `key=value` pairs; spaces around them are ignored.
    /// - Exactly one `t`, a whole number of unix seconds, within `tolerance` of `now` (either
    ///   way), else ``WebhookSignatureError/Code/staleTimestamp``.
    /// - Any number of `v1` values; one must match (constant-time compare). Other schemes
    ///   (`v0`, `v2`, …) and unknown keys are ignored.
    /// - Returns: the header's timestamp.
    @discardableResult
    public static func verify(header: String?, body: some Collection<UInt8>, secret: some Collection<UInt8>,
                              tolerance: Duration = defaultTolerance,
                              now: Date = Date()) throws(WebhookSignatureError) -> Int64 {
        guard let header, !header.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw WebhookSignatureError(.missingHeader, "no \(Webhook.signatureHeaderName) header")
        }
        var timestamp: Int64?
        var candidates: [[UInt8]] = []
        for part in header.split(separator: ",", omittingEmptySubsequences: false) {
            let item = part.trimmingCharacters(in: .whitespaces)
            guard let eq = item.firstIndex(of: "="), eq != item.startIndex else {
                throw WebhookSignatureError(.malformedHeader, "an element of the header is not key=value")
            }
            let key = item[..<eq], value = item[item.index(after: eq)...]
            switch key {
            case "t":
                guard timestamp == nil else {
                    throw WebhookSignatureError(.malformedHeader, "the header gives t twice")
                }
                guard !value.isEmpty, value.allSatisfy({ $0.isASCII && $0.isNumber }), let t = Int64(value) else {
                    throw WebhookSignatureError(.malformedHeader, "t is not a whole number of unix seconds")
                }
                timestamp = t
            case "v1":
                // A v1 that is not 64 hex digits cannot match; it is skipped like a wrong one.
                if value.utf8.count == 64, let bytes = Encoding.unhex(value) { candidates.append(bytes) }
            default:
                continue   // v0, v2, …: schemes this receiver does not know.
            }
        }
        guard let timestamp else { throw WebhookSignatureError(.malformedHeader, "the header has no t") }
        let nowSeconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let toleranceSeconds = tolerance.components.seconds
        let (skew, overflow) = nowSeconds.subtractingReportingOverflow(timestamp)
        guard !overflow, skew.magnitude <= toleranceSeconds.magnitude else {
            throw WebhookSignatureError(.staleTimestamp,
                                        "t is outside the tolerance of \(toleranceSeconds) s from now")
        }
        let expected = Crypto.hmacSHA256(key: secret, message: Array("\(timestamp).".utf8) + Array(body))
        var matched = false
        for c in candidates where Crypto.constantTimeEqual(c, expected) { matched = true }
        guard matched else {
            throw WebhookSignatureError(.noMatchingSignature,
                                        candidates.isEmpty ? "the header has no v1 signature"
                                                           : "no v1 signature matches the body")
        }
        return timestamp
    }

    /// ``verify(header:body:secret:tolerance:now:)`` for a body held as a string (its UTF-8).
    @discardableResult
    public static func verify(header: String?, body: String, secret: some Collection<UInt8>,
                              tolerance: Duration = defaultTolerance,
                              now: Date = Date()) throws(WebhookSignatureError) -> Int64 {
        try verify(header: header, body: Array(body.utf8), secret: secret, tolerance: tolerance, now: now)
    }
}

extension MoneiPayment {
    /// The JSON of a webhook's body: the sale as it stands after the event. MONEI POSTs the
    /// payment to its `callbackUrl` and its SDKs' `verifySignature` return that payment
    /// (https://docs.monei.com/guides/verify-signature: `payment.id`, `payment.status ===
    /// PaymentStatus.SUCCEEDED`), so the body is MONEI's `Payment` with tapemu's fields.
    func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings and integers cannot fail.
        let data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
