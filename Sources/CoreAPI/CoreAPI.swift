import PaymentRules
import CardChannel
import Foundation
public import DeviceStore
public import PaymentFlow
import PaymentGateway
import Synchronization

/// How one `processSale` ended: the callback that fired, as a value.
public enum CoreSaleOutcome: Sendable, Hashable {
    /// `onSaleResponse`: the gateway answered (approved only when `code` is `A`).
    case response(CoreSaleResponse)
    /// `onError`: no payment occurred.
    case error(CoreError, description: String)
    /// `onTransactionCommError`: the card may be charged; the sale is pending on the device.
    case commError(CoreSale, error: CoreError, message: String)
}

/// How one `processRefund` ended.
public enum CoreRefundOutcome: Sendable, Hashable {
    case response(CoreRefundResponse)
    case error(CoreError, description: String)
}

/// The CoreAPI-style Tap to Pay SDK (seeds `002` and `003`) over the same reader kernel, payment
/// engine, pending store and gateway as the MONEI-style ``TapToPay``.
///
/// ```swift
/// let core = CoreAPI(configuration: config)
/// await core.initialise(terminal: terminal, saleListener: app, refundListener: app, deviceListener: app)
/// await core.processSale(CoreSale(amount: 1250, currency: "EUR", orderId: "order-1042"))
/// // later, when the device is back online:
/// let reports = try await core.resolvePendingSales()
/// ```
///
/// The submission point — the moment the authorisation request starts leaving — splits every
/// failure: before it the sale listener gets `onError` (no payment); after it
/// `onTransactionCommError` with the sale (the card may be charged). The sale is written to the
/// device's ``PendingPaymentStore`` *before* the submission point and removed once the gateway's
/// answer is known, so a sale interrupted at any point — a lost answer, a torn card after early
/// submission, a killed process — is there to resolve with ``PendingSaleResolver`` (the seeds'
/// five steps).
public final class CoreAPI: Sendable {
    public let configuration: PaymentConfiguration
    /// The emulated iPhone (`APPLE_TTP_` conditions).
    public let environment: CoreDeviceEnvironment
    let deviceMonitor: (any CoreDeviceMonitor)?

    private struct Session {
        var terminal: CoreTerminal?
        var saleListener: (any CoreAPISaleListener)?
        var refundListener: (any CoreAPIRefundListener)?
        var deviceListener: (any CoreAPIDeviceListener)?
        /// `initialise` succeeded.
        var ready = false
        /// The last device status reported to the listener.
        var deviceStatus: CoreDeviceStatus?
    }
    private let session = Mutex(Session())
    /// The sale in progress (busy, cancel) and the answered ones awaiting ``acknowledge(_:)``.
    private let payment = PaymentSession<(CoreSaleOutcome, PendingLease?)>()

    /// - Parameters:
    ///   - configuration: the card source, gateway, pending store, clock, timeouts… shared with
    ///     the MONEI-style face. Its `device` is the model and OS of ``environment``'s default.
    ///   - environment: the emulated device; nil: `configuration.device`, passcode on, account
    ///     linked, merchant not blocked.
    ///   - deviceMonitor: follows the reader's attach/detach (the CLI passes one over PC/SC);
    ///     nil: the device is always there (virtual cards, traces).
    public init(configuration: PaymentConfiguration, environment: CoreDeviceEnvironment? = nil,
                deviceMonitor: (any CoreDeviceMonitor)? = nil) {
        self.configuration = configuration
        self.environment = environment ?? CoreDeviceEnvironment(device: configuration.device)
        self.deviceMonitor = deviceMonitor
    }

    /// A terminal on this configuration's gateway and currency.
    public func terminal(token: String?) -> CoreTerminal {
        CoreTerminal(gateway: configuration.gateway, token: token, currency: configuration.currency,
                     requestTimeout: configuration.timeouts.gatewayRequest)
    }

    // MARK: - initialise

    /// Sets the terminal and the listeners, checks the emulated device, and reports the device.
    ///
    /// An `APPLE_TTP_` condition (``CoreDeviceEnvironment``) goes to `onDeviceError` and returns
    /// false: sales then end with ``CoreError/deviceNotReady``. Otherwise `onDeviceConnected`
    /// fires (or, with a monitor whose reader is missing, `onDeviceError` with the reader fault;
    /// `onDeviceConnected` follows when ``runDeviceMonitor()`` sees the reader come) and it
    /// returns true.
    @discardableResult
    public func initialise(terminal: CoreTerminal, saleListener: any CoreAPISaleListener,
                           refundListener: (any CoreAPIRefundListener)? = nil,
                           deviceListener: (any CoreAPIDeviceListener)? = nil) async -> Bool {
        session.withLock { s in
            s.terminal = terminal
            s.saleListener = saleListener
            s.refundListener = refundListener
            s.deviceListener = deviceListener
            s.ready = false
            s.deviceStatus = nil
        }
        if let failure = environment.check() {
            deviceListener?.onDeviceError(failure.error, withDescription: failure.description)
            return false
        }
        let status = await deviceMonitor?.currentStatus() ?? .connected(info: [:])
        session.withLock { $0.ready = true }
        report(status)
        return true
    }

    /// Whether `initialise` succeeded.
    public var isInitialised: Bool { session.withLock { $0.ready } }

    /// Follows the device monitor until the task is cancelled: `onDeviceConnected` when the reader
    /// comes, `onDeviceError` and `onDeviceDisconnected` when it goes. Returns at once without a
    /// monitor or before a successful `initialise`. Schedule it on a task of your own.
    public func runDeviceMonitor() async {
        guard let monitor = deviceMonitor, isInitialised else { return }
        var known = await monitor.currentStatus()
        report(known)
        while !Task.isCancelled {
            do {
                known = try await monitor.waitForChange(from: known)
            } catch {
                return
            }
            report(known)
        }
    }

    /// Tells the device listener about a new status, once per change (a reader that stays missing
    /// is one `onDeviceError`, however often it is seen, and whatever its description says).
    private func report(_ status: CoreDeviceStatus) {
        func same(_ a: CoreDeviceStatus?, _ b: CoreDeviceStatus) -> Bool {
            switch (a, b) {
            case (.connected?, .connected): true
            case (.unavailable(let x, _)?, .unavailable(let y, _)): x == y
            default: false
            }
        }
        let (listener, wasConnected, changed) = session.withLock { s -> ((any CoreAPIDeviceListener)?, Bool, Bool) in
            let before = s.deviceStatus
            guard !same(before, status) else { return (s.deviceListener, before?.isConnected ?? false, false) }
            s.deviceStatus = status
            return (s.deviceListener, before?.isConnected ?? false, true)
        }
        guard changed else { return }
        switch status {
        case .connected(let info):
            guard !wasConnected else { return }
            listener?.onDeviceConnected(.appleTTP, withDeviceInfo: deviceInfo(info))
        case .unavailable(let error, let description):
            listener?.onDeviceError(error, withDescription: description)
            if wasConnected { listener?.onDeviceDisconnected(.appleTTP) }
        }
    }

    private func deviceInfo(_ extra: [String: String]) -> [String: String] {
        var info = environment.deviceInfo
        info["source"] = configuration.cardSource.name
        info["deviceType"] = DeviceEnum.appleTTP.name
        for (k, v) in extra { info[k] = v }
        return info
    }

    /// A reader fault seen by a sale: the device error, and `onDeviceDisconnected` when the
    /// device is gone.
    private func deviceFailed(_ error: CardChannelError) {
        guard let deviceError = CoreDeviceError(error) else { return }
        let description = error.description
        if deviceError.makesDeviceUnavailable {
            report(.unavailable(deviceError, description: description))
        } else {
            session.withLock { $0.deviceListener }?.onDeviceError(deviceError, withDescription: description)
        }
    }

    /// A card came through: the device is there.
    private func deviceWorked() {
        let wasUnavailable = session.withLock { s -> Bool in
            guard s.ready, let st = s.deviceStatus else { return false }
            return !st.isConnected
        }
        if wasUnavailable { report(.connected(info: [:])) }
    }

    // MARK: - processSale

    /// Runs a sale: waits for a card, reads it, authorises, and calls the sale listener once
    /// (see ``CoreAPISaleListener``). Returns the same outcome as a value.
    ///
    /// Before `initialise` succeeded it returns ``CoreError/deviceNotReady`` (and, without a
    /// sale listener, calls nothing).
    @discardableResult
    public func processSale(_ sale: CoreSale) async -> CoreSaleOutcome {
        let (listener, terminal, ready) = session.withLock { s in (s.saleListener, s.terminal, s.ready) }
        guard let listener, let terminal, ready else {
            let outcome = CoreSaleOutcome.error(.deviceNotReady, description: "the device is not ready: initialise did not succeed")
            deliver(outcome, to: listener)
            return outcome
        }
        let finished = await payment.run(orderId: sale.orderId) { await self.run(sale, terminal: terminal) }
        guard let (outcome, lease) = finished else {
            let outcome = CoreSaleOutcome.error(.transactionInProgress, description: "a sale is already in progress")
            deliver(outcome, to: listener)
            return outcome
        }
        deliver(outcome, to: listener)
        // The listener has the response: the record, which kept the answer until now, leaves.
        if let lease {
            payment.handOver(lease, orderId: sale.orderId, mode: configuration.resultHandOver,
                             onEvent: configuration.onEvent)
        }
        return outcome
    }

    /// Says that `response` has been handed over (the app has shown or stored it): the device's
    /// record of the sale, which kept the answer until now, leaves. Only with
    /// ``ResultHandOver/acknowledged``; a response never acknowledged stays on the device with
    /// the answer in it, and ``resolvePendingSales(variant:)`` reports that answer
    /// (``PendingSaleReport/Outcome/answered(_:)``) without reversing anything: the app may
    /// already have shown it.
    public func acknowledge(_ response: CoreSaleResponse) throws(DeviceStoreError) {
        try payment.acknowledge(orderId: response.orderId)
    }

    /// Cancels the sale in progress: before the submission point it ends with `onError(.cancelled)`;
    /// after it, with `onTransactionCommError(.cancelled)` (the sale stays pending).
    public func cancelSale() {
        payment.cancel()
    }

    private func deliver(_ outcome: CoreSaleOutcome, to listener: (any CoreAPISaleListener)?) {
        switch outcome {
        case .response(let r): listener?.onSaleResponse(r)
        case .error(let e, let d): listener?.onError(e, withDescription: d)
        case .commError(let sale, let e, let m): listener?.onTransactionCommError(sale, withError: e, withMessage: m)
        }
    }

    /// The sale's callback, and the lease of its record when the gateway answered.
    private func run(_ sale: CoreSale, terminal: CoreTerminal) async -> (CoreSaleOutcome, PendingLease?) {
        // 1. The sale, the terminal's settings, the token: before anything touches a card.
        if let problem = PaymentArguments.amountProblem(sale.amount) {
            return (.error(.invalidParameters, description: "the sale's \(problem)"), nil)
        }
        let orderId = sale.orderId
        guard OrderID.isValid(orderId) else {
            return (.error(.invalidParameters, description: "the orderId must be \(OrderID.rule)"), nil)
        }
        if let reason = PaymentArguments.currencyProblem(terminal.currency, terminal: configuration.terminal) {
            return (.error(.terminalSettings, description: "the terminal's currency: \(reason)"), nil)
        }
        guard terminal.currency.uppercased() == configuration.currency.uppercased() else {
            return (.error(.terminalSettings,
                           description: "the terminal's currency \(terminal.currency) is not the reader's \(configuration.currency)"), nil)
        }
        guard sale.currency.uppercased() == terminal.currency.uppercased() else {
            return (.error(.terminalSettings,
                           description: "the sale is in \(sale.currency), the terminal takes \(terminal.currency)"), nil)
        }
        let claims: TokenClaims
        do throws(CoreRestError) {
            claims = try await RestConnector.authenticate(terminal)
        } catch {
            return (.error(Task.isCancelled ? .cancelled : error.code, description: error.message), nil)
        }
        if Task.isCancelled { return (.error(.cancelled, description: "the sale was cancelled; no payment occurred"), nil) }

        // 2. The card and the authorisation, on the shared engine.
        var stored = sale
        stored.currency = terminal.currency.uppercased()
        stored.maskedPAN = nil
        stored.cardType = nil
        stored.uniqueRef = nil
        let request = SaleRequest(orderId: orderId, amount: sale.amount, currency: stored.currency, callbackUrl: nil,
                                  accountId: claims.accountId, origin: .coreAPI,
                                  saleDictionary: stored.convertToDictionary())
        // The authorisation goes with this terminal's token (not the one another terminal on
        // the same gateway validated last).
        var own = configuration
        own.gateway = configuration.gateway.forTerminal(token: terminal.token)
        let attempt = await PaymentEngine(configuration: own).sale(request)
        // A card came through: the device is there.
        if attempt.cardPresented { deviceWorked() }
        switch attempt.result {
        case .success(let outcome):
            let r = outcome.response
            stored.maskedPAN = r.maskedPAN
            stored.cardType = r.cardBrand.rawValue
            stored.uniqueRef = r.uniqueRef
            return (.response(CoreSaleResponse(
                code: r.transactionCode.rawValue, sale: stored, orderId: r.orderId, uniqueRef: r.uniqueRef,
                amount: r.amount, currency: r.currency, maskedPAN: r.maskedPAN, cardType: r.cardBrand.rawValue,
                authCode: r.authorisationCode, responseCode: r.statusCode, responseText: r.messageForTheApp,
                paymentId: r.paymentId)), outcome.lease)
        case .failure(let failure):
            return (outcome(for: failure, sale: stored, card: attempt.card, attemptId: attempt.attemptId), nil)
        }
    }

    /// The callback for a failed sale.
    private func outcome(for failure: SaleFailure, sale: CoreSale, card: CardSummary?, attemptId: String?) -> CoreSaleOutcome {
        switch failure {
        case .beforeSubmission(let reason):
            switch reason {
            case .cancelled, .pinCancelled:
                return .error(.cancelled, description: "the sale was cancelled; no payment occurred")
            case .cardDeclined:
                return .error(.cardDeclined, description: "the card declined the sale (offline decline); no payment occurred")
            case .cvmFailed:
                return .error(.cvmFailed, description: "the card asks for a cardholder verification this device cannot do")
            case .reader(let e):
                if e.code == .noCard {
                    return .error(.timeout, description: "no card was presented in time: \(e)")
                }
                deviceFailed(e)
                return .error(.cardReadFailed, description: "the card could not be read: \(e); no payment occurred")
            case .kernel(let e):
                return .error(.invalidEMVData, description: "the card's EMV data is invalid: \(e)")
            case .pinTimeout:
                return .error(.timeout, description: "no PIN was entered in time")
            case .pinFailed:
                return .error(.pinEntryFailed, description: "the PIN entry failed")
            case .storage(let e) where e.code == .busy:
                return .error(.transactionInProgress, description: "\(e.reason)")
            case .storage(let e):
                return .error(.storageError, description: "the sale could not be stored on the device, so it was not sent: \(e)")
            case .gateway(let e):
                let rest = RestConnector.restError(e, doing: "the authorisation")
                return .error(rest.code, description: rest.message)
            }
        case .afterSubmission(_, .refused(let e)):
            // The gateway answered and recorded nothing: the request reached it, so this is not a
            // communication error (seeds 002/003: one "happens when the device reads the card
            // successfully but the transaction request doesn't reach our gateway"). No payment
            // occurred for this sale; its record leaves the device (one a recovery holds right now
            // stays, and that recovery finds no sale of this attempt).
            if let attemptId, let lease = try? configuration.pendingStore.claim(attemptId) {
                do {
                    try lease.discard()
                } catch {
                    lease.release()
                }
            }
            let rest = RestConnector.restError(e, doing: "the authorisation")
            return .error(rest.code, description: "\(rest.message); the gateway recorded nothing: no payment occurred for this sale")
        case .afterSubmission(let orderId, let cause):
            var sale = sale
            // The card of this attempt's request (the engine knows it once a request left); the
            // order's newest record may be another attempt's.
            if let card {
                sale.maskedPAN = card.maskedPAN
                sale.cardType = card.brand
            } else if let pending = try? configuration.pendingStore.get(orderId: orderId) {
                sale.maskedPAN = pending.maskedPAN
                sale.cardType = pending.cardBrand
            }
            let tail = "the outcome of order \(orderId) is unknown and the card may be charged; the sale is pending on the device: resolve it (transaction list, then reversal) before charging again"
            switch cause {
            case .gateway(let e):
                let code: CoreError = switch e.code {
                case .timeout: .timeout
                case .cancelled: .cancelled
                default: .networkError
                }
                return .commError(sale, error: code, message: "\(e); \(tail)")
            case .read(let e):
                if let channel = e.channelError {
                    deviceFailed(channel)
                    return .commError(sale, error: .cardReadFailed, message: "the card failed after the request left: \(e); \(tail)")
                }
                return .commError(sale, error: .invalidEMVData, message: "the card broke the protocol after the request left: \(e); \(tail)")
            case .cancelled:
                return .commError(sale, error: .cancelled, message: "cancelled while the answer was awaited; \(tail)")
            case .refused:
                preconditionFailure("a refusal is a transaction error, handled above")
            case .answerNotKept(let e):
                return .commError(sale, error: .storageError,
                                  message: "the gateway's answer could not be stored on the device (\(e)); \(tail)")
            }
        }
    }

    // MARK: - processRefund

    /// A referenced refund of a sale by its uniqueRef; calls the refund listener once. A refund
    /// that cannot reach the gateway ends with `onError` (``CoreError/networkError`` or
    /// ``CoreError/timeout``): it may have been done — list the sale's transactions before
    /// refunding again.
    @discardableResult
    public func processRefund(_ refund: CoreRefund) async -> CoreRefundOutcome {
        let (listener, terminal) = session.withLock { s in (s.refundListener, s.terminal) }
        let outcome = await refundOutcome(refund, terminal: terminal)
        switch outcome {
        case .response(let r): listener?.onRefundResponse(r)
        case .error(let e, let d): listener?.onError(e, withDescription: d)
        }
        return outcome
    }

    private func refundOutcome(_ refund: CoreRefund, terminal: CoreTerminal?) async -> CoreRefundOutcome {
        guard let terminal else { return .error(.deviceNotReady, description: "call initialise first") }
        guard !refund.uniqueRef.isEmpty else { return .error(.invalidParameters, description: "the refund has no uniqueRef") }
        if let a = refund.amount, a <= 0 {
            return .error(.invalidParameters, description: "the refund amount must be more than 0 (got \(a))")
        }
        do throws(CoreRestError) {
            _ = try await RestConnector.authenticate(terminal)
        } catch {
            return .error(error.code, description: error.message)
        }
        do {
            let r = try await terminal.gateway.refund(uniqueRef: refund.uniqueRef, amount: refund.amount,
                                                      options: terminal.requestOptions)
            return .response(CoreRefundResponse(
                code: TransactionCode.approved.rawValue, uniqueRef: r.uniqueRef, originalUniqueRef: r.originalUniqueRef,
                orderId: r.orderId, amount: r.amount, currency: r.currency, remainingAmount: r.remainingAmount,
                responseCode: r.statusCode, responseText: r.statusMessage))
        } catch {
            let rest = RestConnector.restError(error, doing: "the refund")
            let message = error.isCommunicationFailure
                ? "\(rest.message); the refund may have been done: list the sale's transactions before refunding again"
                : rest.message
            return .error(rest.code, description: message)
        }
    }

    // MARK: - Pending sales

    /// The sales stored on the device whose outcome is unknown, oldest first (the CoreAPI-style
    /// ones; the MONEI-style face's pending payments are left out).
    public func pendingSales() throws(DeviceStoreError) -> [CoreSale] {
        try configuration.pendingStore.all().filter { $0.origin == .coreAPI }.compactMap(CoreSale.init(pending:))
    }

    /// Runs the seeds' recovery for every pending sale (except the one in progress), with the
    /// terminal given to `initialise` (without one, every request fails with
    /// ``CoreError/invalidTokenSettings`` and every sale stays pending).
    public func resolvePendingSales(variant: SeedVariant = .seed002) async throws(DeviceStoreError) -> [PendingSaleReport] {
        let terminal = session.withLock { $0.terminal }
        let inFlight = payment.orderInProgress
        let resolver = PendingSaleResolver(terminal: terminal ?? self.terminal(token: nil),
                                           store: configuration.pendingStore, variant: variant)
        return try await resolver.resolvePending(skipping: inFlight.map { [$0] } ?? [])
    }
}
