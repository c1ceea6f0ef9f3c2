public import Foundation

/// Seed 000's step 4, emulated: "If no payment shows, this does not prove that the card was not
/// charged. Contact MONEI support with the orderId before you charge the customer again."
/// Support answers from the ledger's authority, and only once the settle window has passed since
/// the last attempt it knows of (a request still on its way could yet land).
public struct SupportDesk: Sendable {
    /// Support's answer about one order.
    public enum Answer: Sendable, Hashable {
        /// A sale holds the order's money (approved, not reversed): do not charge again.
        case paymentHolds(paymentId: String, amount: Int, currency: String, last4: String)
        /// No payment was received for the order (nothing, or only declines, reversals): safe to
        /// charge again, and a pending record of it may be closed with this answer as its reason.
        case noPaymentReceived(declinedPaymentIds: [String])
        /// Too early to say: the last attempt was less than the settle window ago.
        case askAgainLater(after: Date)
    }

    public var gateway: any Gateway
    /// How long after an attempt support waits before saying that nothing was received.
    public var settleWindow: Duration

    public init(gateway: any Gateway, settleWindow: Duration = .seconds(60)) {
        self.gateway = gateway
        self.settleWindow = settleWindow
    }

    /// Support's answer for `orderId` at `now`. `lastAttempt`: when the device last tried the
    /// order, if it knows (its pending record); the ledger's own records count too.
    public func ask(orderId: String, lastAttempt: Date?, now: Date = Date()) async throws(GatewayError) -> Answer {
        let sales = try await gateway.charges(orderId: orderId, options: GatewayRequestOptions(fault: GatewayFault.none))
            .filter { $0.kind == .sale }
        if let held = sales.first(where: { $0.status == .approved && !$0.reversed }) {
            return .paymentHolds(paymentId: held.paymentId, amount: held.amount, currency: held.currency, last4: held.last4)
        }
        let latest = ([lastAttempt].compactMap { $0 } + sales.map(\.updatedAt)).max()
        let window = Double(settleWindow.components.seconds) + Double(settleWindow.components.attoseconds) / 1e18
        if let latest, now < latest.addingTimeInterval(window) {
            return .askAgainLater(after: latest.addingTimeInterval(window))
        }
        return .noPaymentReceived(declinedPaymentIds: sales.map(\.paymentId))
    }
}
