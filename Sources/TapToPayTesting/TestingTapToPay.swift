public import Foundation
import DeviceStore
import PaymentFlow
public import PaymentGateway
public import TapToPay

/// Seed 000's `TapToPay` for a team's own Swift tests: every payment meets a scenario of the
/// catalogue (`tapemu scenarios list`), in-process, against an emulated gateway of its own.
///
/// ```swift
/// import TapToPay
/// import TapToPayTesting
///
/// let tapToPay = try TapToPay.testing()
/// try await tapToPay.prepare(token: tapToPay.testToken())
/// tapToPay.nextPayment(meets: .answerLostAfterCommit)
/// do {
///     _ = try await tapToPay.acceptPayment(amount: 1000, orderId: "order-1", callbackUrl: nil)
/// } catch .outcomeUnknown(let orderId) {
///     // What the seed's SDK throws; the truth beside it: the card was charged.
///     #expect(tapToPay.lastPayment?.truth == .charged)
/// }
/// ```
///
/// Each `acceptPayment` runs the real payment flow (`TapToPay`'s engine, the virtual card, the
/// device's pending store, the emulated gateway's ledger) on a fresh emulated device set up as
/// its scenario says (card, gateway fault, location, terms, PIN pad, token, SDK version) and
/// throws exactly what `TapToPay.acceptPayment` throws there. The payment is made for the
/// scenario's amount when the scenario is made by one (a test trigger: 1051 declines, 1095 is
/// declined and its answer lost, 0 is invalid, 9000 asks for a PIN), else for `amount`.
/// Scenarios of the CoreAPI face (`coreapi-*`) are not `acceptPayment`s: `tapemu scenarios run`
/// plays them.
public final class TestingTapToPay: @unchecked Sendable {
    private let gateway: EmbeddedGateway
    private let player: ScenarioPlayer
    private let lock = NSLock()
    private var next: Scenario?
    private var prepared = false
    private var payments: [String: ScenarioPayment] = [:]
    private var last: ScenarioPayment?
    /// Where the emulated gateway keeps its ledger and the devices their pending payments.
    public let dataDirectory: String

    /// `dataDirectory`: nil makes a new temporary directory.
    public init(dataDirectory: String? = nil) throws(GatewayError) {
        let directory = dataDirectory ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("tapemu-testing-\(UUID().uuidString.prefix(8))").path
        self.dataDirectory = directory
        let gateway = try EmbeddedGateway(configuration: .init(
            dataDirectory: directory, blockedSDKVersions: [ScenarioPlayer.blockedSDKVersion], access: .create))
        let store: PendingPaymentStore
        do {
            store = try PendingPaymentStore(dataDirectory: directory, access: .create)
        } catch {
            throw GatewayError(.storage, "cannot open the pending payments in \(directory): \(error)")
        }
        self.gateway = gateway
        player = ScenarioPlayer(gateway: gateway, issueToken: { t in
            gateway.issueToken(accountId: t.accountId, ttl: t.expired ? .zero : .seconds(3600), pointOfSaleId: t.pointOfSaleId)
        }, pendingStore: store, callbackUrl: nil)
    }

    /// A token of this emulated gateway, valid for an hour (what your server would get from MONEI).
    public func testToken() -> String {
        gateway.issueToken(accountId: "acct_testing", ttl: .seconds(3600))
    }

    /// `TapToPay.prepare(token:)`: checks the token with the emulated gateway and stores it.
    /// Until a token is prepared, a payment whose scenario needs one throws `notPrepared`.
    public func prepare(token: String) async throws(TapToPayError) {
        let check = TapToPay(configuration: TapToPay.Configuration(cardSource: NoCardSource(), gateway: gateway,
                                                                   pendingStore: player.pendingStore))
        try await check.prepare(token: token)
        lock.withLock { prepared = true }
    }

    /// The scenario the next `acceptPayment` meets (once; then plain approved payments again).
    public func nextPayment(meets scenario: Scenario) {
        lock.withLock { next = scenario }
    }

    /// `TapToPay.acceptPayment(amount:orderId:callbackUrl:)`, meeting the scenario set by
    /// ``nextPayment(meets:)`` (else a plain payment, approved).
    public func acceptPayment(amount: Int, orderId: String, callbackUrl: String? = nil) async throws(TapToPayError) -> PaymentResult {
        let (scenario, isPrepared) = lock.withLock { () -> (Scenario, Bool) in
            defer { next = nil }
            return (next ?? Scenario.approved, prepared)
        }
        if scenario.setup.token == .valid && !isPrepared { throw .notPrepared }
        var player = self.player
        player.callbackUrl = callbackUrl
        let payment: ScenarioPayment
        do {
            payment = try await player.play(scenario, orderId: orderId, terminal: "testing",
                                            amountOverride: scenario.setup.amount == Scenario.Setup.plain.amount ? amount : nil)
        } catch {
            // The emulator itself failed (not the payment): the seed's "no payment started".
            throw .paymentFailed(code: .unknown)
        }
        lock.withLock {
            payments[orderId] = payment
            last = payment
        }
        switch payment.result {
        case .success(let result): return result
        case .failure(let error): throw error
        case nil: throw .paymentFailed(code: .unknown)
        }
    }

    /// The last payment: what the SDK answered and the truth beside it.
    public var lastPayment: ScenarioPayment? { lock.withLock { last } }

    /// The payment of `orderId`, when this terminal took one.
    public func payment(orderId: String) -> ScenarioPayment? { lock.withLock { payments[orderId] } }
}

extension TapToPay {
    /// A ``TestingTapToPay``: seed 000's API whose next payment can be told which scenario of the
    /// catalogue it meets, in-process.
    public static func testing(dataDirectory: String? = nil) throws(GatewayError) -> TestingTapToPay {
        try TestingTapToPay(dataDirectory: dataDirectory)
    }
}

/// The scenarios of the catalogue by name, for `nextPayment(meets:)` (`tapemu scenarios list`).
extension Scenario {
    private static func catalogue(_ name: String) -> Scenario {
        guard let s = ScenarioCatalogue.named(name) else { preconditionFailure("no scenario \(name) in the catalogue") }
        return s
    }
    /// `approved`: a plain payment, approved.
    public static var approved: Scenario { catalogue("approved") }
    /// `declined-insufficient-funds`: the issuer declines (a result, not an error).
    public static var declinedInsufficientFunds: Scenario { catalogue("declined-insufficient-funds") }
    /// `approved-then-refunded`: approved, then refunded in full by the merchant.
    public static var approvedThenRefunded: Scenario { catalogue("approved-then-refunded") }
    /// `unknown-no-answer`: the authorisation never reaches the gateway.
    public static var noAnswer: Scenario { catalogue("unknown-no-answer") }
    /// `unknown-server-error`: the gateway fails with a 5xx before its ledger.
    public static var serverError: Scenario { catalogue("unknown-server-error") }
    /// `unknown-lost-answer-approved`: the gateway approves and records the sale, then the answer is lost.
    public static var answerLostAfterCommit: Scenario { catalogue("unknown-lost-answer-approved") }
    /// `unknown-lost-answer-declined`: the issuer declines, then the answer is lost.
    public static var declineLostAfterCommit: Scenario { catalogue("unknown-lost-answer-declined") }
    /// `unknown-slow-answer`: recorded at once, answered after the SDK gave up.
    public static var slowAnswer: Scenario { catalogue("unknown-slow-answer") }
    /// `unknown-card-read-error`: the card stops answering before the request leaves.
    public static var cardReadError: Scenario { catalogue("unknown-card-read-error") }
    /// `unknown-lost-reader-session`: the card leaves the field after the early submission.
    public static var lostReaderSession: Scenario { catalogue("unknown-lost-reader-session") }
    /// `unknown-pin-entry-error`: the PIN pad fails.
    public static var pinEntryError: Scenario { catalogue("unknown-pin-entry-error") }
    /// `unknown-cancelled-task`: the app's task is cancelled while the card is read.
    public static var cancelledTask: Scenario { catalogue("unknown-cancelled-task") }
    /// `cancelled`: the user cancels on the payment sheet.
    public static var cancelledOnSheet: Scenario { catalogue("cancelled") }
    /// `failed-card-declined`: the card declines offline.
    public static var cardDeclined: Scenario { catalogue("failed-card-declined") }
}
