import DeviceStore
import CardChannel
import Foundation
import ISO7816
import PaymentGateway
import Synchronization
import CoreAPI
import PaymentFlow
import TapToPay
import Testing
import VirtualCard
import Timing
import TestSupport

// Helpers of the CoreAPI-style tests (names prefixed `Core` so they never meet the MONEI tests').


/// An append-only log that a test can wait on (a real event, never a timer).
final class CoreEventLog<Event: Sendable>: Sendable {
    private struct State {
        var events: [Event] = []
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }
    private let state = Mutex(State())

    var events: [Event] { state.withLock { $0.events } }

    func append(_ e: Event) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.events.append(e)
            let ready = s.waiters.filter { $0.count <= s.events.count }.map(\.continuation)
            s.waiters.removeAll { $0.count <= s.events.count }
            return ready
        }
        for c in ready { c.resume() }
    }

    /// Returns once the log holds at least `count` events.
    func waitForCount(_ count: Int) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.events.count >= count { return true }
                s.waiters.append((count, c))
                return false
            }
            if now { c.resume() }
        }
    }
}

enum CoreSaleEvent: Sendable, Hashable {
    case response(CoreSaleResponse)
    case error(CoreError, String?)
    case commError(CoreSale, CoreError, String?)
}

enum CoreRefundEvent: Sendable, Hashable {
    case response(CoreRefundResponse)
    case error(CoreError, String?)
}

enum CoreDeviceEvent: Sendable, Hashable {
    case error(CoreDeviceError, String?)
    case connected(DeviceEnum, [String: String])
    case disconnected(DeviceEnum)
}

final class CoreSaleRecorder: CoreAPISaleListener {
    let log = CoreEventLog<CoreSaleEvent>()
    var events: [CoreSaleEvent] { log.events }
    func onSaleResponse(_ response: CoreSaleResponse) { log.append(.response(response)) }
    func onError(_ error: CoreError, withDescription message: String?) { log.append(.error(error, message)) }
    func onTransactionCommError(_ sale: CoreSale, withError error: CoreError, withMessage message: String?) {
        log.append(.commError(sale, error, message))
    }
}

final class CoreRefundRecorder: CoreAPIRefundListener {
    let log = CoreEventLog<CoreRefundEvent>()
    var events: [CoreRefundEvent] { log.events }
    func onRefundResponse(_ response: CoreRefundResponse) { log.append(.response(response)) }
    func onError(_ error: CoreError, withDescription message: String?) { log.append(.error(error, message)) }
}

final class CoreDeviceRecorder: CoreAPIDeviceListener {
    let log = CoreEventLog<CoreDeviceEvent>()
    var events: [CoreDeviceEvent] { log.events }
    func onDeviceError(_ deviceError: CoreDeviceError, withDescription message: String?) {
        log.append(.error(deviceError, message))
    }
    func onDeviceConnected(_ type: DeviceEnum, withDeviceInfo deviceInfo: [String: String]) {
        log.append(.connected(type, deviceInfo))
    }
    func onDeviceDisconnected(_ type: DeviceEnum) { log.append(.disconnected(type)) }

    /// The device errors only.
    var errors: [CoreDeviceError] {
        events.compactMap { if case .error(let e, _) = $0 { return e } else { return nil } }
    }
}

/// Freezes the payment flow at one checkpoint until released, and tells when it got there.
final class CoreCheckpointGate: Sendable {
    let point: FlowCheckpoint
    private let reached = OneShotEvent()
    private let released = OneShotEvent()

    init(at point: FlowCheckpoint) { self.point = point }

    var hook: @Sendable (FlowCheckpoint) async -> Void {
        { p in
            guard p == self.point else { return }
            self.reached.fire()
            await self.released.wait()
        }
    }

    func waitUntilReached() async { await reached.wait() }

    func release() { released.fire() }
}

/// A card source that fails as a reader would: the PC/SC faults on demand.
struct CoreFailingCardSource: CardSource {
    let code: CardChannelError.Code
    var name: String { "failing(\(code))" }
    func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        throw CardChannelError(code, "emulated reader fault \(code)")
    }
}

/// A "card" that answers every command with 6A82 (file not found): no application can be selected.
struct CoreNoApplicationChannel: CardChannel {
    var atr: [UInt8] { [0x3B, 0x80, 0x80, 0x01, 0x01] }
    func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        ResponseAPDU(sw1: 0x6A, sw2: 0x82)
    }
}

struct CoreNoApplicationSource: CardSource {
    var name: String { "no-application" }
    func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        CoreNoApplicationChannel()
    }
}

/// A device monitor a test drives: ``set(_:)`` changes the status and wakes the waiter.
final class CoreScriptedMonitor: CoreDeviceMonitor {
    private struct State {
        var status: CoreDeviceStatus
        var waiters: [(known: CoreDeviceStatus, continuation: CheckedContinuation<CoreDeviceStatus, any Error>, id: Int)] = []
        var nextID = 0
        var waitingWaiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Mutex<State>

    init(_ status: CoreDeviceStatus) { state = Mutex(State(status: status)) }

    func set(_ status: CoreDeviceStatus) {
        let ready = state.withLock { s -> [(CheckedContinuation<CoreDeviceStatus, any Error>)] in
            s.status = status
            let ready = s.waiters.filter { $0.known != status }.map(\.continuation)
            s.waiters.removeAll { $0.known != status }
            return ready
        }
        for c in ready { c.resume(returning: status) }
    }

    func currentStatus() async -> CoreDeviceStatus { state.withLock { $0.status } }

    /// Returns once a task waits for a change.
    func waitForWaiter() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if !s.waiters.isEmpty { return true }
                s.waitingWaiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    func waitForChange(from known: CoreDeviceStatus) async throws -> CoreDeviceStatus {
        let id = state.withLock { s -> Int in s.nextID += 1; return s.nextID }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<CoreDeviceStatus, any Error>) in
                enum Now { case changed(CoreDeviceStatus), cancelled, wait([CheckedContinuation<Void, Never>]) }
                let now = state.withLock { s -> Now in
                    if s.status != known { return .changed(s.status) }
                    if Task.isCancelled { return .cancelled }
                    s.waiters.append((known, c, id))
                    defer { s.waitingWaiters = [] }
                    return .wait(s.waitingWaiters)
                }
                switch now {
                case .changed(let status): c.resume(returning: status)
                case .cancelled: c.resume(throwing: CancellationError())
                case .wait(let ready): for w in ready { w.resume() }
                }
            }
        } onCancel: {
            let c = state.withLock { s -> CheckedContinuation<CoreDeviceStatus, any Error>? in
                guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: i).continuation
            }
            c?.resume(throwing: CancellationError())
        }
    }
}

/// Which token the terminal gets.
enum CoreTokenChoice: Sendable {
    case valid
    case none
    case garbage
    case expired
}

/// A CoreAPI on a data directory: the embedded gateway, the device's pending store, listeners.
/// A second rig on the same directory is the same device after a restart.
struct CoreRig {
    let dir: TempDir
    let gateway: EmbeddedGateway
    let store: PendingPaymentStore
    let core: CoreAPI
    let terminal: CoreTerminal
    let sales: CoreSaleRecorder
    let refunds: CoreRefundRecorder
    let device: CoreDeviceRecorder
    let initialised: Bool

    static let profileName = "visa-qvsdc"

    static func card(_ name: String = profileName) -> VirtualCardSource {
        VirtualCardSource(profile: CardProfiles.named(name)!, simulatesCardTime: false)
    }

    static func make(_ dir: TempDir, source: (any CardSource)? = nil,
                     gatewayClock: any Clock<Duration> = ContinuousClock(),
                     environment: CoreDeviceEnvironment? = nil, monitor: (any CoreDeviceMonitor)? = nil,
                     token: CoreTokenChoice = .valid, initialise: Bool = true,
                     configure: (inout TapToPay.Configuration) -> Void = { _ in }) async throws -> CoreRig {
        let data = dir.path + "/data"
        let gateway = try EmbeddedGateway(configuration: .init(dataDirectory: data, clock: gatewayClock))
        let store = try PendingPaymentStore(dataDirectory: data)
        var config = TapToPay.Configuration(cardSource: source ?? card(), gateway: gateway, pendingStore: store)
        configure(&config)
        let core = CoreAPI(configuration: config, environment: environment, deviceMonitor: monitor)
        let tokenValue: String? = switch token {
        case .valid: gateway.issueToken(accountId: "acct_core_test")
        case .none: nil
        case .garbage: "tpm_test_garbage.notatoken"
        case .expired: gateway.issueToken(accountId: "acct_core_test", ttl: .seconds(-60))
        }
        let terminal = core.terminal(token: tokenValue)
        let rig = CoreRig(dir: dir, gateway: gateway, store: store, core: core, terminal: terminal, initialised: false)
        guard initialise else { return rig }
        let ok = await core.initialise(terminal: terminal, saleListener: rig.sales, refundListener: rig.refunds,
                                       deviceListener: rig.device)
        return CoreRig(dir: dir, gateway: gateway, store: store, core: core, terminal: terminal, initialised: ok,
                       sales: rig.sales, refunds: rig.refunds, device: rig.device)
    }

    /// An approved sale of `amount` for `orderId` on `dir` whose response the app was given but
    /// not acknowledged (`resultHandOver = .acknowledged`): its record keeps the answer until
    /// then — or, if the rig goes away first (as a process that died after the response), until
    /// a recovery reports it. The rig and the response.
    static func approvedNotAcknowledged(_ dir: TempDir, orderId: String,
                                        amount: Int = 1000) async throws -> (rig: CoreRig, response: CoreSaleResponse) {
        let rig = try await make(dir) { $0.resultHandOver = .acknowledged }
        let r = try await rig.answeredSale(amount: amount, orderId: orderId)
        #expect(r.code == "A")
        return (rig, r)
    }

    /// The response to this rig's sale of `amount` for `orderId` (approved or declined, as the
    /// amount's trigger decides); throws ``SaleDidNotAnswer`` when the sale ended otherwise.
    func answeredSale(amount: Int = 1000, orderId: String = coreOrderId()) async throws -> CoreSaleResponse {
        let outcome = await core.processSale(CoreSale(amount: amount, orderId: orderId))
        guard case .response(let r) = outcome else { throw SaleDidNotAnswer(outcome: "\(outcome)", events: "\(sales.events)") }
        return r
    }

    struct SaleDidNotAnswer: Error, CustomStringConvertible {
        let outcome: String
        let events: String
        var description: String { "the sale did not answer: \(outcome); events \(events)" }
    }

    private init(dir: TempDir, gateway: EmbeddedGateway, store: PendingPaymentStore, core: CoreAPI,
                 terminal: CoreTerminal, initialised: Bool, sales: CoreSaleRecorder = CoreSaleRecorder(),
                 refunds: CoreRefundRecorder = CoreRefundRecorder(), device: CoreDeviceRecorder = CoreDeviceRecorder()) {
        self.dir = dir
        self.gateway = gateway
        self.store = store
        self.core = core
        self.terminal = terminal
        self.initialised = initialised
        self.sales = sales
        self.refunds = refunds
        self.device = device
    }

    /// Every ledger row of an order (sales, refunds, reversals).
    func ledgerRows(orderId: String) throws -> [Payment] {
        try gateway.ledger.allPayments().filter { $0.orderId == orderId }
    }

    func reversalCount(orderId: String) throws -> Int {
        try ledgerRows(orderId: orderId).filter { $0.kind == .reversal }.count
    }
}

/// The CoreError of a sale outcome that is an onError.
func coreErrorCode(_ outcome: CoreSaleOutcome) -> CoreError? {
    if case .error(let e, _) = outcome { return e }
    return nil
}

/// The error and sale of an onTransactionCommError outcome.
func coreCommError(_ outcome: CoreSaleOutcome) -> (CoreSale, CoreError)? {
    if case .commError(let s, let e, _) = outcome { return (s, e) }
    return nil
}

/// A unique order id.
func coreOrderId(_ prefix: String = "order") -> String { "\(prefix)-\(UUID().uuidString.prefix(8))" }

/// Another process on a data directory: its own gateway and store (its file locks exclude this
/// process's as another process's would: flock locks belong to the open file).
struct OtherProcess {
    let gateway: EmbeddedGateway
    let store: PendingPaymentStore

    init(_ data: String) throws {
        gateway = try EmbeddedGateway(dataDirectory: data, access: .existing)
        store = try PendingPaymentStore(dataDirectory: data, access: .existing)
    }

    /// That process's MONEI-style API (a visa-qvsdc card), for its recovery.
    var tapToPay: TapToPay {
        TapToPay(configuration: .init(cardSource: virtualCard("visa-qvsdc"), gateway: gateway, pendingStore: store))
    }

    /// That process's CoreAPI recovery.
    func resolver(_ variant: SeedVariant = .seed002) -> PendingSaleResolver {
        PendingSaleResolver(terminal: CoreTerminal(gateway: gateway, token: gateway.issueToken(accountId: "acct_other")),
                            store: store, variant: variant)
    }
}
