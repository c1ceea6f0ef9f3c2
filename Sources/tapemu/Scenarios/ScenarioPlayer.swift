import CardChannel
import DeviceStore
import GatewayService
import Foundation
import PaymentGateway
import PaymentFlow
import TapToPay
import Timing
import VirtualCard

/// A card source that never gives a card: the reader waits its time (`noCard`), or until the
/// task is cancelled (the user's cancel on the payment sheet).
struct NoCardSource: CardSource {
    var name: String { "no card" }
    func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        do {
            try await clock.sleep(for: timeout)
        } catch {
            throw CardChannelError(.cancelled, "cancelled while waiting for a card")
        }
        throw CardChannelError(.noCard, "no card within \(timeout)")
    }
}

/// What one played payment ended with, and the truth beside it.
struct PlayedPayment: Sendable {
    var orderId: String
    var amount: Int
    var sdk: Scenario.SDKOutcome
    var paymentId: String?
    /// Whether the request started leaving, and whether the ledger holds its approved sale.
    var submitted: Bool
    var charged: Bool
    /// Whether the ledger holds any sale of this order (approved or declined).
    var recorded: Bool
    /// CoreAPI: the terminal's token, the card and the earlier sale (nil on the MONEI face).
    var core: CorePlay? = nil

    var truth: Scenario.Truth {
        if charged { return .charged }
        if recorded { return .declinedInLedger }
        return submitted ? .nothingRecorded : .nothingSent
    }
}

/// Plays one scenario's payment as a terminal running the MONEI face: its own `TapToPay`
/// over the given gateway and the device's pending store.
struct ScenarioPlayer: Sendable {
    /// The gateway the terminal pays through, and a way to issue it tokens.
    var gateway: any Gateway
    /// A token for `accountId`; each terminal has its own account, so one's answer to the terms is not another's.
    var issueToken: @Sendable (_ expired: Bool, _ accountId: String) async throws -> String
    var pendingStore: PendingPaymentStore
    var callbackUrl: String
    /// The gateway the CoreAPI face pays through: always a served one (the run's embedded
    /// gateway over loopback, or --gateway), since the backend's recovery speaks its CoreAPI REST
    /// with the terminal's token and a terminal acts only on the orders it sent over it.
    var coreGateway: (any Gateway)? = nil
    /// The SDK version the gateway blocks (`sdkBlocked`).
    static let blockedSDKVersion = "0.0.0-scenario-blocked"

    func play(_ scenario: Scenario, orderId: String, amountOverride: Int? = nil) async throws -> PlayedPayment {
        let setup = scenario.setup
        let amount = amountOverride ?? setup.amount
        let source: any CardSource = try setup.card.map { name in
            guard let profile = CardProfiles.named(name) else { throw ScenarioRunError("no card profile '\(name)'") }
            return VirtualCardSource(profile: profile)
        } ?? NoCardSource()
        let holder = TapToPayHolder()
        let token: String? = switch setup.token {
        case .valid: try await issueToken(false, "acct_\(orderId)")
        case .expired: try await issueToken(true, "acct_\(orderId)")
        case .unreadable: "not-a-token"
        case .none: nil
        }
        let config = TapToPay.Configuration(
            cardSource: source, gateway: Self.gateway(gateway, token: token), pendingStore: pendingStore, location: setup.location,
            terms: FixedTermsProvider(accepts: setup.acceptsTerms), pin: ScriptedPINProvider(setup.pin),
            device: DeviceEnvironment(isSupported: setup.supported),
            sdkVersion: setup.sdkBlocked ? Self.blockedSDKVersion : TapToPay.sdkVersion,
            timeouts: PaymentTimeouts(cardPresentation: setup.cardWait, locationFix: setup.locationFix,
                                      gatewayRequest: setup.gatewayTimeout),
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
        if let attempt = tapToPay.diagnostics(for: orderId) {
            let truth = try await tapToPay.groundTruth(of: attempt)
            (submitted, charged) = (truth.submitted, truth.charged)
        }
        // Asked as this terminal (a served gateway answers a terminal about its own orders); a
        // scenario whose SDK had no valid token asks with one of its own.
        let asker = Self.gateway(gateway, token: setup.token == .valid ? token : try await issueToken(false, "acct_\(orderId)"))
        let recorded = try await asker.charges(orderId: orderId, options: GatewayRequestOptions(fault: GatewayFault.none))
            .contains { $0.kind == .sale }
        return PlayedPayment(orderId: orderId, amount: amount, sdk: sdk, paymentId: paymentId,
                             submitted: submitted, charged: charged, recorded: recorded)
    }
}

extension ScenarioPlayer {
    /// The gateway as this terminal sees it: a served one sends this terminal's token on every
    /// request (terminals playing at once must not share the token one of them prepared with).
    static func gateway(_ gateway: any Gateway, token: String?) -> any Gateway {
        guard let remote = gateway as? RemoteGateway, let token else { return gateway }
        return remote.with(deviceToken: token)
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
struct ScenarioRunError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
