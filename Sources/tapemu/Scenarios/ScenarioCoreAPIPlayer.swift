import CardChannel
import Foundation
import PaymentGateway
import CoreAPI
import PaymentFlow
import VirtualCard
import TapToPayTesting

/// What a CoreAPI payment leaves for the backend's recovery and for the grade.
struct CorePlay: Sendable {
    /// The terminal's token: the backend's credential for the gateway's CoreAPI REST (a terminal
    /// lists and reverses its own orders only).
    var token: String
    /// The card's last four digits as the SDK handed them back (the response, or the sale of
    /// `onTransactionCommError`), nil when no card was read.
    var cardLastFour: String?
    var uniqueRef: String?
    /// The earlier sale of this orderId on this terminal (``Scenario/PriorSale``), as the gateway listed it.
    var prior: CoreTransactionSummary?
}

/// The order's sales in the ledger, split into this payment's and the earlier one's.
struct CoreLedgerState: Sendable {
    var this: CoreTransactionSummary?
    var prior: CoreTransactionSummary?
}

/// Hears every callback of one CoreAPI sale, in order, as `onError.cardDeclined`-style codes.
final class CoreListenerLog: CoreAPISaleListener, CoreAPIDeviceListener, @unchecked Sendable {
    private let lock = NSLock()
    private var _calls: [String] = []
    private var _messages: [String] = []
    var calls: [String] { lock.withLock { _calls } }
    /// Each callback's description (no PAN: the SDK's messages mask it).
    var messages: [String] { lock.withLock { _messages } }
    private func append(_ s: String, _ message: String? = nil) {
        lock.withLock {
            _calls.append(s)
            _messages.append(message.map { "\(s): \($0)" } ?? s)
        }
    }

    func onSaleResponse(_ response: CoreSaleResponse) { append("onSaleResponse.\(response.code)") }
    func onError(_ error: CoreError, withDescription message: String?) { append("onError.\(error.name)", message) }
    func onTransactionCommError(_ sale: CoreSale, withError error: CoreError, withMessage message: String?) {
        append("onTransactionCommError.\(error.name)", message)
    }
    func onDeviceError(_ deviceError: CoreDeviceError, withDescription message: String?) { append("onDeviceError.\(deviceError.name)") }
    func onDeviceConnected(_ type: DeviceEnum, withDeviceInfo deviceInfo: [String: String]) {}
    func onDeviceDisconnected(_ type: DeviceEnum) {}
}

extension ScenarioPlayer {
    /// Plays one scenario's sale on the CoreAPI face (seeds 002/003), through ``coreGateway``.
    func playCoreAPI(_ scenario: Scenario, orderId: String, terminal: String = "scenarios") async throws -> PlayedPayment {
        guard let served = coreGateway else { throw ScenarioRunError("no gateway for the CoreAPI face") }
        let setup = scenario.setup
        let token = try await issueToken(TokenRequest(expired: false, accountId: "acct_\(orderId)", needsOwnAccount: false,
                                                      pointOfSaleId: terminal))
        let gateway = Self.gateway(served, token: token)
        var prior: CoreTransactionSummary?
        if let p = setup.priorSale {
            var plain = Scenario.Setup.plain
            plain.card = p.card
            let (core, log) = try await coreAPI(plain, gateway: gateway, token: token)
            let outcome = await core.processSale(CoreSale(amount: p.amount, orderId: orderId))
            guard case .response(let r) = outcome, r.isApproved else {
                throw ScenarioRunError("the earlier sale of \(orderId) was not approved: \(log.messages.joined(separator: "; "))")
            }
            prior = try await Self.transactions(orderId, gateway: gateway, token: token).first { $0.uniqueRef == r.uniqueRef }
        }
        let (core, log) = try await coreAPI(setup, gateway: gateway, token: token)
        let outcome = await core.processSale(CoreSale(amount: setup.amount, orderId: orderId))
        let sdk: Scenario.SDKOutcome
        var lastFour: String?, uniqueRef: String?, paymentId: String?
        switch outcome {
        case .response(let r):
            sdk = r.isApproved ? .approved : .declined
            (lastFour, uniqueRef, paymentId) = (String(r.maskedPAN.suffix(4)), r.uniqueRef, r.paymentId)
        case .commError(let sale, _, _):
            sdk = .error(log.calls.joined(separator: "+"))
            lastFour = sale.panLastFour
        case .error:
            sdk = .error(log.calls.joined(separator: "+"))
        }
        let play = CorePlay(token: token, cardLastFour: lastFour, uniqueRef: uniqueRef, prior: prior)
        let state = try await coreLedgerState(orderId, amount: setup.amount, play: play)
        let commError = if case .commError = outcome { true } else { false }
        var played = PlayedPayment(orderId: orderId, amount: setup.amount, sdk: sdk, paymentId: paymentId,
                                   submitted: state.this != nil || commError || sdk == .approved || sdk == .declined,
                                   charged: state.this?.code == TransactionCode.approved.rawValue, recorded: state.this != nil)
        played.core = play
        played.detail = log.messages.joined(separator: "; ")
        return played
    }

    /// The order's sales now: this payment's (not the earlier sale; its amount and, when a card
    /// was read, its last four) and the earlier one's.
    func coreLedgerState(_ orderId: String, amount: Int, play: CorePlay) async throws -> CoreLedgerState {
        guard let served = coreGateway else { throw ScenarioRunError("no gateway for the CoreAPI face") }
        let sales = try await Self.transactions(orderId, gateway: Self.gateway(served, token: play.token), token: play.token)
        let this = sales.first { s in
            s.uniqueRef != play.prior?.uniqueRef && s.amount == amount
                && (play.cardLastFour.map { s.cardNumber?.hasSuffix($0) == true } ?? true)
        }
        return CoreLedgerState(this: this, prior: play.prior.flatMap { p in sales.first { $0.uniqueRef == p.uniqueRef } })
    }

    static func transactions(_ orderId: String, gateway: any Gateway, token: String) async throws -> [CoreTransactionSummary] {
        do throws(CoreRestError) {
            return try await RestConnector.requestTransactionList(
                CoreTransactionFilter(orderId: orderId), with: CoreTerminal(gateway: gateway, token: token))
                .transactionSummary.filter { $0.type == TransactionKind.sale.rawValue }
        } catch {
            throw ScenarioRunError("the transaction list of \(orderId): \(error)")
        }
    }

    private func coreAPI(_ setup: Scenario.Setup, gateway: any Gateway, token: String) async throws -> (CoreAPI, CoreListenerLog) {
        let source: any CardSource = try setup.card.map { name in
            guard let profile = CardProfiles.named(name) else { throw ScenarioRunError("no card profile '\(name)'") }
            return VirtualCardSource(profile: profile)
        } ?? NoCardSource()
        let config = PaymentConfiguration(
            cardSource: source, gateway: AuthorisationTimeout(inner: gateway, timeout: setup.gatewayTimeout),
            pendingStore: pendingStore,
            timeouts: PaymentTimeouts(cardPresentation: setup.cardWait, locationFix: setup.locationFix,
                                      gatewayRequest: Self.requestTimeout),
            gatewayFault: setup.fault)
        let core = CoreAPI(configuration: config,
                           environment: setup.passcodeDisabled ? CoreDeviceEnvironment(passcodeEnabled: false) : nil)
        let log = CoreListenerLog()
        await core.initialise(terminal: core.terminal(token: token), saleListener: log, deviceListener: log)
        return (core, log)
    }
}
