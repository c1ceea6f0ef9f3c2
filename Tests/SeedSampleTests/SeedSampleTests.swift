import CardChannel
import DeviceStore
import Foundation
import GatewayService
import PaymentGateway
import Synchronization
import PaymentFlow
import TapToPay
import Testing
import TestSupport
import Timing
import VirtualCard

/// What the sample's stubbed helpers were called with, in order.
enum AppCalls {
    private static let calls = Mutex<[String]>([])
    static func record(_ call: String) { calls.withLock { $0.append(call) } }
    /// The calls since the last `take()`.
    static func take() -> [String] { calls.withLock { c in defer { c = [] }; return c } }
}

/// A reader where no card is presented until the task is cancelled; `waiting` fires once it waits.
private final class WaitingReader: CardSource {
    let waiting = Mutex<[CheckedContinuation<Void, Never>]?>([])
    var name: String { "waiting reader" }

    func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        let waiters = waiting.withLock { w -> [CheckedContinuation<Void, Never>] in defer { w = nil }; return w ?? [] }
        for w in waiters { w.resume() }
        do {
            try await clock.sleep(for: timeout)
        } catch {
            throw CardChannelError(.cancelled, "cancelled while waiting for a card")
        }
        throw CardChannelError(.noCard, "no card within \(timeout)")
    }

    /// Returns once the reader is waiting for a card.
    func untilWaiting() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = waiting.withLock { w -> Bool in
                guard w != nil else { return true }
                w?.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
}

/// Seed 000's "Handle errors in code", verbatim (HandleErrorsInCode.swift), run against the static
/// API over the shared instance for each outcome; the branch that ran is read from the stubs. The
/// shared instance is process-wide: this suite is the only one that uses it, one test at a time.
@Suite("Seed 000's sample, compiled and run", .serialized)
struct SeedSampleTests {
    let dir = TempDir(prefix: "tapemu-seedsample")
    let gateway: EmbeddedGateway

    init() throws {
        gateway = try EmbeddedGateway(dataDirectory: dir.path)
    }

    /// Configures the shared instance on this test's data directory.
    func configure(card: any CardSource = VirtualCardSource(profile: CardProfiles.named("visa-qvsdc")!, simulatesCardTime: false),
                   location: FixedLocationProvider = FixedLocationProvider(),
                   terms: Bool = true, fault: GatewayFault? = nil) throws {
        TapToPay.configure(TapToPay.Configuration(
            cardSource: card, gateway: gateway, pendingStore: try PendingPaymentStore(dataDirectory: dir.path),
            location: location, terms: FixedTermsProvider(accepts: terms), gatewayFault: fault))
        _ = AppCalls.take()
    }

    func token() -> String { gateway.issueToken(accountId: "acct_seed_sample") }

    func profile(_ name: String) -> CardProfile { CardProfiles.named(name)! }

    @Test func approvedAndDeclinedAreShown() async throws {
        try configure()
        try await TapToPay.prepare(token: token())
        await handleErrorsInCode(amountInCents: 1250, orderId: "seed-ok", webhookUrl: nil)
        #expect(AppCalls.take() == ["show(approved)"])
        // "Declined payments are not errors".
        await handleErrorsInCode(amountInCents: 1251, orderId: "seed-no", webhookUrl: "https://merchant.example/hook")
        #expect(AppCalls.take() == ["show(declined)"])
        #expect(try await gateway.charges(orderId: "seed-ok").first?.status == .approved)
    }

    /// Card read errors before and after the request left, and an answer lost after the charge:
    /// the sample shows the pending state with the order id. The truth is beside it.
    static let unclear: [(String, Int?, GatewayFault?, Bool)] = [
        ("torn-before", 1, nil, false), ("torn-after", 3, nil, true), ("lost-answer", nil, .lostAnswer, true),
    ]

    @Test(arguments: unclear)
    func outcomeUnknownShowsPending(orderId: String, tear: Int?, fault: GatewayFault?, charged: Bool) async throws {
        let card = tear.map { profile("visa-qvsdc").withTear(afterExchange: $0) } ?? profile("visa-qvsdc")
        try configure(card: VirtualCardSource(profile: card, simulatesCardTime: false), fault: fault)
        try await TapToPay.prepare(token: token())
        await handleErrorsInCode(amountInCents: 1000, orderId: orderId, webhookUrl: nil)
        #expect(AppCalls.take() == ["showPending(\(orderId))"])
        let attempt = try #require(TapToPay.lastAttempt)
        #expect(attempt.error == .outcomeUnknown(orderId: orderId))
        #expect(try await TapToPay.shared().groundTruth(of: attempt).charged == charged)
    }

    /// The user's cancel while the reader waits: the sample's `break` — no helper is called.
    @Test func cancelledRunsTheBreak() async throws {
        let reader = WaitingReader()
        try configure(card: reader)
        try await TapToPay.prepare(token: token())
        let sample = Task { await handleErrorsInCode(amountInCents: 1000, orderId: "seed-cx", webhookUrl: nil) }
        await reader.untilWaiting()
        TapToPay.cancel()
        await sample.value
        #expect(AppCalls.take() == [])
        #expect(TapToPay.lastAttempt?.error == .cancelled)
        #expect(try await gateway.charges(orderId: "seed-cx").isEmpty)
    }

    @Test func paymentFailedShowsTheFailure() async throws {
        try configure(card: VirtualCardSource(profile: profile("offline-decline"), simulatesCardTime: false))
        try await TapToPay.prepare(token: token())
        await handleErrorsInCode(amountInCents: 1000, orderId: "seed-aac", webhookUrl: nil)
        #expect(AppCalls.take() == ["showFailure(cardDeclined)"])
    }

    /// The other branches: not prepared, location, terms, and `default` (an invalid amount).
    @Test func theOtherBranches() async throws {
        try configure()
        await handleErrorsInCode(amountInCents: 1000, orderId: "seed-np", webhookUrl: nil)
        #expect(AppCalls.take() == ["renewTokenAndPrepare"])

        try configure(location: FixedLocationProvider(state: .denied))
        await #expect(throws: TapToPayError.locationDenied) { try await TapToPay.prepare(token: token()) }
        await handleErrorsInCode(amountInCents: 1000, orderId: "seed-loc", webhookUrl: nil)
        #expect(AppCalls.take() == ["showLocationSettingsHint"])

        try configure(terms: false)
        try await TapToPay.prepare(token: token())
        await handleErrorsInCode(amountInCents: 1000, orderId: "seed-terms", webhookUrl: nil)
        #expect(AppCalls.take() == ["showTermsRequired"])

        try configure()
        try await TapToPay.prepare(token: token())
        await handleErrorsInCode(amountInCents: 0, orderId: "seed-arg", webhookUrl: nil)
        #expect(AppCalls.take() == ["showError(\(TapToPayError.invalidArgument))"])
        #expect(nameWithoutDefault(.paymentFailed(code: .readerNotReady)) == "readerNotReady")
    }

    /// The shared instance from the environment: the embedded gateway and the device's store in
    /// TAPEMU_DATA_DIR, the card TAPEMU_CARD; TAPEMU_GATEWAY names a served gateway; and each
    /// wrong value is refused with its reason.
    @Test func configurationFromTheEnvironment() async throws {
        let envDir = TempDir(prefix: "tapemu-seedsample-env")
        let config = try TapToPay.configuration(environment: ["TAPEMU_DATA_DIR": envDir.path, "TAPEMU_CARD": "mastercard-mchip"])
        let embedded = try #require(config.gateway as? EmbeddedGateway)
        let tapToPay = TapToPay(configuration: config)
        try await tapToPay.prepare(token: embedded.issueToken(accountId: "acct_env"))
        let result = try await tapToPay.acceptPayment(amount: 1250, orderId: "env-1")
        #expect(result.status == .approved && result.last4 == "0434")
        #expect(config.pendingStore.dataDirectory == envDir.path)

        let remote = try TapToPay.configuration(environment: ["TAPEMU_DATA_DIR": envDir.path, "TAPEMU_GATEWAY": "http://127.0.0.1:8080"])
        #expect((remote.gateway as? RemoteGateway)?.baseURL == "http://127.0.0.1:8080")
        #expect(remote.cardSource.name.contains(TapToPay.defaultCardProfile))

        #expect(throws: SharedInstanceError.self) {
            try TapToPay.configuration(environment: ["TAPEMU_DATA_DIR": envDir.path, "TAPEMU_GATEWAY": "ftp://x"])
        }
        #expect(throws: SharedInstanceError.self) {
            try TapToPay.configuration(environment: ["TAPEMU_DATA_DIR": envDir.path, "TAPEMU_CARD": "no-such-card"])
        }
        #expect(throws: SharedInstanceError.self) {
            try TapToPay.configuration(environment: ["TAPEMU_DATA_DIR": "/proc/tapemu-cannot-be-here"])
        }
    }
}
