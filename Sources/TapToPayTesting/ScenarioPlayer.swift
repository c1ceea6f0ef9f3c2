public import CardChannel
public import DeviceStore
public import Foundation
public import PaymentGateway
public import PaymentFlow
public import TapToPay
public import Timing
import VirtualCard

/// A card source that never gives a card: the reader waits its time (`noCard`), or until the
/// task is cancelled (the user's cancel on the payment sheet).
public struct NoCardSource: CardSource {
    public init() {}
    public var name: String { "no card" }
    public func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        do {
            try await clock.sleep(for: timeout)
        } catch {
            throw CardChannelError(.cancelled, "cancelled while waiting for a card")
        }
        throw CardChannelError(.noCard, "no card within \(timeout)")
    }
}

/// What one payment of a scenario ended with — what the SDK answered — and the truth beside it.
public struct ScenarioPayment: Sendable {
    public var orderId: String
    /// The amount paid (the scenario's, when a test trigger makes it).
    public var amount: Int
    public var sdk: Scenario.SDKOutcome
    /// `acceptPayment`'s own answer: the result, or the `TapToPayError` it threw (MONEI face).
    public var result: Result<PaymentResult, TapToPayError>?
    public var paymentId: String?
    /// Whether the request started leaving, and whether the ledger holds its approved sale.
    public var submitted: Bool
    public var charged: Bool
    /// Whether the ledger holds any sale of this order (approved or declined).
    public var recorded: Bool
    /// Whether the approved sale was then refunded in full (``Scenario/Setup/refundAfterApproval``).
    public var refunded = false
    /// What happened under the SDK's answer (``PaymentDiagnostics/cause``: the gateway's error,
    /// the card's…), nil when there is nothing more to say. Never holds a PAN.
    public var detail: String?
    /// The attempt as the emulated device saw it (nil when `acceptPayment` made none): what
    /// ``ScenarioPlayer/settledTruth(of:terminal:)`` reads the truth of again.
    public var attempt: PaymentDiagnostics?

    public init(orderId: String, amount: Int, sdk: Scenario.SDKOutcome, result: Result<PaymentResult, TapToPayError>? = nil,
                paymentId: String?, submitted: Bool, charged: Bool, recorded: Bool, refunded: Bool = false,
                detail: String? = nil) {
        self.orderId = orderId
        self.amount = amount
        self.sdk = sdk
        self.result = result
        self.paymentId = paymentId
        self.submitted = submitted
        self.charged = charged
        self.recorded = recorded
        self.refunded = refunded
        self.detail = detail
    }

    /// What the emulator knows beside the SDK's answer (``TapToPay/groundTruth(of:)``): whether the
    /// request left, and whether the ledger holds its charge now.
    public var groundTruth: GroundTruth { GroundTruth(submitted: submitted, charged: charged) }

    /// The catalogue's word for it (``Scenario/truth``).
    public var truth: Scenario.Truth {
        if refunded { return .refunded }
        if charged { return .charged }
        if recorded { return .declinedInLedger }
        return submitted ? .nothingRecorded : .nothingSent
    }
}

/// Plays one scenario's payment as a terminal running the MONEI face: its own `TapToPay`
/// over the given gateway and the device's pending store.
public struct ScenarioPlayer: Sendable {
    /// What a payment asks ``issueToken`` for.
    public struct TokenRequest: Sendable, Hashable {
        /// Already expired (`tokenExpired`).
        public var expired: Bool
        /// The payment's own account. The embedded gateway gives each payment one, so one's answer
        /// to the terms is not another's; a served gateway's POS tokens are the merchant's one
        /// account, each terminal of the run its own point of sale (a terminal acts only on the
        /// orders it sent itself).
        public var accountId: String
        /// The scenario needs ``accountId`` to be its own, its terms not accepted yet
        /// (`termsDeclined`: the seed's terms are the account's, and the merchant's one account
        /// accepted them at its first payment). A served gateway makes that token, and an expired
        /// one, with its test controls (`gateway serve --test-controls`).
        public var needsOwnAccount: Bool
        /// The terminal's point of sale.
        public var pointOfSaleId: String

        public init(expired: Bool, accountId: String, needsOwnAccount: Bool, pointOfSaleId: String) {
            self.expired = expired
            self.accountId = accountId
            self.needsOwnAccount = needsOwnAccount
            self.pointOfSaleId = pointOfSaleId
        }
    }

    /// The gateway the terminal pays through, and a way to issue it tokens.
    public var gateway: any Gateway
    /// A token for the terminal of ``TokenRequest``.
    public var issueToken: @Sendable (TokenRequest) async throws -> String
    public var pendingStore: PendingPaymentStore
    public var callbackUrl: String?
    /// The gateway the CoreAPI face pays through: always a served one (the run's embedded
    /// gateway over loopback, or --gateway), since the backend's recovery speaks its CoreAPI REST
    /// with the terminal's token and a terminal acts only on the orders it sent over it.
    public var coreGateway: (any Gateway)? = nil

    public init(gateway: any Gateway,
                issueToken: @escaping @Sendable (TokenRequest) async throws -> String,
                pendingStore: PendingPaymentStore, callbackUrl: String?, coreGateway: (any Gateway)? = nil) {
        self.gateway = gateway
        self.issueToken = issueToken
        self.pendingStore = pendingStore
        self.callbackUrl = callbackUrl
        self.coreGateway = coreGateway
    }
    /// How long every request but the authorisation waits (the scenario's own timeout is the
    /// authorisation's: ``AuthorisationTimeout``).
    public static let requestTimeout: Duration = .seconds(60)
    /// The SDK version the gateway blocks (`sdkBlocked`).
    public static let blockedSDKVersion = "0.0.0-scenario-blocked"

    /// Plays `scenario`'s payment for `orderId` on a fresh emulated device (its own `TapToPay`)
    /// as the terminal `terminal`; `amountOverride` replaces the scenario's amount.
    public func play(_ scenario: Scenario, orderId: String, terminal: String = "scenarios",
                     amountOverride: Int? = nil) async throws -> ScenarioPayment {
        let setup = scenario.setup
        let amount = amountOverride ?? setup.amount
        let source: any CardSource = try setup.card.map { name in
            guard let profile = CardProfiles.named(name) else { throw ScenarioRunError("no card profile '\(name)'") }
            return VirtualCardSource(profile: profile)
        } ?? NoCardSource()
        let holder = TapToPayHolder()
        let token: String? = switch setup.token {
        case .valid, .expired:
            try await issueToken(TokenRequest(expired: setup.token == .expired, accountId: "acct_\(orderId)",
                                              needsOwnAccount: !setup.acceptsTerms, pointOfSaleId: terminal))
        case .unreadable: "not-a-token"
        case .none: nil
        }
        let config = TapToPay.Configuration(
            cardSource: source, gateway: AuthorisationTimeout(inner: Self.gateway(gateway, token: token), timeout: setup.gatewayTimeout),
            pendingStore: pendingStore, location: setup.location,
            terms: FixedTermsProvider(accepts: setup.acceptsTerms), pin: ScriptedPINProvider(setup.pin),
            device: DeviceEnvironment(isSupported: setup.supported),
            sdkVersion: setup.sdkBlocked ? Self.blockedSDKVersion : TapToPay.sdkVersion,
            timeouts: PaymentTimeouts(cardPresentation: setup.cardWait, locationFix: setup.locationFix,
                                      gatewayRequest: Self.requestTimeout),
            currency: setup.currency,
            gatewayFault: setup.fault,
            onEvent: { event in
                switch event {
                case .reading where setup.busyWithAnotherPayment: holder.readingStarted()
                case .waitingForCard where setup.cancelOnSheet: holder.tapToPay?.cancel()
                case .reading where setup.cancelTaskWhileReading: holder.cancelTask()
                default: break
                }
            })
        let tapToPay = TapToPay(configuration: config)
        holder.tapToPay = tapToPay
        let task = Task { () async -> Result<PaymentResult, TapToPayError> in
            do throws(TapToPayError) {
                if let token { try await tapToPay.prepare(token: token) }
                if setup.busyWithAnotherPayment {
                    // Another order's payment, its card being read when this order's comes.
                    let other = Task { () async -> Void in
                        _ = try? await tapToPay.acceptPayment(amount: amount, orderId: orderId + "-other", callbackUrl: callbackUrl)
                        // Ended before its card was read: this order's payment is not kept waiting
                        // (it then runs, and the grade says the scenario did not happen).
                        holder.readingStarted()
                    }
                    await holder.waitForReading()
                    let result: Result<PaymentResult, TapToPayError>
                    do throws(TapToPayError) {
                        result = .success(try await tapToPay.acceptPayment(amount: amount, orderId: orderId, callbackUrl: callbackUrl))
                    } catch {
                        result = .failure(error)
                    }
                    await other.value
                    return result
                }
                return .success(try await tapToPay.acceptPayment(amount: amount, orderId: orderId, callbackUrl: callbackUrl))
            } catch {
                return .failure(error)
            }
        }
        holder.task = task
        let outcome = await task.value
        let sdk: Scenario.SDKOutcome
        var paymentId: String?
        switch outcome {
        case .success(let result):
            sdk = result.status == .approved ? .approved : .declined
            paymentId = result.paymentId
        case .failure(let error):
            sdk = .error(error.code)
        }
        var submitted = false, charged = false
        let attempt = tapToPay.diagnostics(for: orderId)
        if let attempt {
            let truth = try await tapToPay.groundTruth(of: attempt)
            (submitted, charged) = (truth.submitted, truth.charged)
        }
        // Asked as this terminal (a served gateway answers a terminal about its own orders); a
        // scenario whose SDK had no valid token asks with one of its own.
        let asker = Self.gateway(gateway, token: setup.token == .valid ? token : try await issueToken(
            TokenRequest(expired: false, accountId: "acct_\(orderId)", needsOwnAccount: false, pointOfSaleId: terminal)))
        let sales = try await asker.charges(orderId: orderId, options: GatewayRequestOptions(fault: GatewayFault.none))
            .filter { $0.kind == .sale }
        var played = ScenarioPayment(orderId: orderId, amount: amount, sdk: sdk, result: outcome, paymentId: paymentId,
                                     submitted: submitted, charged: charged, recorded: !sales.isEmpty, detail: attempt?.cause)
        played.attempt = attempt
        if setup.refundAfterApproval, charged, let sale = sales.first(where: { $0.status == .approved }) {
            // The merchant refunds the sale in full: the ledger no longer holds its money.
            let refund = try await asker.refund(uniqueRef: sale.uniqueRef, amount: nil,
                                                options: GatewayRequestOptions(fault: GatewayFault.none))
            played.refunded = refund.remainingAmount == 0
            played.charged = !played.refunded
        }
        return played
    }
}

extension ScenarioPlayer {
    /// `payment`'s truth read again now, for an attempt whose request had left: whether the ledger
    /// holds its charge, and any sale of its order.
    ///
    /// ``play(_:orderId:terminal:amountOverride:)`` reads the truth as soon as the SDK answered.
    /// After an unclear outcome a served gateway may still be handling the request then: the
    /// SDK gave up on a slow answer at 500 ms, and a loaded server records the sale later (over
    /// `gateway serve`, `unknown-slow-answer` was once graded "declined in the ledger": its charge
    /// read before the commit, its order's sales after it). `scenarios run` reads it again once the
    /// backend has concluded, and grades that. An attempt that never left is returned as it is.
    public func settledTruth(of payment: ScenarioPayment, terminal: String = "scenarios") async throws -> ScenarioPayment {
        guard let attempt = payment.attempt, attempt.submitted else { return payment }
        let asker = Self.gateway(gateway, token: try await issueToken(
            TokenRequest(expired: false, accountId: "acct_\(payment.orderId)", needsOwnAccount: false, pointOfSaleId: terminal)))
        let sales = try await asker.charges(orderId: payment.orderId, options: GatewayRequestOptions(fault: GatewayFault.none))
            .filter { $0.kind == .sale }
        // The one rule of "charged" (TapToPay's ground truth), asked as this terminal, after the sales.
        let reader = TapToPay(configuration: TapToPay.Configuration(cardSource: NoCardSource(), gateway: asker,
                                                                    pendingStore: pendingStore))
        let truth = try await reader.groundTruth(of: attempt)
        var settled = payment
        settled.charged = truth.charged && !payment.refunded
        settled.recorded = !sales.isEmpty
        return settled
    }

    /// The gateway as this terminal sees it: a served one sends this terminal's token on every
    /// request (terminals playing at once must not share the token one of them prepared with).
    public static func gateway(_ gateway: any Gateway, token: String?) -> any Gateway {
        guard let token else { return gateway }
        return gateway.forTerminal(token: token)
    }
}

/// The scenario's gateway timeout on the authorisation alone: the requests before it (the token,
/// the SDK version, the terms) wait ``ScenarioPlayer/requestTimeout``, so a loaded machine that
/// answers them late does not end the payment before the scenario's point (the CoreAPI token
/// check timing out at 500 ms made `onError.timeout` instead of `onTransactionCommError`).
public struct AuthorisationTimeout: ForwardingGateway {
    public var inner: any Gateway
    public var timeout: Duration

    public init(inner: any Gateway, timeout: Duration) {
        self.inner = inner
        self.timeout = timeout
    }

    public func authorize(_ request: AuthorisationRequest,
                   options: GatewayRequestOptions) async throws(GatewayError) -> AuthorisationResponse {
        var o = options
        o.timeout = timeout
        return try await inner.authorize(request, options: o)
    }
}

/// The terminal and its payment task, for the scenario's events to reach them.
final class TapToPayHolder: @unchecked Sendable {
    private let lock = NSLock()
    private var _tapToPay: TapToPay?
    private var _task: Task<Result<PaymentResult, TapToPayError>, Never>?
    private var cancelAsked = false
    private var reading = false
    private var readingWaiters: [CheckedContinuation<Void, Never>] = []
    /// A card is being read (the event), once.
    func readingStarted() {
        let waiters = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            reading = true
            defer { readingWaiters = [] }
            return readingWaiters
        }
        for w in waiters { w.resume() }
    }
    /// Returns once a card is being read.
    func waitForReading() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                if reading { return true }
                readingWaiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
    /// Cancels the payment task, now or as soon as it exists.
    func cancelTask() {
        let task = lock.withLock { () -> Task<Result<PaymentResult, TapToPayError>, Never>? in
            cancelAsked = true
            return _task
        }
        task?.cancel()
    }
    var tapToPay: TapToPay? {
        get { lock.withLock { _tapToPay } }
        set { lock.withLock { _tapToPay = newValue } }
    }
    var task: Task<Result<PaymentResult, TapToPayError>, Never>? {
        get { lock.withLock { _task } }
        set {
            // A cancel asked before the task existed reaches it now.
            let cancel = lock.withLock { () -> Bool in
                _task = newValue
                return cancelAsked
            }
            if cancel { newValue?.cancel() }
        }
    }
}

/// A scenario that could not be played or asked about (the run's own failure, not a grade).
public struct ScenarioRunError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
