import DeviceStore
import CardChannel
import Foundation
import PaymentGateway
import Synchronization
import PaymentFlow
import TapToPay
import Testing
import VirtualCard
import Timing
import TestSupport

// Test support for the payment flow: a temporary data directory with the embedded gateway and the
// device's pending store, two manual clocks (the flow's and the gateway's, so advancing one never
// fires a deadline of the other), wall time that a test moves, and providers that never answer
// (they suspend until their task is cancelled) so every timeout is driven by a ManualClock.


/// One payment's outcome, as the API hands it back.
enum Outcome: Sendable, CustomStringConvertible {
    case result(PaymentResult)
    case failure(TapToPayError)

    var error: TapToPayError? {
        if case .failure(let e) = self { return e }
        return nil
    }
    var result: PaymentResult? {
        if case .result(let r) = self { return r }
        return nil
    }
    var description: String {
        switch self {
        case .result(let r): "result(\(r.status.rawValue), \(r.paymentId))"
        case .failure(let e): "failure(\(e.code))"
        }
    }
}

/// Suspends the calling task until it is cancelled (returns then, without throwing).
func suspendUntilCancelled() async {
    let cancelled = OneShotEvent()
    await withTaskCancellationHandler {
        await cancelled.wait()
    } onCancel: {
        cancelled.fire()
    }
}

// MARK: - Providers

/// Location allowed (or in any state), whose fix never comes: it suspends until cancelled.
struct SilentLocationProvider: LocationProvider {
    var state: LocationAuthorization = .authorized
    let asked = OneShotEvent()
    func authorization() async -> LocationAuthorization { state }
    func requestAuthorization() async -> LocationAuthorization { state }
    func currentLocation() async throws -> Location {
        asked.fire()
        await suspendUntilCancelled()
        throw CancellationError()
    }
}

/// A location provider whose authorisation the test changes (the user revokes it in Settings),
/// counting the permission prompts. Its fix comes at once, or never when `hasFix` is false.
final class SwitchableLocationProvider: LocationProvider {
    private let state: Mutex<(authorization: LocationAuthorization, prompt: LocationAuthorization, hasFix: Bool)>
    let prompts = Counter()
    let fixes = Counter()

    init(_ authorization: LocationAuthorization, prompt: LocationAuthorization = .authorized, hasFix: Bool = true) {
        state = Mutex((authorization, prompt, hasFix))
    }

    func set(_ authorization: LocationAuthorization, hasFix: Bool = true) {
        state.withLock { $0.authorization = authorization; $0.hasFix = hasFix }
    }

    func authorization() async -> LocationAuthorization { state.withLock { $0.authorization } }
    func requestAuthorization() async -> LocationAuthorization {
        prompts.increment()
        return state.withLock { s in
            s.authorization = s.prompt
            return s.prompt
        }
    }
    func currentLocation() async throws -> Location {
        fixes.increment()
        if state.withLock({ $0.hasFix }) { return Location(latitude: 40.4168, longitude: -3.7038) }
        await suspendUntilCancelled()
        throw CancellationError()
    }
}

/// Answers the terms with a script (the last answer repeats), counting how often it was asked.
final class CountingTermsProvider: TermsProvider {
    private let answers: [Bool]
    let calls = Counter()
    init(_ answers: Bool...) { self.answers = answers }
    func presentTerms() async -> Bool {
        let n = calls.increment()
        return answers[min(n, answers.count) - 1]
    }
}

/// Terms that the merchant never answers: the sheet stays up until the task is cancelled.
struct SilentTermsProvider: TermsProvider {
    let asked = OneShotEvent()
    func presentTerms() async -> Bool {
        asked.fire()
        await suspendUntilCancelled()
        return false
    }
}

/// A PIN pad that never answers (it suspends until cancelled), counting requests.
struct SilentPINProvider: PINProvider {
    let asked = OneShotEvent()
    func requestPIN(_ request: PINRequest) async throws -> PIN? {
        asked.fire()
        await suspendUntilCancelled()
        throw CancellationError()
    }
}

/// A PIN pad that records what it was asked.
final class RecordingPINProvider: PINProvider {
    let requests = Mutex<[PINRequest]>([])
    let answer: PIN?
    init(_ answer: PIN?) { self.answer = answer }
    func requestPIN(_ request: PINRequest) async throws -> PIN? {
        requests.withLock { $0.append(request) }
        return answer
    }
}

let testPIN = PIN("4321")!

// MARK: - Card sources

/// A reader where no card is ever presented: it waits out the presentation timeout on the
/// clock it is given (as ``CardSource`` requires) and throws `.noCard`.
struct EmptyReaderSource: CardSource {
    let waiting = OneShotEvent()
    var name: String { "empty reader" }
    func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        waiting.fire()
        do {
            try await clock.sleep(for: timeout)
        } catch {
            throw CardChannelError(.cancelled, "cancelled while waiting for a card")
        }
        throw CardChannelError(.noCard, "no card within \(timeout)")
    }
}

/// A reader whose session fails before any card is read (the reader went away).
struct BrokenReaderSource: CardSource {
    var name: String { "broken reader" }
    func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        throw CardChannelError(.readerRemoved, "the reader was removed")
    }
}

/// A card source that counts how many times a card was asked for.
struct CountingSource: CardSource {
    let inner: any CardSource
    let calls = Counter()
    var name: String { inner.name }
    func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        calls.increment()
        return try await inner.waitForCard(timeout: timeout, clock: clock)
    }
}

func profile(_ name: String) -> CardProfile {
    guard let p = CardProfiles.named(name) else { fatalError("no built-in card profile \(name)") }
    return p
}

/// A virtual card that spends no time (the flow's clock never has to move for a read).
func virtualCard(_ p: CardProfile) -> VirtualCardSource {
    VirtualCardSource(profile: p, simulatesCardTime: false)
}

func virtualCard(_ name: String) -> VirtualCardSource { virtualCard(profile(name)) }

// MARK: - Harness

/// A temporary data directory with the embedded gateway and the device's pending store.
final class Harness: Sendable {
    /// Removed with the harness.
    private let temp = TempDir(prefix: "tapemu-paytests")
    let directory: String
    /// The flow's clock (card waits, APDU deadlines, PIN entry, location fix).
    let flowClock = ManualClock()
    /// The gateway's clock (no answer, slow answer: the request timeout runs out there).
    let gatewayClock = ManualClock()
    let wall = WallClock()
    let gateway: EmbeddedGateway
    let store: PendingPaymentStore

    static let accountId = "acct_paytests"
    /// The gateway timeout of the tests (the flow's default, 30 s).
    static let gatewayTimeout: Duration = .seconds(30)

    init() throws {
        directory = temp.path
        let wall = self.wall
        gateway = try EmbeddedGateway(configuration: EmbeddedGateway.Configuration(
            dataDirectory: directory, clock: gatewayClock, requestTimeout: Self.gatewayTimeout, now: { wall.now }))
        store = try PendingPaymentStore(dataDirectory: directory)
    }

    func token(ttl: Duration = .seconds(3600)) -> String {
        gateway.issueToken(accountId: Self.accountId, ttl: ttl)
    }

    func configuration(
        source: any CardSource = virtualCard("visa-qvsdc"),
        gateway: (any Gateway)? = nil,
        location: any LocationProvider = FixedLocationProvider(),
        terms: any TermsProvider = FixedTermsProvider(accepts: true),
        pin: any PINProvider = ScriptedPINProvider(.pin(testPIN)),
        device: DeviceEnvironment = DeviceEnvironment(),
        timeouts: PaymentTimeouts = PaymentTimeouts(gatewayRequest: Harness.gatewayTimeout),
        fault: GatewayFault? = nil,
        submitsEarly: Bool = true,
        checkpoint: @escaping @Sendable (FlowCheckpoint) async -> Void = { _ in },
        onEvent: @escaping @Sendable (PaymentEvent) -> Void = { _ in }
    ) -> TapToPay.Configuration {
        let wall = self.wall
        return TapToPay.Configuration(
            cardSource: source, gateway: gateway ?? self.gateway, pendingStore: store,
            clock: MonotonicClock(flowClock), now: { wall.now }, location: location, terms: terms, pin: pin,
            device: device, timeouts: timeouts, gatewayFault: fault, submitsEarly: submitsEarly,
            checkpoint: checkpoint, onEvent: onEvent)
    }

    /// A prepared API on `configuration`.
    func prepared(_ configuration: TapToPay.Configuration) async throws -> TapToPay {
        let tapToPay = TapToPay(configuration: configuration)
        try await tapToPay.prepare(token: token())
        return tapToPay
    }

    /// Where a payment waits before a card is read.
    enum WaitBeforeTheCard: String, CaseIterable, Sendable {
        /// The reader waits for a card, and none is presented.
        case forACard
        /// The terms are shown, and never answered.
        case onTheTerms
    }

    /// A prepared API and its payment of `orderId` (started in a task of its own), once the
    /// payment waits at `point`.
    func paymentWaiting(_ point: WaitBeforeTheCard = .forACard,
                        orderId: String) async throws -> (tapToPay: TapToPay, payment: Task<Outcome, Never>) {
        let reader = EmptyReaderSource(), terms = SilentTermsProvider()
        let tapToPay = try await prepared(point == .forACard ? configuration(source: reader) : configuration(terms: terms))
        let payment = startPayment(tapToPay, orderId: orderId)
        await (point == .forACard ? reader.waiting : terms.asked).wait()
        return (tapToPay, payment)
    }

    /// A prepared API and its payment of `amount` for `orderId` (started in a task of its own),
    /// once the payment is held at `point`: it goes on at `gate.release()`.
    func paymentHeld(at point: FlowCheckpoint, amount: Int = 1000, orderId: String) async throws
        -> (tapToPay: TapToPay, payment: Task<Outcome, Never>, gate: CoreCheckpointGate) {
        let gate = CoreCheckpointGate(at: point)
        let tapToPay = try await prepared(configuration(checkpoint: gate.hook))
        let payment = startPayment(tapToPay, amount: amount, orderId: orderId)
        await gate.waitUntilReached()
        return (tapToPay, payment, gate)
    }

    /// A prepared API whose results are handed over only when acknowledged
    /// (`resultHandOver = .acknowledged`): until then each record keeps its answer.
    func preparedAcknowledging() async throws -> TapToPay {
        var config = configuration()
        config.resultHandOver = .acknowledged
        return try await prepared(config)
    }

    /// Pays 10.00 for `orderId` through `tapToPay`, whose gateway never answers (`fault: .noAnswer`):
    /// the gateway's clock runs the request's timeout out, and the payment is `outcomeUnknown`.
    func payWithoutAnAnswer(_ tapToPay: TapToPay, orderId: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        let payment = startPayment(tapToPay, amount: 1000, orderId: orderId)
        await gatewayClock.waitForSleepers(1)
        gatewayClock.advance(by: Self.gatewayTimeout + .seconds(1))
        expectFailure(await payment.value, .outcomeUnknown(orderId: orderId), sourceLocation: sourceLocation)
    }

    /// What the gateway holds for an order (the seed's step 3, `charges` by orderId).
    func charges(_ orderId: String) async throws -> [Payment] {
        try await gateway.charges(orderId: orderId, options: GatewayRequestOptions(fault: GatewayFault.none))
    }

    /// Asserts the seed's promise for a typed failure: no payment for the order, and nothing
    /// left pending on the device.
    func expectNoPayment(_ orderId: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let charges = try await charges(orderId)
        #expect(charges.isEmpty, "a typed failure left \(charges.count) charge(s) for \(orderId)",
                sourceLocation: sourceLocation)
        #expect(try store.get(orderId: orderId) == nil, "a typed failure left a pending record for \(orderId)",
                sourceLocation: sourceLocation)
    }
}

/// Runs one payment and catches its typed error.
func pay(_ tapToPay: TapToPay, amount: Int = 1000, orderId: String, callbackUrl: String? = nil) async -> Outcome {
    do {
        return .result(try await tapToPay.acceptPayment(amount: amount, orderId: orderId, callbackUrl: callbackUrl))
    } catch {
        return .failure(error)
    }
}

/// Runs `body` while moving `clock` forward by `step` whenever something sleeps on it, until
/// `body` returns. Only for a clock whose every sleeper should be woken (the gateway's clock:
/// its only sleepers are the no-answer and slow-answer waits).
func driving<T: Sendable>(_ clock: ManualClock, by step: Duration,
                          _ body: @escaping @Sendable () async -> T) async -> T {
    let done = OneShotEvent()
    let work = Task { () -> T in
        let value = await body()
        done.fire()
        return value
    }
    // Once the work is done, something must sleep so that `waitForSleepers` returns.
    let poke = Task {
        _ = await work.value
        try? await clock.sleep(until: clock.now.advanced(by: .seconds(1 << 40)))
    }
    while true {
        await clock.waitForSleepers(1)
        if done.hasFired { break }
        clock.advance(by: step)
    }
    poke.cancel()
    return await work.value
}

/// Starts a payment in a task of its own (to cancel it, or to run another call beside it).
func startPayment(_ tapToPay: TapToPay, amount: Int = 1000, orderId: String,
                  callbackUrl: String? = nil) -> Task<Outcome, Never> {
    Task { await pay(tapToPay, amount: amount, orderId: orderId, callbackUrl: callbackUrl) }
}

func expectFailure(_ outcome: Outcome, _ expected: TapToPayError,
                   sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(outcome.error == expected, "expected \(expected.code), got \(outcome)", sourceLocation: sourceLocation)
}
