public import DeviceStore
public import PaymentFlow
import PaymentGateway
import Foundation
import Synchronization

/// The MONEI-style Tap to Pay API (seed `000`) over tapemu's reader kernel and gateway.
///
/// ```swift
/// let tapToPay = TapToPay(configuration: config)
/// try await tapToPay.prepare(token: token)
/// let result = try await tapToPay.acceptPayment(amount: 1250, orderId: "order-1042", callbackUrl: webhookURL)
/// ```
///
/// or, as seed 000 writes it, on the type over the shared instance (`SharedTapToPay.swift`):
///
/// ```swift
/// TapToPay.configure(config)            // or from the environment: TAPEMU_GATEWAY, TAPEMU_DATA_DIR, TAPEMU_CARD
/// try await TapToPay.prepare(token: token)
/// let result = try await TapToPay.acceptPayment(amount: 1250, orderId: "order-1042", callbackUrl: webhookURL)
/// ```
///
/// The errors are seed `000`'s. The SDK cannot tell a reader error before the request left from
/// one after it, so during `acceptPayment` every card read error, PIN entry error and lost reader
/// session is `outcomeUnknown(orderId:)`, before the submission point (the moment the
/// authorisation request starts leaving) or after it; so is a cancelled task, and any gateway
/// error from the submission point on. `cancelled` is only the user's ``cancel()`` before a card
/// was presented; `paymentFailed(.cardDeclined)` the card's own offline decline;
/// `paymentFailed(.readerNotReady)` a reader session that was not ready before reading began
/// (the card source could not be opened or gave no card in time). Never a retry, never a
/// decline for an unclear outcome.
///
/// What the SDK cannot know — whether the request left, whether the ledger holds a charge — is
/// kept beside the error: ``lastAttempt``, ``diagnostics(for:)`` and ``groundTruth(of:)``.
/// Every `outcomeUnknown` leaves a pending record on the device for recovery (written durably
/// before the submission point, or when the attempt ends unclear before it).
public final class TapToPay: Sendable {
    /// The version this SDK reports to the gateway.
    public static let sdkVersion = PaymentConfiguration.defaultSDKVersion

    /// The MONEI-style face's name for ``PaymentConfiguration`` (the seed's `TapToPay.Configuration`).
    public typealias Configuration = PaymentConfiguration

    public let configuration: Configuration
    let engine: PaymentEngine

    private struct Session {
        var claims: TokenClaims?
        var locationReady = false
    }
    private let session = Mutex(Session())
    /// The payment in progress (busy, cancel) and the answered ones awaiting ``acknowledge(_:)``.
    private let payment = PaymentSession<Result<PaymentResult, TapToPayError>>()
    /// What the emulator knows about the last attempts (``lastAttempt``, ``diagnostics(for:)``).
    let diagnosticsLog = DiagnosticsLog()

    public init(configuration: Configuration) {
        // This terminal's own view of the gateway: the token it prepares is sent by it alone,
        // however many terminals share the configuration's gateway.
        var own = configuration
        own.gateway = configuration.gateway.forTerminal(token: nil)
        self.configuration = own
        self.engine = PaymentEngine(configuration: own)
    }

    /// Whether this device supports Tap to Pay.
    public var isSupported: Bool { configuration.device.isSupported }

    /// Whether a valid token is stored.
    public var isPrepared: Bool { session.withLock { $0.claims != nil } }

    // MARK: - prepare

    /// Checks and stores the token, and gets the first location fix.
    ///
    /// Throws `notSupported`, `sdkUpgradeRequired`, `invalidToken` or `tokenExpired` (and then
    /// keeps no token), `locationDenied`, `paymentFailed(.locationTimeout)`, or
    /// `paymentFailed(.unknown)` when the gateway cannot be reached.
    public func prepare(token: String) async throws(TapToPayError) {
        guard isSupported else { throw .notSupported }
        let gateway = configuration.gateway
        let options = GatewayRequestOptions(timeout: configuration.timeouts.gatewayRequest)
        // Each failure says what the gateway answered (the seed's errors do not carry it).
        do {
            try await gateway.checkSDKVersion(configuration.sdkVersion, options: options)
        } catch {
            configuration.onEvent(.failed(reason: "the SDK version check failed: \(error.code): \(error.reason)"))
            throw error.code == .sdkUpgradeRequired ? .sdkUpgradeRequired : .paymentFailed(code: .unknown)
        }
        let validation: TokenValidation
        do {
            validation = try await gateway.validateToken(token, options: options)
        } catch {
            configuration.onEvent(.failed(reason: "the token could not be checked: \(error.code): \(error.reason)"))
            throw .paymentFailed(code: .unknown)
        }
        switch validation {
        case .valid(let claims):
            // The token is good and kept whatever the location does: a location problem is
            // reported as such, now and by the next acceptPayment, not as a missing token.
            session.withLock { $0.claims = claims }
            try await ensureLocation()
        case .expired:
            session.withLock { $0.claims = nil }
            configuration.onEvent(.failed(reason: "the gateway says the token has expired"))
            throw .tokenExpired
        case .invalid(let reason):
            session.withLock { $0.claims = nil }
            configuration.onEvent(.failed(reason: "the gateway refused the token: \(reason)"))
            throw .invalidToken
        }
    }

    // MARK: - acceptPayment

    /// Reads a card and charges it.
    ///
    /// Returns the result when the gateway answered clearly — approved or declined (a decline is
    /// not an error). Throws `invalidArgument`, `busy`, `notSupported`, `sdkUpgradeRequired`,
    /// `notPrepared`, `tokenExpired`, `locationDenied`, `termsDeclined`, `paymentFailed(code:)`
    /// (nothing was charged), `cancelled` (the user's ``cancel()`` before a card was presented),
    /// and `outcomeUnknown(orderId:)` (the card may be charged): for any card read error, PIN
    /// entry error, lost reader session or cancelled task, and any connection or server error at
    /// any step (before the card too: the SDK version and terms checks). ``lastAttempt`` says what the error cannot.
    public func acceptPayment(amount: Int, orderId: String, callbackUrl: String? = nil)
        async throws(TapToPayError) -> PaymentResult
    {
        let currency = configuration.currency.uppercased()
        guard isSupported else {
            record(PaymentDiagnostics(orderId: orderId, amount: amount, currency: currency, error: .notSupported,
                                      stage: .beforeCard, recordKept: false))
            throw .notSupported
        }
        if let reason = PaymentArguments.invalidArgument(amount: amount, orderId: orderId, callbackUrl: callbackUrl) {
            // The seed's error names no field: the event says which one is wrong.
            configuration.onEvent(.failed(reason: reason))
            record(PaymentDiagnostics(orderId: orderId, amount: amount, currency: currency, error: .invalidArgument,
                                      stage: .beforeCard, cause: reason, recordKept: false))
            throw .invalidArgument
        }
        let outcome = await payment.run(orderId: orderId) { () async -> Result<PaymentResult, TapToPayError> in
            await self.attempt(amount: amount, orderId: orderId, callbackUrl: callbackUrl)
        }
        guard let outcome else { throw .busy }
        return try outcome.get()
    }

    private func record(_ diagnostics: PaymentDiagnostics) {
        diagnosticsLog.record(diagnostics)
    }

    /// One attempt that runs (not refused as busy): its outcome in the seed's terms, the record an
    /// unclear outcome leaves, and its diagnostics.
    private func attempt(amount: Int, orderId: String, callbackUrl: String?) async -> Result<PaymentResult, TapToPayError> {
        let tracker = AttemptTracker()
        var outcome: Result<PaymentResult, TapToPayError>
        do throws(TapToPayError) {
            outcome = .success(try await run(amount: amount, orderId: orderId, callbackUrl: callbackUrl, tracker: tracker))
        } catch {
            outcome = .failure(error)
        }
        let userCancelled = payment.cancelledByUser
        var cancellation: PaymentDiagnostics.Cancellation?
        if case .failure(let error) = outcome, error == .cancelled || error.mayHaveCharged, Task.isCancelled || userCancelled {
            cancellation = userCancelled ? .user : .task
        }
        // A cancelled task is an unclear outcome (seed 000), wherever it stopped the payment: only
        // the user's cancel before a card was presented is `cancelled`.
        if case .failure(.cancelled) = outcome, !userCancelled {
            outcome = .failure(.outcomeUnknown(orderId: orderId))
            let reason = "the task running the payment was cancelled"
            tracker.update { $0.cause = $0.cause ?? reason }
            configuration.onEvent(.failed(reason: reason))
        }
        var state = tracker.snapshot
        var recordKept = false
        var recordError: String?
        if case .failure(.outcomeUnknown) = outcome {
            if state.stage == .submitted {
                recordKept = true   // written before the submission point; it stays until resolved
            } else {
                // Told what it would be told after the submission point, the app recovers the
                // same way: the device keeps a record for it, as it would then.
                let sale = SaleRequest(orderId: orderId, amount: amount, currency: configuration.currency.uppercased(),
                                       callbackUrl: callbackUrl, accountId: nil, origin: .tapToPay)
                do throws(DeviceStoreError) {
                    _ = try await engine.keepUnsentAttempt(sale, card: state.card)
                    recordKept = true
                } catch {
                    recordError = "\(error)"
                    configuration.onEvent(.recordKept(reason: "the record of this unclear attempt could not be written (\(error)); recovery will not list it: look order \(orderId) up by its id"))
                }
            }
        }
        if case .failure(.cancelled) = outcome { state.cause = nil }
        let result = try? outcome.get()
        let error: TapToPayError? = if case .failure(let e) = outcome { e } else { nil }
        record(PaymentDiagnostics(
            orderId: orderId, amount: amount, currency: configuration.currency.uppercased(), result: result, error: error,
            stage: state.stage, cancellation: cancellation, cause: state.cause, maskedPAN: state.card?.maskedPAN,
            cardBrand: state.card?.brand, recordKept: recordKept, recordError: recordError))
        return outcome
    }

    /// Says that `result` has been handed over (written where it had to go): the device's
    /// record of it, which kept the answer until now, leaves. Only with
    /// ``ResultHandOver/acknowledged``; a result never acknowledged stays on the device, and
    /// recovery (``resolveUnclearOutcomes()``) reports it from the stored answer.
    public func acknowledge(_ result: PaymentResult) throws(DeviceStoreError) {
        try payment.acknowledge(orderId: result.orderId)
    }

    /// Cancels the payment in progress, as the user does on the payment sheet. Before a card was
    /// presented it ends with `cancelled`; once a card is being read, with `outcomeUnknown` (the
    /// SDK cannot tell whether the request had left).
    public func cancel() {
        payment.cancel()
    }

    // MARK: - The flow

    private func run(amount: Int, orderId: String, callbackUrl: String?,
                     tracker: AttemptTracker) async throws(TapToPayError) -> PaymentResult {
        let config = configuration
        let gateway = config.gateway
        let options = GatewayRequestOptions(timeout: config.timeouts.gatewayRequest, fault: nil)

        // 0. The configured currency: refused by the gateway instead, the order would end unclear
        // after the submission point, with nothing charged.
        if let reason = PaymentArguments.currencyProblem(config.currency, terminal: config.terminal) {
            config.onEvent(.failed(reason: reason))
            throw failureBeforeSubmission(.unknown)
        }

        // 1. The SDK version, the token, the location, the terms: before anything touches a card.
        do {
            try await gateway.checkSDKVersion(config.sdkVersion, options: options)
        } catch {
            if error.code == .sdkUpgradeRequired { throw .sdkUpgradeRequired }
            throw connectionFailure(orderId: orderId, step: "the SDK version check", error, tracker: tracker)
        }
        guard let claims = session.withLock({ $0.claims }) else { throw .notPrepared }
        guard claims.expiresAt > config.now() else {
            session.withLock { $0.claims = nil }
            throw .tokenExpired
        }
        try await ensureLocation()
        try await ensureTerms(accountId: claims.accountId, orderId: orderId, tracker: tracker)
        try checkCancelled()

        // 2. The card and the authorisation.
        let sale = SaleRequest(orderId: orderId, amount: amount, currency: config.currency.uppercased(), callbackUrl: callbackUrl,
                               accountId: claims.accountId, origin: .tapToPay)
        let attempt = await engine.sale(sale)
        tracker.update { s in
            s.stage = attempt.submitted ? .submitted : attempt.cardPresented ? .reading : .waitingForCard
            s.card = attempt.card
        }
        let outcome: PaymentFlow.SaleOutcome
        switch attempt.result {
        case .success(let o):
            outcome = o
        case .failure(let failure):
            let userCancelled = payment.cancelledByUser
            if let reason = Self.reason(for: failure, cardPresented: attempt.cardPresented, userCancelled: userCancelled) {
                tracker.update { $0.cause = reason }
                configuration.onEvent(.failed(reason: reason))
            }
            throw Self.error(for: failure, orderId: orderId, cardPresented: attempt.cardPresented, userCancelled: userCancelled)
        }
        let response = outcome.response
        if let lease = outcome.lease {
            payment.handOver(lease, orderId: orderId, mode: config.resultHandOver, onEvent: config.onEvent)
        }
        // An approval is an approved sale still standing (code A). The stored answer of an order
        // whose sale was reversed since (code C) charges nothing: a no, with its reason.
        let approved = response.status == .approved && response.transactionCode == .approved
        return PaymentResult(paymentId: response.paymentId, status: approved ? .approved : .declined,
                             statusMessage: response.messageForTheApp,
                             cardBrand: response.cardBrand.rawValue, last4: response.last4, orderId: response.orderId)
    }

    /// The cause behind a failed sale, when there is more to say than the seed's error (never
    /// for a decline, or for the user's cancel before a card was presented).
    static func reason(for failure: SaleFailure, cardPresented: Bool, userCancelled: Bool) -> String? {
        let who = userCancelled ? "the user cancelled" : "the task running the payment was cancelled"
        let when = cardPresented ? "while the card was being read" : "while the reader waited for a card"
        return switch failure {
        case .beforeSubmission(.cancelled) where userCancelled && !cardPresented: nil
        case .beforeSubmission(.cancelled): "\(who) \(when)"
        case .beforeSubmission(.reader(let e)): "\(e)"
        case .beforeSubmission(.kernel(let e)), .afterSubmission(_, .read(let e)): "\(e)"
        case .beforeSubmission(.storage(let e)), .afterSubmission(_, .answerNotKept(let e)): "\(e)"
        case .beforeSubmission(.gateway(let e)), .afterSubmission(_, .gateway(let e)), .afterSubmission(_, .refused(let e)): "\(e)"
        case .beforeSubmission(.pinCancelled): "the cardholder cancelled the PIN entry"
        case .beforeSubmission(.pinTimeout): "no PIN was entered within the PIN-entry timeout"
        case .beforeSubmission(.pinFailed): "the PIN entry failed (the PIN pad reported an error)"
        case .afterSubmission(_, .cancelled): "\(who) while the gateway's answer was awaited"
        case .beforeSubmission(.cardDeclined), .beforeSubmission(.cvmFailed): nil
        }
    }

    /// Seed 000's error for a failed sale. `cardPresented`: a card came and the kernel began
    /// reading it (the reader session was ready). `userCancelled`: ``cancel()`` was called.
    static func error(for failure: SaleFailure, orderId: String, cardPresented: Bool, userCancelled: Bool) -> TapToPayError {
        switch failure {
        case .afterSubmission(let orderId, _):
            return .outcomeUnknown(orderId: orderId)
        case .beforeSubmission(let reason):
            switch reason {
            // The user's cancel while the reader waited for a card: nothing was read.
            case .cancelled where userCancelled && !cardPresented: return .cancelled
            // A cancelled task, or the user's cancel once a card is being read.
            case .cancelled: return .outcomeUnknown(orderId: orderId)
            // Another attempt of the order is live (here or in another process): nothing was sent.
            case .storage(let e) where e.code == .busy: return .busy
            // The card's own offline decline (AAC), or a verification the card requires that this
            // device cannot do: the read ended in a decline.
            case .cardDeclined, .cvmFailed: return .paymentFailed(code: .cardDeclined)
            // The reader session was not ready: no card source, no card in time.
            case .reader where !cardPresented: return .paymentFailed(code: .readerNotReady)
            // A card read error, a lost reader session, a PIN entry error: the SDK cannot tell
            // them from the same errors after the request left (seed 000).
            case .reader, .kernel, .pinCancelled, .pinTimeout, .pinFailed: return .outcomeUnknown(orderId: orderId)
            case .storage, .gateway: return .paymentFailed(code: .unknown)
            }
        }
    }

    // MARK: - Steps before the card

    private func ensureLocation() async throws(TapToPayError) {
        // The permission is checked on every call (the user may take it back in Settings after
        // `prepare`); only the fix is kept once got.
        let provider = configuration.location
        var state = await provider.authorization()
        if state == .notDetermined { state = await provider.requestAuthorization() }
        switch state {
        case .authorized: break
        case .denied, .notDetermined, .missingUsageDescription:
            session.withLock { $0.locationReady = false }
            throw .locationDenied
        }
        if session.withLock({ $0.locationReady }) { return }
        configuration.onEvent(.waitingForLocation)
        switch await withTimeout(configuration.timeouts.locationFix, clock: configuration.clock, {
            try await provider.currentLocation()
        }) {
        case .value:
            session.withLock { $0.locationReady = true }
        case .timedOut, .failed:
            // A fix abandoned because the caller cancelled is the cancellation, not a timeout.
            if Task.isCancelled { throw .cancelled }
            throw .paymentFailed(code: .locationTimeout)
        case .cancelled:
            throw .cancelled
        }
    }

    private func ensureTerms(accountId: String, orderId: String, tracker: AttemptTracker) async throws(TapToPayError) {
        let gateway = configuration.gateway
        let options = GatewayRequestOptions(timeout: configuration.timeouts.gatewayRequest)
        do {
            if try await gateway.termsAccepted(accountId: accountId, options: options) { return }
        } catch {
            throw connectionFailure(orderId: orderId, step: "the terms check", error, tracker: tracker)
        }
        let accepted = await configuration.terms.presentTerms()
        try checkCancelled()
        guard accepted else { throw .termsDeclined }
        do {
            try await gateway.setTermsAccepted(true, accountId: accountId, options: options)
        } catch {
            // The seed: termsDeclined also when "the link of the account failed"; the next
            // acceptPayment shows the terms again.
            try checkCancelled()
            throw .termsDeclined
        }
    }

    // MARK: - Failures before the submission point

    private func checkCancelled() throws(TapToPayError) {
        if Task.isCancelled { throw .cancelled }
    }

    /// A failure before the submission point; a cancelled task wins (the user cancelled).
    private func failureBeforeSubmission(_ code: TapToPayErrorCode) -> TapToPayError {
        Task.isCancelled ? .cancelled : .paymentFailed(code: code)
    }

    /// A connection or server error at a step of the payment before the card: seed 000 lists it
    /// among the causes of `outcomeUnknown` ("a connection or server error at any step of the
    /// payment"), so the face reports what the SDK reports, though nothing was sent — the
    /// diagnostics and the record the attempt leaves say so (a cancelled task stays `cancelled`
    /// here, and is turned into the unclear outcome it is by the attempt).
    private func connectionFailure(orderId: String, step: String, _ error: GatewayError,
                                   tracker: AttemptTracker) -> TapToPayError {
        if Task.isCancelled { return .cancelled }
        let reason = "\(step) failed before a card was read (\(error.code): \(error.reason)); nothing was sent"
        tracker.update { $0.cause = reason }
        configuration.onEvent(.failed(reason: reason))
        return .outcomeUnknown(orderId: orderId)
    }

}
