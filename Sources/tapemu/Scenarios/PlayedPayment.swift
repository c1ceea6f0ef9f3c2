import TapToPayTesting

/// What one played payment ended with, and the truth beside it, as the run grades it: the
/// library's ``ScenarioPayment`` and, on the CoreAPI face, the sale's recovery material.
struct PlayedPayment: Sendable {
    var orderId: String
    var amount: Int
    var sdk: Scenario.SDKOutcome
    var paymentId: String?
    /// Whether the request started leaving, and whether the ledger holds its approved sale.
    var submitted: Bool
    var charged: Bool
    /// Whether the ledger holds any sale of this order (approved or declined).
    var recorded: Bool
    /// Whether the approved sale was then refunded in full (``Scenario/Setup/refundAfterApproval``).
    var refunded = false
    /// CoreAPI: the terminal's token, the card and the earlier sale (nil on the MONEI face).
    var core: CorePlay? = nil
    /// What the SDK said under its answer: the MONEI face's cause (the gateway's error, the
    /// card's…), the CoreAPI callbacks' descriptions. Never a PAN (the SDKs mask it).
    var detail: String? = nil

    var truth: Scenario.Truth {
        ScenarioPayment(orderId: orderId, amount: amount, sdk: sdk, paymentId: paymentId, submitted: submitted,
                        charged: charged, recorded: recorded, refunded: refunded).truth
    }
}

extension PlayedPayment {
    init(_ p: ScenarioPayment) {
        self.init(orderId: p.orderId, amount: p.amount, sdk: p.sdk, paymentId: p.paymentId, submitted: p.submitted,
                  charged: p.charged, recorded: p.recorded, refunded: p.refunded, detail: p.detail)
    }
}
