public import PaymentGateway
public import PaymentFlow
public import TapToPay

/// One scenario of `tapemu scenarios`: a payment meeting one error or unclear outcome of the
/// seeds, how tapemu makes it happen, what the seed tells the integrator to do, and the truth.
/// The catalogue (`scenarios list`) is printed from these values, and `scenarios run` plays
/// exactly these values: the list cannot say something the run does not do.
public struct Scenario: Sendable {
    /// The SDK face the terminal uses.
    public enum Face: String, Sendable {
        /// MONEI's `TapToPay` (seed 000), paying through the run's gateway.
        case monei
        /// The CoreAPI listener SDK (seeds 002/003), paying through the gateway's terminal API
        /// (the served one: the backend's recovery lists and reverses with the terminal's token,
        /// and a terminal acts only on the orders it sent itself).
        case coreapi
    }

    /// A sale of the same orderId taken earlier on the same terminal (an order id the app
    /// reused), approved and standing: what seed 003's amount and card-suffix check is for.
    public struct PriorSale: Sendable {
        public init(card: String, amount: Int) {
            self.card = card
            self.amount = amount
        }
        public var card: String
        public var amount: Int
    }

    /// What the terminal meets (``ScenarioPlayer`` turns each field into the payment's configuration).
    public struct Setup: Sendable {
        /// A built-in virtual card profile (`tapemu cards`), or nil: no card is ever presented.
        public var card: String? = "visa-qvsdc"
        public var amount: Int = 1000
        /// The in-process fault on the authorisation (`pay --gateway-fault`).
        public var fault: GatewayFault? = nil
        /// How long the terminal waits for the gateway: long where the scenario is not about a
        /// timeout, so a loaded machine answers late rather than makes another scenario happen.
        public var gatewayTimeout: Duration = .seconds(60)
        public var cardWait: Duration = .seconds(5)
        public var location: FixedLocationProvider = FixedLocationProvider()
        public var locationFix: Duration = .seconds(15)
        public var acceptsTerms = true
        public var pin: ScriptedPINProvider.Answer = .cancel
        public var supported = true
        public var token: TokenKind = .valid
        /// Whether this SDK version is blocked by the gateway (embedded gateway only).
        public var sdkBlocked = false
        /// The user's cancel on the payment sheet while waiting for the card.
        public var cancelOnSheet = false
        /// The app's task is cancelled once the card is being read.
        public var cancelTaskWhileReading = false
        /// The terminal's configured currency (another than its reader's: the payment cannot start).
        public var currency = "EUR"
        /// Another payment (another order, the same card) is in progress on this terminal when
        /// this order's `acceptPayment` comes (`busy`).
        public var busyWithAnotherPayment = false
        /// CoreAPI: the emulated iPhone's passcode is off (an `APPLE_TTP_` device error at initialise).
        public var passcodeDisabled = false
        /// CoreAPI: an earlier sale of this orderId on this terminal (seed 003's check).
        public var priorSale: PriorSale? = nil
        /// Once approved, the merchant refunds the sale in full (MONEI's refund, as from the
        /// Dashboard): the payment's SUCCEEDED webhook is followed by its REFUNDED one.
        public var refundAfterApproval = false
    }

    public enum TokenKind: String, Sendable {
        case valid, expired, unreadable
        /// `prepare` is never called.
        case none
    }

    /// What the SDK hands the app: a result, or the seed's error (its code: `outcomeUnknown`,
    /// `paymentFailed.cardDeclined`, …).
    public enum SDKOutcome: Sendable, Hashable, CustomStringConvertible {
        case approved, declined
        case error(String)
        public var description: String {
            switch self {
            case .approved: "approved"
            case .declined: "declined"
            case .error(let code): code
            }
        }
        /// What the app tells its backend (the contract's `outcome`).
        public var appOutcome: String {
            switch self {
            case .approved: "approved"
            case .declined: "declined"
            case .error(let code) where code == "outcomeUnknown": "outcomeUnknown"
            // CoreAPI: onTransactionCommError, the sale unresolved (seed 002).
            case .error(let code) where code.contains("onTransactionCommError"): "commError"
            case .error: "failed"
            }
        }
    }

    /// The truth the scenario must produce in the gateway's ledger.
    public enum Truth: String, Sendable {
        /// An approved sale of this order holds the card's money.
        case charged
        /// The ledger holds this order's sale, declined: no money.
        case declinedInLedger = "declined in the ledger"
        /// The request never reached the ledger: nothing holds this order.
        case nothingRecorded = "nothing recorded"
        /// The payment never started: nothing was sent.
        case nothingSent = "nothing sent"
        /// The sale was approved, then refunded in full: no money holds the order.
        case refunded = "charged, then refunded"
    }

    public var name: String
    public var face: Face = .monei
    /// The seed and the place in it (the seeds are single-line pages: the section anchor and the row).
    public var seed: String
    /// How tapemu makes it happen, for people.
    public var how: String
    /// What the seed tells the integrator to do.
    public var integratorAction: String
    public var setup: Setup
    public var sdk: SDKOutcome
    public var truth: Truth
    /// The webhook fault crossed with it (``WebhookCross``).
    public var webhook: WebhookCross = .asIs

    /// CoreAPI: a communication error whose sale the gateway authorised — seed 002 step 4
    /// (reverse it): the right end is the sale reversed and the order not paid.
    public var expectsReversal: Bool {
        face == .coreapi && truth == .charged && sdk.description.contains("onTransactionCommError")
    }

    /// The backend's conclusions graded as right once it has settled.
    public var acceptedStates: [String] {
        if face == .coreapi {
            // The transaction list answers at once (seed 002 step 3: A, not A, or no transaction):
            // pending is never right.
            return truth == .charged && !expectsReversal ? ["paid"] : ["not_paid"]
        }
        switch truth {
        case .charged: return ["paid"]
        case .declinedInLedger, .refunded: return ["not_paid"]
        // After outcomeUnknown with nothing in the ledger, step 4: only MONEI support can say that
        // no payment was received; until the backend has asked, pending is right, and not_paid is
        // the truth.
        case .nothingSent, .nothingRecorded:
            return sdk == .error("outcomeUnknown") ? ["pending", "not_paid"] : ["not_paid"]
        }
    }

    /// When `pending` is graded right: after `outcomeUnknown` with nothing in the ledger, seed
    /// 000's steps end at step 4 — support answers "no payment received" once its settle window
    /// has passed since the attempt. Pending passes only before that.
    public var pendingRule: String? {
        guard face == .monei, sdk == .error("outcomeUnknown"), truth == .nothingSent || truth == .nothingRecorded else { return nil }
        return "pending passes only until support's settle window (--support-window) has passed since the app's report; then step 4 (ask support: GET /support/v1/orders/{orderId}) answers noPaymentReceived, and the order is not paid"
    }

    /// Whether a served gateway needs its test controls (`gateway serve --test-controls`) to
    /// make it: an expired token, a blocked SDK version, or an account of its own whose terms are
    /// not accepted yet (a served gateway's POS tokens share the merchant's one account, whose
    /// terms the first scenario accepts). The embedded gateway makes them itself.
    public var needsTestControls: Bool { setup.token == .expired || setup.sdkBlocked || !setup.acceptsTerms }

    /// Whether the run needs the merchant API key to play it (a webhook signed with it, stale).
    public var needsAPIKey: Bool { webhook == .stale }

    /// How many webhooks of the order the relay forwards before the conclusion is graded: a
    /// duplicate, or a refund's after the sale's, is graded once the backend has had them all
    /// (not when the first made the order paid).
    public var webhooksBeforeGrade: Int {
        if webhook == .neverDelivered { return 0 }
        let events = setup.refundAfterApproval ? 2 : 1
        return webhook == .duplicated ? 2 * events : events
    }

    /// This scenario crossed with a webhook fault: `NAME+CROSS`.
    public func crossed(_ cross: WebhookCross) -> Scenario {
        var s = self
        s.name += "+" + cross.rawValue
        s.how += cross.how
        s.seed += cross.seedStep
        s.webhook = cross
        return s
    }
}

/// Every scenario `tapemu scenarios` knows, in the order they are listed and run.
public enum ScenarioCatalogue {
    public static let seed000 = "seed 000"

    public static let all: [Scenario] = moneiResults + moneiLaterEvents + moneiErrors + moneiFailureCodes + moneiUnclear
        + webhookCrosses + coreAPI

    /// The webhook faults crossed with the scenarios where they change what the backend must do:
    /// a charge whose webhook never comes (found by step 3), a duplicate (counted once), and a
    /// forged or replayed SUCCEEDED where nothing was charged (refused), and a payment's webhooks
    /// out of order where its later state is the truth (a refund's before the sale's).
    public static let webhookCrosses: [Scenario] = [
        ("approved", WebhookCross.neverDelivered), ("unknown-lost-answer-approved", .neverDelivered),
        ("approved", .duplicated),
        ("approved", .late), ("unknown-lost-answer-approved", .late),
        ("unknown-no-answer", .forged), ("declined-insufficient-funds", .forged),
        ("unknown-no-answer", .stale), ("declined-insufficient-funds", .stale),
        ("approved-then-refunded", .outOfOrder),
    ].map { name, cross in (moneiResults + moneiLaterEvents + moneiUnclear).first { $0.name == name }!.crossed(cross) }

    public static func named(_ name: String) -> Scenario? { all.first { $0.name == name } }

    public static let moneiResults: [Scenario] = [
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

    /// A payment whose state changes after the SDK's answer: its webhooks then say two things, and
    /// the later state is the truth (the order out-of-order delivery changes).
    public static let moneiLaterEvents: [Scenario] = [
        Scenario(name: "approved-then-refunded",
                 seed: "\(seed000) #handle-errors: `show(result)`; step 2: the signed webhook announces the payment's state",
                 how: "virtual card visa-qvsdc, amount 1000: approved 00; then the merchant refunds it in full (MONEI's refund): webhooks SUCCEEDED, then REFUNDED",
                 integratorAction: "Show the result; the payment's latest state holds: refunded in full, the order is not paid.",
                 setup: .init(refundAfterApproval: true), sdk: .approved, truth: .refunded),
    ]

    public static let moneiErrors: [Scenario] = [
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
        Scenario(name: "busy", seed: "\(seed000) #errors row `busy`",
                 how: "virtual card slow: another order's payment is being read on this terminal when this order's acceptPayment comes",
                 integratorAction: "Wait until the payment in progress ends; disable the pay button during a payment. No payment occurred for this order.",
                 setup: .init(card: "slow", busyWithAnotherPayment: true), sdk: .error("busy"), truth: .nothingSent),
        Scenario(name: "cancelled", seed: "\(seed000) #errors row `cancelled`",
                 how: "no card comes; the user cancels on the payment sheet (TapToPay.cancel())",
                 integratorAction: "No payment occurred. Start a new payment when the customer is ready.",
                 setup: .init(card: nil, cancelOnSheet: true), sdk: .error("cancelled"), truth: .nothingSent),
        Scenario(name: "sdk-upgrade-required", seed: "\(seed000) #errors row `sdkUpgradeRequired`",
                 how: "the gateway blocks this SDK version (embedded gateway)",
                 integratorAction: "Update to a newer SDK version and release your app. No payment occurred.",
                 setup: .init(sdkBlocked: true), sdk: .error("sdkUpgradeRequired"), truth: .nothingSent),
    ]

    public static let moneiFailureCodes: [Scenario] = [
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
        Scenario(name: "failed-unknown", seed: "\(seed000) #failure-codes row `unknown`",
                 how: "the terminal is configured for USD, its reader's settings give the card EUR: the payment does not start",
                 integratorAction: "Try again; if the error continues, contact MONEI. No payment occurred.",
                 setup: .init(currency: "USD"), sdk: .error("paymentFailed.unknown"), truth: .nothingSent),
    ]

    public static let unclearAction = "Do not retry, do not charge again with a new orderId. Show pending; wait for the signed webhook (step 2); else find the orderId with GraphQL charges (step 3); if none shows, ask MONEI support before charging again (step 4)."

    public static let moneiUnclear: [Scenario] = [
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

    public static let seed002 = "seed 002"
    public static let seed003 = "seed 003"
    public static let commErrorAction = "Treat the sale as unresolved; store it; when back online list the transactions by orderId (or the card's last four): code A, reverse it by its uniqueRef (isRefund NO); not A, nothing to reverse; none, the sale did not reach the gateway. Seed 003: reverse only a transaction whose amount and card suffix are the sale's."

    /// Seeds 002/003: the CoreAPI listener SDK's transaction, communication and device errors,
    /// and the recovery of a sale after a communication error. The backend is told the stored
    /// sale (amount, card's last four) and the terminal's token, and does the recovery itself
    /// through the gateway's CoreAPI REST (`GET /coreapi/v1/transactions`, `POST /coreapi/v1/reversal`).
    public static let coreAPI: [Scenario] = [
        Scenario(name: "coreapi-approved", face: .coreapi, seed: "\(seed002) #communication-errors step 3: `code` is `A`",
                 how: "CoreAPI face, virtual card visa-qvsdc, amount 1000: onSaleResponse code A",
                 integratorAction: "The sale is authorised (code A); the order is paid.",
                 setup: .init(), sdk: .approved, truth: .charged),
        Scenario(name: "coreapi-transaction-error-card-declined", face: .coreapi, seed: "\(seed002) #transaction-errors: onError:withDescription:",
                 how: "CoreAPI face, virtual card offline-decline: onError(cardDeclined) before anything is sent",
                 integratorAction: "A transaction error: no payment occurred.",
                 setup: .init(card: "offline-decline"), sdk: .error("onError.cardDeclined"), truth: .nothingSent),
        Scenario(name: "coreapi-transaction-error-no-card", face: .coreapi, seed: "\(seed002) #transaction-errors: onError:withDescription:",
                 how: "CoreAPI face, no card comes within the card wait (200 ms): onError(timeout)",
                 integratorAction: "A transaction error: no payment occurred.",
                 setup: .init(card: nil, cardWait: .milliseconds(200)), sdk: .error("onError.timeout"), truth: .nothingSent),
        Scenario(name: "coreapi-device-error-card-mute", face: .coreapi, seed: "\(seed002) #device-errors: onDeviceError:withDescription:",
                 how: "CoreAPI face, virtual card mute: onDeviceError(cardMute), then onError(cardReadFailed) before the request leaves",
                 integratorAction: "A device error: no payment occurred; the reader may need attention.",
                 setup: .init(card: "mute"), sdk: .error("onDeviceError.CARD_MUTE+onError.cardReadFailed"), truth: .nothingSent),
        Scenario(name: "coreapi-device-error-passcode", face: .coreapi, seed: "\(seed002) #device-errors: APPLE_TTP_ (a disabled passcode)",
                 how: "CoreAPI face, the emulated iPhone has no passcode: onDeviceError at initialise, the sale ends onError(deviceNotReady)",
                 integratorAction: "A device error: no payment occurred; fix the device (set a passcode) before taking payments.",
                 setup: .init(passcodeDisabled: true), sdk: .error("onDeviceError.APPLE_TTP_PASSCODE_DISABLED+onError.deviceNotReady"),
                 truth: .nothingSent),
        Scenario(name: "coreapi-comm-error-no-answer", face: .coreapi, seed: "\(seed002) #communication-errors step 3: no transaction",
                 how: "CoreAPI face: the authorisation never reaches the gateway (500 ms): onTransactionCommError",
                 integratorAction: commErrorAction,
                 setup: .init(fault: .noAnswer, gatewayTimeout: .milliseconds(500)), sdk: .error("onTransactionCommError.timeout"),
                 truth: .nothingRecorded),
        Scenario(name: "coreapi-comm-error-lost-answer-approved", face: .coreapi,
                 seed: "\(seed002) #communication-errors step 4: if we authorized the sale, reverse it",
                 how: "CoreAPI face: the gateway approves and records the sale, then the answer is lost: onTransactionCommError",
                 integratorAction: commErrorAction,
                 setup: .init(fault: .lostAnswer), sdk: .error("onTransactionCommError.networkError"), truth: .charged),
        Scenario(name: "coreapi-comm-error-lost-answer-declined", face: .coreapi,
                 seed: "\(seed002) #communication-errors step 3: `code` not `A`, nothing to reverse",
                 how: "CoreAPI face, amount ending in 95: the issuer declines, then the answer is lost: onTransactionCommError",
                 integratorAction: commErrorAction,
                 setup: .init(amount: 1095), sdk: .error("onTransactionCommError.networkError"), truth: .declinedInLedger),
        Scenario(name: "coreapi-comm-error-torn-card", face: .coreapi,
                 seed: "\(seed002) #communication-errors step 4: if we authorized the sale, reverse it",
                 how: "CoreAPI face, virtual card torn: the card leaves the field after the early submission; the gateway approves",
                 integratorAction: commErrorAction,
                 setup: .init(card: "torn"), sdk: .error("onDeviceError.CARD_REMOVED+onTransactionCommError.cardReadFailed"), truth: .charged),
        Scenario(name: "coreapi-comm-error-other-card", face: .coreapi,
                 seed: "\(seed003) #communication-errors: reverse only when the card suffix matches",
                 how: "CoreAPI face: an earlier sale of this orderId on this terminal (mastercard-mchip, 1000) stands; this sale (visa-qvsdc, 1000) never reaches the gateway",
                 integratorAction: commErrorAction,
                 setup: .init(fault: .noAnswer, gatewayTimeout: .milliseconds(500), priorSale: .init(card: "mastercard-mchip", amount: 1000)),
                 sdk: .error("onTransactionCommError.timeout"), truth: .nothingRecorded),
        Scenario(name: "coreapi-comm-error-other-amount", face: .coreapi,
                 seed: "\(seed003) #communication-errors: reverse only when the amount matches",
                 how: "CoreAPI face: an earlier sale of this orderId on this terminal (visa-qvsdc, 1500) stands; this sale (visa-qvsdc, 1000) never reaches the gateway",
                 integratorAction: commErrorAction,
                 setup: .init(fault: .noAnswer, gatewayTimeout: .milliseconds(500), priorSale: .init(card: "visa-qvsdc", amount: 1500)),
                 sdk: .error("onTransactionCommError.timeout"), truth: .nothingRecorded),
    ]
}

extension Scenario.Setup {
    /// The catalogue's plain payment: virtual card visa-qvsdc, amount 1000, nothing going wrong.
    public static var plain: Scenario.Setup { Scenario.Setup() }
}

extension Scenario: CustomStringConvertible {
    public var description: String { name }
}
