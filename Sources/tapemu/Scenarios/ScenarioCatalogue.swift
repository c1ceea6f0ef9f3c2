import PaymentGateway
import TapToPay

/// One scenario of `tapemu scenarios`: a payment meeting one error or unclear outcome of the
/// seeds, how tapemu makes it happen, what the seed tells the integrator to do, and the truth.
/// The catalogue (`scenarios list`) is printed from these values, and `scenarios run` plays
/// exactly these values: the list cannot say something the run does not do.
struct Scenario: Sendable {
    /// The SDK face the terminal uses.
    enum Face: String, Sendable { case monei }

    /// What the terminal meets (``ScenarioPlayer`` turns each field into the payment's configuration).
    struct Setup: Sendable {
        /// A built-in virtual card profile (`tapemu cards`), or nil: no card is ever presented.
        var card: String? = "visa-qvsdc"
        var amount: Int = 1000
        /// The in-process fault on the authorisation (`pay --gateway-fault`).
        var fault: GatewayFault? = nil
        var gatewayTimeout: Duration = .seconds(10)
        var cardWait: Duration = .seconds(5)
        var location: FixedLocationProvider = FixedLocationProvider()
        var locationFix: Duration = .seconds(15)
        var acceptsTerms = true
        var pin: ScriptedPINProvider.Answer = .cancel
        var supported = true
        var token: TokenKind = .valid
        /// Whether this SDK version is blocked by the gateway (embedded gateway only).
        var sdkBlocked = false
        /// The user's cancel on the payment sheet while waiting for the card.
        var cancelOnSheet = false
        /// The app's task is cancelled once the card is being read.
        var cancelTaskWhileReading = false
    }

    enum TokenKind: String, Sendable {
        case valid, expired, unreadable
        /// `prepare` is never called.
        case none
    }

    /// What the SDK hands the app: a result, or the seed's error (its code: `outcomeUnknown`,
    /// `paymentFailed.cardDeclined`, …).
    enum SDKOutcome: Sendable, Hashable, CustomStringConvertible {
        case approved, declined
        case error(String)
        var description: String {
            switch self {
            case .approved: "approved"
            case .declined: "declined"
            case .error(let code): code
            }
        }
        /// What the app tells its backend (the contract's `outcome`).
        var appOutcome: String {
            switch self {
            case .approved: "approved"
            case .declined: "declined"
            case .error(let code): code == "outcomeUnknown" ? "outcomeUnknown" : "failed"
            }
        }
    }

    /// The truth the scenario must produce in the gateway's ledger.
    enum Truth: String, Sendable {
        /// An approved sale of this order holds the card's money.
        case charged
        /// The ledger holds this order's sale, declined: no money.
        case declinedInLedger = "declined in the ledger"
        /// The request never reached the ledger: nothing holds this order.
        case nothingRecorded = "nothing recorded"
        /// The payment never started: nothing was sent.
        case nothingSent = "nothing sent"
    }

    var name: String
    var face: Face = .monei
    /// The seed and the place in it (the seeds are single-line pages: the section anchor and the row).
    var seed: String
    /// How tapemu makes it happen, for people.
    var how: String
    /// What the seed tells the integrator to do.
    var integratorAction: String
    var setup: Setup
    var sdk: SDKOutcome
    var truth: Truth
    /// The webhook fault crossed with it (``WebhookCross``).
    var webhook: WebhookCross = .asIs

    /// The backend's conclusions graded as right once it has settled.
    var acceptedStates: [String] {
        switch truth {
        case .charged: return ["paid"]
        case .declinedInLedger: return ["not_paid"]
        // After outcomeUnknown with nothing in the ledger, step 4: only MONEI support can say that
        // no payment was received; until the backend has asked, pending is right, and not_paid is
        // the truth.
        case .nothingSent, .nothingRecorded:
            return sdk == .error("outcomeUnknown") ? ["pending", "not_paid"] : ["not_paid"]
        }
    }

    /// Whether it needs the embedded gateway (an expired token or a blocked SDK version is made there).
    var needsEmbeddedGateway: Bool { setup.token == .expired || setup.sdkBlocked }

    /// Whether the run needs the merchant API key to play it (a webhook signed with it, stale).
    var needsAPIKey: Bool { webhook == .stale }

    /// This scenario crossed with a webhook fault: `NAME+CROSS`.
    func crossed(_ cross: WebhookCross) -> Scenario {
        var s = self
        s.name += "+" + cross.rawValue
        s.how += cross.how
        s.seed += cross.seedStep
        s.webhook = cross
        return s
    }
}

/// Every scenario `tapemu scenarios` knows, in the order they are listed and run.
enum ScenarioCatalogue {
    static let seed000 = "seed 000"

    static let all: [Scenario] = moneiResults + moneiErrors + moneiFailureCodes + moneiUnclear + webhookCrosses

    /// The webhook faults crossed with the scenarios where they change what the backend must do:
    /// a charge whose webhook never comes (found by step 3), a duplicate (counted once), and a
    /// forged or replayed SUCCEEDED where nothing was charged (refused).
    static let webhookCrosses: [Scenario] = [
        ("approved", WebhookCross.neverDelivered), ("unknown-lost-answer-approved", .neverDelivered),
        ("approved", .duplicated),
        ("unknown-no-answer", .forged), ("declined-insufficient-funds", .forged),
        ("unknown-no-answer", .stale), ("declined-insufficient-funds", .stale),
    ].map { name, cross in (moneiResults + moneiUnclear).first { $0.name == name }!.crossed(cross) }

    static func named(_ name: String) -> Scenario? { all.first { $0.name == name } }

    static let moneiResults: [Scenario] = [
        Scenario(name: "approved", seed: "\(seed000) #handle-errors: `show(result)`",
                 how: "virtual card visa-qvsdc, amount 1000: approved 00",
                 integratorAction: "Show the result; the signed webhook confirms it.",
                 setup: .init(), sdk: .approved, truth: .charged),
        Scenario(name: "declined-insufficient-funds", seed: "\(seed000) #declined: Declined payments are not errors",
                 how: "amount ending in 51: the issuer declines 51 (E221)",
                 integratorAction: "Not an error: the payment is in MONEI, declined. Ask for a different card and start a new payment.",
                 setup: .init(amount: 1051), sdk: .declined, truth: .declinedInLedger),
        Scenario(name: "declined-do-not-honour", seed: "\(seed000) #declined: Declined payments are not errors",
                 how: "amount ending in 54: the issuer declines 05 (E514)",
                 integratorAction: "Not an error: the payment is in MONEI, declined. Ask for a different card and start a new payment.",
                 setup: .init(amount: 1054), sdk: .declined, truth: .declinedInLedger),
    ]

    static let moneiErrors: [Scenario] = [
        Scenario(name: "not-supported", seed: "\(seed000) #errors row `notSupported`",
                 how: "the emulated device does not support Tap to Pay", integratorAction: "Hide Tap to Pay on iPhone. No payment occurred.",
                 setup: .init(supported: false), sdk: .error("notSupported"), truth: .nothingSent),
        Scenario(name: "location-denied", seed: "\(seed000) #errors row `locationDenied`",
                 how: "location access denied", integratorAction: "Tell the user to allow location access in Settings, then try again. No payment occurred.",
                 setup: .init(location: FixedLocationProvider(state: .denied)), sdk: .error("locationDenied"), truth: .nothingSent),
        Scenario(name: "terms-declined", seed: "\(seed000) #errors row `termsDeclined`",
                 how: "the merchant declines Apple's terms", integratorAction: "Tell the user that the terms are necessary. No payment occurred.",
                 setup: .init(acceptsTerms: false), sdk: .error("termsDeclined"), truth: .nothingSent),
        Scenario(name: "invalid-argument", seed: "\(seed000) #errors row `invalidArgument`",
                 how: "amount 0", integratorAction: "Correct the value. No payment occurred.",
                 setup: .init(amount: 0), sdk: .error("invalidArgument"), truth: .nothingSent),
        Scenario(name: "token-expired", seed: "\(seed000) #errors row `tokenExpired`",
                 how: "prepare with a token that has expired (embedded gateway)",
                 integratorAction: "Get a new token from your server, call prepare, then try again. No payment occurred.",
                 setup: .init(token: .expired), sdk: .error("tokenExpired"), truth: .nothingSent),
        Scenario(name: "invalid-token", seed: "\(seed000) #errors row `invalidToken`",
                 how: "prepare with a token the SDK cannot read",
                 integratorAction: "Send only the token field; get a new token and call prepare. No payment occurred.",
                 setup: .init(token: .unreadable), sdk: .error("invalidToken"), truth: .nothingSent),
        Scenario(name: "not-prepared", seed: "\(seed000) #errors row `notPrepared`",
                 how: "acceptPayment without prepare", integratorAction: "Call prepare first. No payment occurred.",
                 setup: .init(token: .none), sdk: .error("notPrepared"), truth: .nothingSent),
        Scenario(name: "cancelled", seed: "\(seed000) #errors row `cancelled`",
                 how: "no card comes; the user cancels on the payment sheet (TapToPay.cancel())",
                 integratorAction: "No payment occurred. Start a new payment when the customer is ready.",
                 setup: .init(card: nil, cancelOnSheet: true), sdk: .error("cancelled"), truth: .nothingSent),
        Scenario(name: "sdk-upgrade-required", seed: "\(seed000) #errors row `sdkUpgradeRequired`",
                 how: "the gateway blocks this SDK version (embedded gateway)",
                 integratorAction: "Update to a newer SDK version and release your app. No payment occurred.",
                 setup: .init(sdkBlocked: true), sdk: .error("sdkUpgradeRequired"), truth: .nothingSent),
    ]

    static let moneiFailureCodes: [Scenario] = [
        Scenario(name: "failed-card-declined", seed: "\(seed000) #failure-codes row `cardDeclined`",
                 how: "virtual card offline-decline: the card declines offline (AAC)",
                 integratorAction: "Ask for a different card. No payment occurred.",
                 setup: .init(card: "offline-decline"), sdk: .error("paymentFailed.cardDeclined"), truth: .nothingSent),
        Scenario(name: "failed-reader-not-ready", seed: "\(seed000) #failure-codes row `readerNotReady`",
                 how: "no card comes within the card wait (200 ms)",
                 integratorAction: "Try again. No payment occurred.",
                 setup: .init(card: nil, cardWait: .milliseconds(200)), sdk: .error("paymentFailed.readerNotReady"),
                 truth: .nothingSent),
        Scenario(name: "failed-location-timeout", seed: "\(seed000) #failure-codes row `locationTimeout`",
                 how: "no location fix comes (the 15 s timeout, shortened to 200 ms)",
                 integratorAction: "Make sure that Location Services are on, then try again. No payment occurred.",
                 setup: .init(location: FixedLocationProvider(location: nil), locationFix: .milliseconds(200)),
                 sdk: .error("paymentFailed.locationTimeout"), truth: .nothingSent),
    ]

    static let unclearAction = "Do not retry, do not charge again with a new orderId. Show pending; wait for the signed webhook (step 2); else find the orderId with GraphQL charges (step 3); if none shows, ask MONEI support before charging again (step 4)."

    static let moneiUnclear: [Scenario] = [
        Scenario(name: "unknown-no-answer", seed: "\(seed000) #outcome-unknown: a connection error at any step",
                 how: "the authorisation never reaches the gateway; the SDK times out (500 ms)",
                 integratorAction: unclearAction,
                 setup: .init(fault: .noAnswer, gatewayTimeout: .milliseconds(500)), sdk: .error("outcomeUnknown"),
                 truth: .nothingRecorded),
        Scenario(name: "unknown-server-error", seed: "\(seed000) #outcome-unknown: a server error at any step",
                 how: "the gateway fails with a 5xx before its ledger", integratorAction: unclearAction,
                 setup: .init(fault: .serverError), sdk: .error("outcomeUnknown"), truth: .nothingRecorded),
        Scenario(name: "unknown-lost-answer-approved", seed: "\(seed000) #outcome-unknown: a connection error at any step",
                 how: "the gateway approves and records the sale, then the answer is lost", integratorAction: unclearAction,
                 setup: .init(fault: .lostAnswer), sdk: .error("outcomeUnknown"), truth: .charged),
        Scenario(name: "unknown-lost-answer-declined",
                 seed: "\(seed000) #outcome-unknown: a reply that is not a clear approval or decline; this can also occur when the card is declined",
                 how: "amount ending in 95: the issuer declines 05, then the answer is lost", integratorAction: unclearAction,
                 setup: .init(amount: 1095), sdk: .error("outcomeUnknown"), truth: .declinedInLedger),
        Scenario(name: "unknown-slow-answer", seed: "\(seed000) #outcome-unknown: a connection error at any step",
                 how: "the gateway records the approval at once and answers after 2 s; the SDK gives up at 500 ms",
                 integratorAction: unclearAction,
                 setup: .init(fault: .slow(.seconds(2)), gatewayTimeout: .milliseconds(500)), sdk: .error("outcomeUnknown"),
                 truth: .charged),
        Scenario(name: "unknown-card-read-error", seed: "\(seed000) #outcome-unknown: a card read error; #card-read-error",
                 how: "virtual card mute: the card stops answering before the request leaves", integratorAction: unclearAction,
                 setup: .init(card: "mute"), sdk: .error("outcomeUnknown"), truth: .nothingSent),
        Scenario(name: "unknown-lost-reader-session", seed: "\(seed000) #outcome-unknown: a lost reader session; #card-read-error",
                 how: "virtual card torn: the card leaves the field after the early submission", integratorAction: unclearAction,
                 setup: .init(card: "torn"), sdk: .error("outcomeUnknown"), truth: .charged),
        Scenario(name: "unknown-pin-entry-error", seed: "\(seed000) #outcome-unknown: a PIN entry error",
                 how: "virtual card visa-online-pin; the PIN pad fails", integratorAction: unclearAction,
                 setup: .init(card: "visa-online-pin", amount: 9000, pin: .fail), sdk: .error("outcomeUnknown"), truth: .nothingSent),
        Scenario(name: "unknown-cancelled-task", seed: "\(seed000) #outcome-unknown: a cancelled task",
                 how: "virtual card slow; the app's task is cancelled once the card is being read", integratorAction: unclearAction,
                 setup: .init(card: "slow", cancelTaskWhileReading: true), sdk: .error("outcomeUnknown"), truth: .nothingSent),
    ]
}
