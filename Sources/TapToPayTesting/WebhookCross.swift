/// A webhook fault crossed with a scenario, where it changes what a backend must do to reach the
/// truth (seed 000 step 2: wait for the *signed* webhook).
public enum WebhookCross: String, Sendable, CaseIterable {
    /// The gateway's webhooks reach the backend as they are.
    case asIs = ""
    /// Never delivered: the backend must find the order with the charges query (step 3).
    case neverDelivered = "webhook-never-delivered"
    /// Each webhook arrives twice: recorded once (the amount is not counted twice).
    case duplicated = "webhook-duplicated"
    /// Each webhook arrives 3 s late (after the app's report and the backend's first look): a
    /// backend that takes no webhook for "not paid" calls a charge not paid.
    case late = "webhook-late"
    /// Besides the real ones, a webhook saying SUCCEEDED for the order with a signature that is
    /// not the API key's: refused.
    case forged = "webhook-forged"
    /// Besides the real ones, a webhook saying SUCCEEDED signed with the API key but 10 minutes
    /// old (a replay): refused.
    case stale = "webhook-stale"
    /// A payment's webhooks arrive in the reverse order of its events (its first is held until its
    /// next has been delivered): the backend must keep the payment's latest state, not the last
    /// webhook received.
    case outOfOrder = "webhook-out-of-order"

    /// How late a `webhook-late` webhook arrives.
    public static let lateBy: Duration = .seconds(3)

    public var how: String {
        switch self {
        case .asIs: ""
        case .neverDelivered: "; the webhook is never delivered"
        case .duplicated: "; every webhook is delivered twice"
        case .late: "; every webhook is delivered \(Int(WebhookCross.lateBy.components.seconds)) s late"
        case .forged: "; a forged webhook (SUCCEEDED, signature not the API key's) reaches the backend"
        case .stale: "; a webhook saying SUCCEEDED, signed with the API key 10 minutes ago, reaches the backend"
        case .outOfOrder: "; the payment's webhooks arrive out of order: its first (SUCCEEDED) after its next (REFUNDED)"
        }
    }

    public var seedStep: String {
        switch self {
        case .asIs: ""
        case .neverDelivered, .late: "; step 3: if no webhook arrives, find the orderId with GraphQL charges"
        case .duplicated, .forged, .stale: "; step 2: the signed webhook (#webhook: verify MONEI-Signature)"
        case .outOfOrder: "; step 2: the signed webhook — the payment's latest state holds, whatever order its webhooks arrive in"
        }
    }
}
