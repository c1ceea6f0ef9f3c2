public import DeviceStore
import PaymentGateway
import BERTLV
import CardChannel
import EMVKernel
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
/// Every failure splits at the submission point — the moment the authorisation request starts
/// leaving for the gateway. Before it no payment can exist, and a typed failure is thrown
/// (`paymentFailed(code)`, `cancelled`, …). From it on the card may be charged, and *any*
/// failure — gateway error, timeout, a card torn while the kernel goes on reading after early
/// submission, PIN entry failing, cancellation — is `outcomeUnknown(orderId:)`: never a retry,
/// never a decline. The pending record is written durably before the submission point.
public final class TapToPay: Sendable {
    /// The version this SDK reports to the gateway.
    public static let sdkVersion = "tapemu-1.0.0"

    public let configuration: Configuration
    let engine: PaymentEngine

    private struct Session {
        var claims: TokenClaims?
        var locationReady = false
    }
    private let session = Mutex(Session())
    /// The payment in progress (busy, cancel) and the answered ones awaiting ``acknowledge(_:)``.
    private let payment = PaymentSession<Result<PaymentResult, TapToPayError>>()

    public init(configuration: Configuration) {
        self.configuration = configuration
        self.engine = PaymentEngine(configuration: configuration)
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
    /// `notPrepared`, `tokenExpired`, `locationDenied`, `termsDeclined`, `cancelled`,
    /// `paymentFailed(code:)` before the submission point, and `outcomeUnknown(orderId:)` after it.
    public func acceptPayment(amount: Int, orderId: String, callbackUrl: String? = nil)
        async throws(TapToPayError) -> PaymentResult
    {
        guard isSupported else { throw .notSupported }
        if let reason = PaymentArguments.invalidArgument(amount: amount, orderId: orderId, callbackUrl: callbackUrl) {
            // The seed's error names no field: the event says which one is wrong.
            configuration.onEvent(.failed(reason: reason))
            throw .invalidArgument
        }
        let outcome = await payment.run(orderId: orderId) { () async -> Result<PaymentResult, TapToPayError> in
            do throws(TapToPayError) {
                return .success(try await self.run(amount: amount, orderId: orderId, callbackUrl: callbackUrl))
            } catch {
                return .failure(error)
            }
        }
        guard let outcome else { throw .busy }
        return try outcome.get()
    }

    /// Says that `result` has been handed over (written where it had to go): the device's
    /// record of it, which kept the answer until now, leaves. Only with
    /// ``ResultHandOver/acknowledged``; a result never acknowledged stays on the device, and
    /// recovery (``resolveUnclearOutcomes()``) reports it from the stored answer.
    public func acknowledge(_ result: PaymentResult) throws(DeviceStoreError) {
        try payment.acknowledge(orderId: result.orderId)
    }

    /// Cancels the payment in progress, as the user does on the payment sheet. Before the
    /// submission point it ends with `cancelled`; after it, with `outcomeUnknown`.
    public func cancel() {
        payment.cancel()
    }

    // MARK: - The flow

    private func run(amount: Int, orderId: String, callbackUrl: String?) async throws(TapToPayError) -> PaymentResult {
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
            throw error.code == .sdkUpgradeRequired ? .sdkUpgradeRequired : failureBeforeSubmission(.unknown)
        }
        guard let claims = session.withLock({ $0.claims }) else { throw .notPrepared }
        guard claims.expiresAt > config.now() else {
            session.withLock { $0.claims = nil }
            throw .tokenExpired
        }
        try await ensureLocation()
        try await ensureTerms(accountId: claims.accountId)
        try checkCancelled()

        // 2. The card and the authorisation.
        let sale = SaleRequest(orderId: orderId, amount: amount, currency: config.currency.uppercased(), callbackUrl: callbackUrl,
                               accountId: claims.accountId, origin: .tapToPay)
        let outcome: SaleOutcome
        do throws(SaleFailure) {
            outcome = try await engine.sale(sale).result.get()
        } catch {
            if let reason = Self.reason(for: error) { configuration.onEvent(.failed(reason: reason)) }
            throw Self.error(for: error)
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

    /// The cause behind a failed sale, when there is more to say than the seed's error.
    static func reason(for failure: SaleFailure) -> String? {
        switch failure {
        case .beforeSubmission(.reader(let e)): "\(e)"
        case .beforeSubmission(.kernel(let e)), .afterSubmission(_, .read(let e)): "\(e)"
        case .beforeSubmission(.storage(let e)), .afterSubmission(_, .answerNotKept(let e)): "\(e)"
        case .beforeSubmission(.gateway(let e)), .afterSubmission(_, .gateway(let e)): "\(e)"
        case .beforeSubmission(.cancelled), .beforeSubmission(.cardDeclined), .beforeSubmission(.cvmFailed),
             .beforeSubmission(.pinCancelled), .beforeSubmission(.pinTimeout), .beforeSubmission(.pinFailed),
             .afterSubmission(_, .cancelled): nil
        }
    }

    /// The seed's error for a failed sale.
    static func error(for failure: SaleFailure) -> TapToPayError {
        switch failure {
        case .afterSubmission(let orderId, _):
            return .outcomeUnknown(orderId: orderId)
        case .beforeSubmission(let reason):
            switch reason {
            case .cancelled, .pinCancelled: return .cancelled
            // Another attempt of the order is live (here or in another process): nothing was sent.
            case .storage(let e) where e.code == .busy: return .busy
            case .cardDeclined, .cvmFailed: return .paymentFailed(code: .cardDeclined)
            case .reader, .pinTimeout: return .paymentFailed(code: .readerNotReady)
            case .kernel, .pinFailed, .storage, .gateway: return .paymentFailed(code: .unknown)
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

    private func ensureTerms(accountId: String) async throws(TapToPayError) {
        let gateway = configuration.gateway
        let options = GatewayRequestOptions(timeout: configuration.timeouts.gatewayRequest)
        do {
            if try await gateway.termsAccepted(accountId: accountId, options: options) { return }
        } catch {
            throw failureBeforeSubmission(.unknown)
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

}
