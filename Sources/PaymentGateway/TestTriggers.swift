/// A fault between the caller and the gateway, injected on purpose so each side of the
/// submission point can be produced on demand.
///
/// | Fault | What the gateway does | What the caller gets |
/// |-------|-----------------------|----------------------|
/// | ``none`` | answers normally | the answer |
/// | ``noAnswer`` | never receives the request: **nothing recorded** | ``GatewayError/Code/timeout`` when the caller's request timeout runs out on the injected clock |
/// | ``lostAnswer`` | handles the request as usual (records an approval or a decline, does the reversal / refund, or refuses it), then the answer is lost | ``GatewayError/Code/connectionLost`` at once |
/// | ``slow(_:)`` | handles (records) the request at once, answers after the delay | the answer (or refusal), or ``GatewayError/Code/timeout`` if the delay reaches the timeout (the request stays recorded) |
/// | ``serverError`` | fails before the ledger (HTTP 500): **nothing recorded** | ``GatewayError/Code/serverError`` at once |
public enum GatewayFault: Sendable, Hashable, CustomStringConvertible {
    case none
    case noAnswer
    case lostAnswer
    case slow(Duration)
    case serverError

    /// The delay of `slow` when a name or a trigger does not give one.
    public static let defaultSlowDelay: Duration = .seconds(5)

    /// The command-line names: `none`, `no-answer`, `lost-answer`, `slow`, `server-error`.
    public static let names = ["none", "no-answer", "lost-answer", "slow", "server-error"]

    /// A fault from its command-line name; `slow` takes `slowDelay`. Nil for an unknown name.
    public init?(name: String, slowDelay: Duration = GatewayFault.defaultSlowDelay) {
        switch name {
        case "none": self = .none
        case "no-answer": self = .noAnswer
        case "lost-answer": self = .lostAnswer
        case "slow": self = .slow(slowDelay)
        case "server-error": self = .serverError
        default: return nil
        }
    }

    /// The command-line name.
    public var name: String {
        switch self {
        case .none: return "none"
        case .noAnswer: return "no-answer"
        case .lostAnswer: return "lost-answer"
        case .slow: return "slow"
        case .serverError: return "server-error"
        }
    }

    public var description: String {
        if case .slow(let d) = self { return "slow(\(d))" }
        return name
    }
}

/// An issuer decline: an ISO 8583-style response code and its message.
public struct DeclineReason: Sendable, Hashable {
    public var statusCode: String
    public var statusMessage: String
    public init(statusCode: String, statusMessage: String) {
        self.statusCode = statusCode
        self.statusMessage = statusMessage
    }

    public static let insufficientFunds = DeclineReason(statusCode: "51", statusMessage: "Insufficient funds")
    public static let expiredCard = DeclineReason(statusCode: "54", statusMessage: "Expired card")
    public static let lostCard = DeclineReason(statusCode: "41", statusMessage: "Lost card, pick up")
    public static let stolenCard = DeclineReason(statusCode: "43", statusMessage: "Stolen card, pick up")
    public static let doNotHonour = DeclineReason(statusCode: "05", statusMessage: "Do not honour")
    /// Transaction-list code `R`.
    public static let referral = DeclineReason(statusCode: "01", statusMessage: "Refer to card issuer")
    /// Transaction-list code `E`.
    public static let systemMalfunction = DeclineReason(statusCode: "96", statusMessage: "System malfunction")
    /// The card is known to the gateway and its application cryptogram (9F26) is wrong.
    public static let cryptogramFailed = DeclineReason(
        statusCode: "82", statusMessage: "Declined: the card's cryptogram (ARQC) failed verification")
    /// The card itself declined (its cryptogram is an AAC): such a request should not come online.
    public static let cardDeclinedOffline = DeclineReason(
        statusCode: "Z1", statusMessage: "Declined: the card declined offline (AAC)")
}

/// One row of the documented test-trigger table.
public struct TestTrigger: Sendable, Hashable, CustomStringConvertible {
    public enum Match: Sendable, Hashable {
        /// The amount in minor units ends in these two digits (`amount % 100`).
        case amountEnding(Int)
        /// This test PAN (public test ranges, Luhn-valid).
        case pan(String)
    }

    public var match: Match
    /// The issuer's decline, or nil to approve.
    public var decline: DeclineReason?
    /// A fault between the terminal and the gateway, or nil for none.
    public var fault: GatewayFault?
    /// One line for people.
    public var summary: String

    public init(match: Match, decline: DeclineReason? = nil, fault: GatewayFault? = nil, summary: String) {
        self.match = match
        self.decline = decline
        self.fault = fault
        self.summary = summary
    }

    public var description: String {
        switch match {
        case .amountEnding(let n):
            let e = n < 10 ? "0\(n)" : "\(n)"
            return "amount ending in \(e): \(summary)"
        case .pan(let p): return "PAN \(p): \(summary)"
        }
    }
}

/// The embedded gateway's test triggers: how it decides, so every outcome can be produced on
/// demand. Any amount or PAN not listed is approved (`00`). A wrong cryptogram from a card whose
/// key the gateway knows is declined first (`82`); then a PAN trigger; then an amount trigger.
/// A fault given with the request (``GatewayRequestOptions/fault``) or armed
/// (``EmbeddedGateway/armFault(_:for:count:)``) replaces an amount trigger's fault.
///
/// | Amount ends in | Decision | Fault | Transaction-list code |
/// |----------------|----------|-------|-----------------------|
/// | any other | approved `00` | — | A |
/// | `51` | declined `51` insufficient funds | — | D |
/// | `52` | declined `54` expired card | — | D |
/// | `53` | declined `41` lost card | — | D |
/// | `54` | declined `05` do not honour | — | D |
/// | `55` | declined `43` stolen card | — | D |
/// | `56` | declined `01` refer to card issuer | — | R |
/// | `57` | declined `96` system malfunction | — | E |
/// | `91` | — (never arrives) | no answer: timeout, nothing recorded | none |
/// | `92` | approved `00` | host approved, answer lost | A |
/// | `93` | approved `00` | slow answer (``EmbeddedGateway/Configuration/slowAnswerDelay``) | A |
/// | `94` | — | server error 5xx, nothing recorded | none |
/// | `95` | declined `05` do not honour | host declined, answer lost | D |
///
/// | Test PAN | Decision |
/// |----------|----------|
/// | `4000000000000002` | declined `05` do not honour |
/// | `4000000000009995` | declined `51` insufficient funds |
/// | `4000000000000069` | declined `54` expired card |
/// | `4000000000009987` | declined `41` lost card |
/// | `4000000000009979` | declined `43` stolen card |
public enum TestTriggers {
    public static let all: [TestTrigger] = amountTriggers + panTriggers

    public static let amountTriggers: [TestTrigger] = [
        TestTrigger(match: .amountEnding(51), decline: .insufficientFunds, summary: "declined 51, insufficient funds"),
        TestTrigger(match: .amountEnding(52), decline: .expiredCard, summary: "declined 54, expired card"),
        TestTrigger(match: .amountEnding(53), decline: .lostCard, summary: "declined 41, lost card"),
        TestTrigger(match: .amountEnding(54), decline: .doNotHonour, summary: "declined 05, do not honour"),
        TestTrigger(match: .amountEnding(55), decline: .stolenCard, summary: "declined 43, stolen card"),
        TestTrigger(match: .amountEnding(56), decline: .referral, summary: "declined 01, referral (list code R)"),
        TestTrigger(match: .amountEnding(57), decline: .systemMalfunction,
                    summary: "declined 96, system malfunction (list code E)"),
        TestTrigger(match: .amountEnding(91), fault: .noAnswer,
                    summary: "no answer: the request never arrives, nothing recorded, the caller times out"),
        TestTrigger(match: .amountEnding(92), fault: .lostAnswer,
                    summary: "host approved, then the answer is lost (connection lost)"),
        TestTrigger(match: .amountEnding(93), fault: .slow(GatewayFault.defaultSlowDelay),
                    summary: "approved, answered slowly (the configured slow-answer delay)"),
        TestTrigger(match: .amountEnding(94), fault: .serverError,
                    summary: "server error 5xx before the ledger, nothing recorded"),
        TestTrigger(match: .amountEnding(95), decline: .doNotHonour, fault: .lostAnswer,
                    summary: "host declined 05, then the answer is lost (connection lost)"),
    ]

    public static let panTriggers: [TestTrigger] = [
        TestTrigger(match: .pan("4000000000000002"), decline: .doNotHonour, summary: "declined 05, do not honour"),
        TestTrigger(match: .pan("4000000000009995"), decline: .insufficientFunds, summary: "declined 51, insufficient funds"),
        TestTrigger(match: .pan("4000000000000069"), decline: .expiredCard, summary: "declined 54, expired card"),
        TestTrigger(match: .pan("4000000000009987"), decline: .lostCard, summary: "declined 41, lost card"),
        TestTrigger(match: .pan("4000000000009979"), decline: .stolenCard, summary: "declined 43, stolen card"),
    ]

    /// The amount trigger for `amount`, if any.
    public static func trigger(forAmount amount: Int) -> TestTrigger? {
        let ending = amount % 100
        return amountTriggers.first { $0.match == .amountEnding(ending) }
    }

    /// The PAN trigger for `digits`, if any.
    public static func trigger(forPAN digits: String) -> TestTrigger? {
        panTriggers.first { $0.match == .pan(digits) }
    }
}
