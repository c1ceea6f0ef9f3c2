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

    private struct Session {
        var claims: TokenClaims?
        var locationReady = false
        var busy = false
        var current: Task<PaymentResult, any Error>?
        var explicitCancel = false
    }
    private let session = Mutex(Session())

    public init(configuration: Configuration) {
        self.configuration = configuration
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
        do {
            try await gateway.checkSDKVersion(configuration.sdkVersion, options: options)
        } catch {
            throw error.code == .sdkUpgradeRequired ? .sdkUpgradeRequired : .paymentFailed(code: .unknown)
        }
        let validation: TokenValidation
        do {
            validation = try await gateway.validateToken(token, options: options)
        } catch {
            throw .paymentFailed(code: .unknown)
        }
        switch validation {
        case .valid(let claims):
            try await ensureLocation()
            session.withLock { $0.claims = claims }
        case .expired:
            session.withLock { $0.claims = nil }
            throw .tokenExpired
        case .invalid:
            session.withLock { $0.claims = nil }
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
        guard amount > 0, !orderId.trimmingCharacters(in: .whitespaces).isEmpty else { throw .invalidArgument }
        let started = session.withLock { s -> Bool in
            if s.busy { return false }
            s.busy = true
            s.explicitCancel = false
            return true
        }
        guard started else { throw .busy }
        defer { session.withLock { $0.busy = false; $0.current = nil } }

        let task = Task { () async throws -> PaymentResult in
            try await self.run(amount: amount, orderId: orderId, callbackUrl: callbackUrl)
        }
        session.withLock { $0.current = task }
        if session.withLock({ $0.explicitCancel }) { task.cancel() }
        let result = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            task.cancel()
        }
        switch result {
        case .success(let r): return r
        case .failure(let e as TapToPayError): throw e
        case .failure:
            // `run` throws only TapToPayError; anything else is treated as the worst case.
            throw .outcomeUnknown(orderId: orderId)
        }
    }

    /// Cancels the payment in progress, as the user does on the payment sheet. Before the
    /// submission point it ends with `cancelled`; after it, with `outcomeUnknown`.
    public func cancel() {
        let task = session.withLock { s -> Task<PaymentResult, any Error>? in
            s.explicitCancel = true
            return s.current
        }
        task?.cancel()
    }

    // MARK: - The flow

    private func run(amount: Int, orderId: String, callbackUrl: String?) async throws(TapToPayError) -> PaymentResult {
        let config = configuration
        let gateway = config.gateway
        let options = GatewayRequestOptions(timeout: config.timeouts.gatewayRequest, fault: nil)

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

        // 2. The card.
        config.onEvent(.waitingForCard(source: config.cardSource.name))
        let channel: any CardChannel
        do {
            channel = try await config.cardSource.waitForCard(timeout: config.timeouts.cardPresentation, clock: config.clock)
        } catch {
            throw error.code == .cancelled ? .cancelled : failureBeforeSubmission(.readerNotReady)
        }
        try checkCancelled()
        config.onEvent(.reading)

        let submission = Submission()
        let transaction = Transaction(amount: UInt64(amount))
        let reader = EMVReader(configuration: config.terminal)
        let read: CardRead
        do throws(KernelError) {
            read = try await reader.read(
                channel: channel, transaction: transaction, apduTimeout: config.timeouts.apdu, clock: config.clock,
                onOnlineDataReady: { partial in
                    guard config.submitsEarly, partial.cvm != .onlinePIN,
                          let card = partial.card, let cryptogram = partial.cryptogram,
                          let application = partial.application, cryptogram.kind == .arqc else { return }
                    let request = self.request(orderId: orderId, amount: amount, callbackUrl: callbackUrl,
                                               card: card, cryptogram: cryptogram, brand: application.brand,
                                               accountId: claims.accountId)
                    await self.submit(request, early: true, into: submission)
                })
        } catch {
            if submission.started {
                // The authorisation may be on its way: whatever the card did, the outcome is unclear.
                _ = await submission.answer()
                throw .outcomeUnknown(orderId: orderId)
            }
            throw mapReadFailure(error)
        }
        await config.checkpoint(.cardRead)
        config.onEvent(.cardRead(brand: read.application.brand.rawValue, maskedPAN: read.card.pan.masked,
                                 cvm: read.cvm.rawValue))

        if !submission.started {
            switch read.cryptogram.kind {
            case .aac:
                throw failureBeforeSubmission(.cardDeclined)
            case .arqc, .tc:
                break
            }
            if read.cvm == .failed { throw failureBeforeSubmission(.cardDeclined) }
            if read.cvm == .onlinePIN {
                try await collectPIN(amount: amount, maskedPAN: read.card.pan.masked)
            }
            try checkCancelled()
            let request = request(orderId: orderId, amount: amount, callbackUrl: callbackUrl, card: read.card,
                                  cryptogram: read.cryptogram, brand: read.application.brand,
                                  accountId: claims.accountId)
            await submit(request, early: false, into: submission)
            if let failure = submission.failureBeforeSubmission {
                throw failure
            }
        }

        // 3. After the submission point: a clear answer, or an unclear outcome.
        let answer = await submission.answer()
        guard case .success(let response)? = answer else {
            throw .outcomeUnknown(orderId: orderId)
        }
        await config.checkpoint(.answered)
        _ = try? config.pendingStore.remove(orderId: orderId)
        config.onEvent(.answered(status: response.status.rawValue))
        return PaymentResult(paymentId: response.paymentId,
                             status: response.status == .approved ? .approved : .declined,
                             statusMessage: response.statusMessage, cardBrand: response.cardBrand.rawValue,
                             last4: response.last4, orderId: response.orderId)
    }

    private func request(orderId: String, amount: Int, callbackUrl: String?, card: KernelCardData,
                         cryptogram: Cryptogram, brand: KernelCardBrand, accountId: String) -> AuthorisationRequest {
        let expiry = String(format: "%02d%02d", card.expiry.year % 100, card.expiry.month)
        let gatewayCard = PaymentGateway.CardData(
            pan: card.pan, expiry: expiry, panSequenceNumber: UInt8(clamping: card.panSequenceNumber ?? 0),
            brand: PaymentGateway.CardBrand(rawValue: brand.rawValue), emvData: cryptogram.onlineDataBytes)
        return AuthorisationRequest(orderId: orderId, amount: amount, currency: configuration.currency,
                                    callbackUrl: callbackUrl, card: gatewayCard, sdkVersion: configuration.sdkVersion,
                                    accountId: accountId)
    }

    /// Writes the pending record durably, then starts the authorisation (the submission point).
    /// A pending record that cannot be written stops the payment before the submission point.
    private func submit(_ request: AuthorisationRequest, early: Bool, into submission: Submission) async {
        let config = configuration
        let pending = PendingPayment(orderId: request.orderId, origin: .tapToPay, amount: request.amount,
                                     currency: request.currency, maskedPAN: request.card.pan.masked,
                                     last4: request.card.pan.last4, cardBrand: request.card.brand?.rawValue,
                                     callbackUrl: request.callbackUrl, createdAt: config.now())
        do {
            try config.pendingStore.save(pending)
        } catch {
            submission.failBeforeSubmission(.paymentFailed(code: .unknown))
            return
        }
        await config.checkpoint(.pendingWritten)
        if Task.isCancelled {
            // Not sent: nothing can be charged. The pending record goes.
            _ = try? config.pendingStore.remove(orderId: request.orderId)
            submission.failBeforeSubmission(.cancelled)
            return
        }
        config.onEvent(.authorising(orderId: request.orderId, early: early))
        let options = GatewayRequestOptions(timeout: config.timeouts.gatewayRequest, fault: config.gatewayFault)
        let gateway = config.gateway
        let task = Task { () -> Result<AuthorisationResponse, GatewayError> in
            do throws(GatewayError) {
                return .success(try await gateway.authorize(request, options: options))
            } catch {
                return .failure(error)
            }
        }
        submission.start(task)
        await config.checkpoint(.submitted)
    }

    // MARK: - Steps before the card

    private func ensureLocation() async throws(TapToPayError) {
        if session.withLock({ $0.locationReady }) { return }
        let provider = configuration.location
        var state = await provider.authorization()
        if state == .notDetermined { state = await provider.requestAuthorization() }
        switch state {
        case .authorized: break
        case .denied, .notDetermined, .missingUsageDescription: throw .locationDenied
        }
        configuration.onEvent(.waitingForLocation)
        switch await withTimeout(configuration.timeouts.locationFix, clock: configuration.clock, {
            try await provider.currentLocation()
        }) {
        case .value:
            session.withLock { $0.locationReady = true }
        case .timedOut, .failed:
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
            throw failureBeforeSubmission(.unknown)
        }
    }

    private func collectPIN(amount: Int, maskedPAN: String) async throws(TapToPayError) {
        configuration.onEvent(.waitingForPIN)
        let provider = configuration.pin
        let request = PINRequest(amount: amount, currency: configuration.currency, maskedPAN: maskedPAN)
        switch await withTimeout(configuration.timeouts.pinEntry, clock: configuration.clock, {
            try await provider.requestPIN(request)
        }) {
        case .value(let pin?):
            _ = pin   // the PIN goes into the emulated PIN block; it is never kept or printed
        case .value(nil), .cancelled:
            throw .cancelled
        case .timedOut:
            throw .paymentFailed(code: .readerNotReady)
        case .failed:
            throw .paymentFailed(code: .unknown)
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

    private func mapReadFailure(_ error: KernelError) -> TapToPayError {
        if let channel = error.channelError {
            return channel.code == .cancelled || Task.isCancelled ? .cancelled : .paymentFailed(code: .readerNotReady)
        }
        if error.code == .cardDeclinedOffline { return .paymentFailed(code: .cardDeclined) }
        return failureBeforeSubmission(.unknown)
    }
}

/// The authorisation of one payment: not started, refused before sending, or in flight.
private final class Submission: Sendable {
    private struct State {
        var task: Task<Result<AuthorisationResponse, GatewayError>, Never>?
        var failure: TapToPayError?
    }
    private let state = Mutex(State())

    /// Whether the authorisation has started leaving (the submission point is passed).
    var started: Bool { state.withLock { $0.task != nil } }
    var failureBeforeSubmission: TapToPayError? { state.withLock { $0.failure } }

    func start(_ task: Task<Result<AuthorisationResponse, GatewayError>, Never>) {
        state.withLock { $0.task = task; $0.failure = nil }
    }

    func failBeforeSubmission(_ error: TapToPayError) {
        state.withLock { $0.failure = error }
    }

    /// The gateway's answer, or nil when nothing was sent. Returns at once with a failure when
    /// the waiting task is cancelled (the request itself is not withdrawn).
    func answer() async -> Result<AuthorisationResponse, GatewayError>? {
        guard let task = state.withLock({ $0.task }) else { return nil }
        return await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
    }
}
