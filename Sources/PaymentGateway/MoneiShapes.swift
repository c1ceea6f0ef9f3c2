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

    /// MONEI's refund and cancellation reasons (`PaymentRefundReason`,
    /// `PaymentCancellationReason` in monei-php-sdk lib/Model/).
    public static let reasons = ["duplicated", "fraudulent", "requested_by_customer"]
}

/// MONEI's `status` of a sale (`PaymentStatus` in monei-php-sdk lib/Model/PaymentStatus.php;
/// `ChargeStatus` in MONEI/docs docs/apis/graphql/types/enums/charge-status.mdx): approved →
/// `SUCCEEDED`, declined → `FAILED`, reversed → `CANCELED`, refunded → `REFUNDED`, refunded in
/// part → `PARTIALLY_REFUNDED`. The merchant REST, GraphQL, the dashboard and the webhook
/// body all say it this way.
public enum MoneiStatus {
    public static func of(_ p: Payment) -> String {
        switch p.state {
        case .approved: return "SUCCEEDED"
        case .declined: return "FAILED"
        case .reversed: return "CANCELED"
        case .refunded: return "REFUNDED"
        case .partiallyRefunded: return "PARTIALLY_REFUNDED"
        }
    }
}
