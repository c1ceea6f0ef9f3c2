/// The result of a payment that reached the gateway and got a clear answer.
///
/// A declined result is **not** an error (seed `000`): the card was read, the issuer declined,
/// and the payment exists in the gateway with its `paymentId`; the reason is in
/// ``statusMessage``. Ask for a different card and start a new payment.
public struct PaymentResult: Hashable, Sendable, Codable {
    public enum Status: String, Hashable, Sendable, Codable {
        case approved
        case declined
    }

    public var paymentId: String
    public var status: Status
    /// The decline reason (or the approval message).
    public var statusMessage: String?
    /// `visa`, `mastercard`, `amex`, …
    public var cardBrand: String?
    public var last4: String?
    public var orderId: String

    public init(paymentId: String, status: Status, statusMessage: String?, cardBrand: String?,
                last4: String?, orderId: String) {
        self.paymentId = paymentId
        self.status = status
        self.statusMessage = statusMessage
        self.cardBrand = cardBrand
        self.last4 = last4
        self.orderId = orderId
    }
}
