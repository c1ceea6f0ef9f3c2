public import Foundation

/// The values MONEI's APIs give a payment's card, shared by the merchant REST and GraphQL.
///
/// Verified against MONEI's published models: the OpenAPI `Payment-PaymentMethodCard`
/// (github.com/MONEI/monei-php-sdk, lib/Model/PaymentPaymentMethodCard.php: `brand` one of
/// visa, mastercard, diners, amex, jcb, unionpay, unknown; `expiration` an int64) and the
/// GraphQL `PaymentMethodCard` (github.com/MONEI/docs, docs/apis/graphql/types/objects/
/// payment-method-card.mdx: `expiration: AWSTimestamp` "Expiration date as unix timestamp";
/// enums/card-brand.mdx adds `discover`).
public enum MoneiCard {
    /// MONEI's brand of a ledger brand: the names it has pass through; Maestro is
    /// Mastercard's; a brand MONEI does not list (interac, cb, girocard, …) is `unknown`.
    public static func brand(_ brand: CardBrand) -> String {
        switch brand.rawValue {
        case "visa", "mastercard", "diners", "amex", "jcb", "unionpay", "discover": return brand.rawValue
        case "maestro": return "mastercard"
        default: return "unknown"
        }
    }

    /// A `YYMM` expiry as the Unix time of the last second of that month (UTC): a card is good
    /// through its expiry month. Nil when absent or not YYMM. (Which instant MONEI puts in
    /// `expiration` is not documented; this is tapemu's choice.)
    public static func expiration(_ yymm: String?) -> Int64? {
        guard let yymm, yymm.utf8.count == 4, yymm.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let yy = Int(yymm.prefix(2)), let mm = Int(yymm.suffix(2)), (1...12).contains(mm) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let next = mm == 12 ? DateComponents(year: 2000 + yy + 1, month: 1, day: 1)
                            : DateComponents(year: 2000 + yy, month: mm + 1, day: 1)
        guard let start = calendar.date(from: next) else { return nil }
        return Int64(start.timeIntervalSince1970) - 1
    }

    /// MONEI's refund reasons: `RefundPaymentRequest.refundReason` is a `PaymentRefundReason`
    /// (the official Python SDK 2.8.0, Monei/model/payment_refund_reason.py).
    public static let refundReasons = ["duplicated", "fraudulent", "requested_by_customer"]
    /// MONEI's cancellation reasons: `CancelPaymentRequest.cancellationReason` is a
    /// `PaymentCancellationReason` (payment_cancellation_reason.py), which adds `order_canceled`.
    public static let cancellationReasons = ["duplicated", "fraudulent", "requested_by_customer", "order_canceled"]
}

/// MONEI's `status` of a sale (`PaymentStatus` in monei-php-sdk lib/Model/PaymentStatus.php;
/// `ChargeStatus` in MONEI/docs docs/apis/graphql/types/enums/charge-status.mdx): approved →
/// `SUCCEEDED`, declined → `FAILED`, reversed (a cancelled authorisation too) → `CANCELED`,
/// refunded → `REFUNDED`, refunded in part → `PARTIALLY_REFUNDED`, authorised and not captured
/// → `AUTHORIZED`. The merchant REST, GraphQL, the dashboard and the webhook body all say it
/// this way.
public enum MoneiStatus {
    public static func of(_ p: Payment) -> String {
        switch p.state {
        case .approved: return "SUCCEEDED"
        case .declined: return "FAILED"
        case .reversed: return "CANCELED"
        case .refunded: return "REFUNDED"
        case .partiallyRefunded: return "PARTIALLY_REFUNDED"
        case .authorized: return "AUTHORIZED"
        }
    }
}

/// MONEI's `statusCode` of a payment: its E-codes (docs.monei.com/apis/rest/payments, "Payment
/// Status Codes"; MONEI/docs docs/apis/rest/payments.tag.mdx), mapped from the ISO 8583 answer
/// the emulated issuer gives (the ledger keeps that answer: the CoreAPI face and the transaction
/// list speak it). The one table of the mapping; docs/GATEWAY.md shows it and `tapemu gateway triggers`
/// prints both codes. Any decline code not listed is `E500`.
public enum MoneiStatusCode {
    public struct Entry: Sendable, Hashable {
        /// The emulated issuer's ISO 8583 response code (what the ledger stores).
        public var isoCode: String
        /// MONEI's code and its documented message.
        public var code: String
        public var message: String
    }

    public static let table: [Entry] = [
        Entry(isoCode: "00", code: "E000", message: "Transaction approved"),
        Entry(isoCode: "01", code: "E201", message: "Transaction declined by the card-issuing bank"),
        Entry(isoCode: "05", code: "E514", message: "Transaction declined by card issuer"),
        Entry(isoCode: "14", code: "E501", message: "Card rejected: invalid card number"),
        Entry(isoCode: "41", code: "E509", message: "Card blocked temporarily or under suspicion of fraud"),
        Entry(isoCode: "43", code: "E509", message: "Card blocked temporarily or under suspicion of fraud"),
        Entry(isoCode: "51", code: "E221", message: "Transaction declined due to insufficient funds"),
        Entry(isoCode: "54", code: "E505", message: "Card is expired"),
        Entry(isoCode: "82", code: "E515", message: "Implausible card data"),
        Entry(isoCode: "96", code: "E200", message: "Transaction failed during payment processing"),
        Entry(isoCode: "Z1", code: "E500", message: "Transaction declined during card payment process"),
    ]

    /// The entry of an ISO code not in ``table`` (a decline the table does not name).
    public static func fallback(_ isoCode: String) -> Entry {
        Entry(isoCode: isoCode, code: "E500", message: "Transaction declined during card payment process")
    }

    /// MONEI's code and message for the issuer's `isoCode`.
    public static func of(_ isoCode: String) -> Entry {
        table.first { $0.isoCode == isoCode } ?? fallback(isoCode)
    }

    /// MONEI's messages of the refusals of the merchant REST (the same table's source).
    public enum Refusal {
        public static let notPreAuthorizedCapture = (code: "E215", message: "The transaction to be captured has not been pre-authorized yet")
        public static let notPreAuthorizedCancel = (code: "E216", message: "The transaction to be canceled has not been pre-authorized yet")
        public static let alreadyCaptured = (code: "E212", message: "Transaction has already been captured")
        public static let alreadyCanceled = (code: "E213", message: "Transaction has already been canceled")
        public static let captureExceeds = (code: "E214", message: "The amount to be captured cannot exceed the pre-authorized amount")
        public static let partialCapture = (code: "E104", message: "Partial captures are not enabled in your account, please contact MONEI support")
        public static let refundExceeds = (code: "E219", message: "Refund declined due to exceeded amount")
        public static let fullyRefunded = (code: "E220", message: "Transaction has already been fully refunded")
        public static let refundNotAllowed = (code: "E225", message: "Refund not allowed")
    }
}

/// MONEI's `accountId` of a payment, which its `Payment` model requires: the account the
/// terminal's token named, else `tapemu-test-account` (a payment made without a token).
public enum MoneiAccount {
    public static let defaultId = "tapemu-test-account"
    public static func id(_ p: Payment) -> String { p.accountId ?? defaultId }
}

/// A payment as MONEI's `Payment` object, in the merchant REST's answers and in every webhook's
/// body alike (the official Python SDK 2.8.0, Monei/model/payment.py; ``MoneiStatus``,
/// ``MoneiStatusCode``, ``MoneiCard``): `statusCode` is MONEI's E-code. Never a full PAN.
///
/// tapemu adds `issuerResponseCode` (the emulated issuer's ISO 8583 answer: `00`, `51`, …)
/// everywhere, and in a webhook's body `event` (the final state announced: approved,
/// authorized, declined, reversed, canceled, captured, refunded, partiallyRefunded) and
/// `uniqueRef` (the CoreAPI reference), which MONEI's Payment does not have.
package struct MoneiPayment: Codable, Sendable {
    package struct Card: Codable, Sendable {
        package var brand: String
        package var last4: String
        /// Unix seconds (int64 in MONEI's model).
        package var expiration: Int64?
    }
    package struct PaymentMethod: Codable, Sendable {
        package var method: String
        package var card: Card
    }

    package var id: String
    package var amount: Int
    package var currency: String
    package var orderId: String
    package var accountId: String
    package var authorizationCode: String?
    package var livemode: Bool
    package var status: String
    package var statusCode: String
    package var statusMessage: String
    package var refundedAmount: Int
    package var lastRefundAmount: Int?
    package var lastRefundReason: String?
    package var cancellationReason: String?
    package var paymentMethod: PaymentMethod
    package var createdAt: Int64
    package var updatedAt: Int64
    package var issuerResponseCode: String
    /// A webhook's only (absent from the merchant REST's answers).
    package var event: String?
    package var uniqueRef: String?

    /// `p` as MONEI shows it; `lastRefundAmount` when the ledger does not hold one (the refund
    /// the merchant REST has just made).
    package init(_ p: Payment, lastRefundAmount: Int? = nil) {
        let code = MoneiStatusCode.of(p.statusCode)
        id = p.paymentId
        amount = p.amount
        currency = p.currency
        orderId = p.orderId
        accountId = MoneiAccount.id(p)
        authorizationCode = p.authorisationCode
        livemode = false
        status = MoneiStatus.of(p)
        statusCode = code.code
        statusMessage = code.message
        refundedAmount = p.refundedAmount
        self.lastRefundAmount = p.lastRefundAmount ?? lastRefundAmount
        lastRefundReason = p.lastRefundReason
        cancellationReason = p.cancellationReason
        paymentMethod = PaymentMethod(method: "card", card: Card(brand: MoneiCard.brand(p.cardBrand), last4: p.last4,
                                                                 expiration: MoneiCard.expiration(p.expiry)))
        createdAt = Int64(p.createdAt.timeIntervalSince1970.rounded(.down))
        updatedAt = Int64(p.updatedAt.timeIntervalSince1970.rounded(.down))
        issuerResponseCode = p.statusCode
    }

    /// The body of the webhook that announces `event` of the sale `p`.
    package init(webhookOf p: Payment, event: WebhookEvent) {
        self.init(p)
        self.event = event.rawValue
        uniqueRef = p.uniqueRef
    }
}

/// The merchant API key: `tpk_test_` and 64 hex digits of the ledger's `merchant_api_key`
/// setting (made once per ledger). It authenticates the merchant REST and GraphQL, and its
/// UTF-8 bytes are the HMAC key of every webhook signature (`MONEI-Signature`), as MONEI signs
/// with the account's API key and its official SDKs' `verifySignature` check.
public enum MerchantAPIKey {
    /// The ledger setting that holds the key's 32 random bytes.
    public static let settingName = "merchant_api_key"
    public static func text(_ secret: [UInt8]) -> String { "tpk_test_" + Encoding.hex(secret) }
}
