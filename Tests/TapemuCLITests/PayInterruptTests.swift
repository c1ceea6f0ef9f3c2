import DeviceStore
import PaymentGateway
import Synchronization
@testable import tapemu
import CoreAPI
import PaymentFlow
import TapToPay
import Testing
import TestSupport
import VirtualCard

/// `pay`'s Ctrl-C (``PayInterrupt``): cancelled before the payment, the user's cancel on the
/// payment sheet during it — and never lost in the moment between the two.
@Suite("pay: Ctrl-C reaches the payment wherever it comes")
struct PayInterruptTests {
    /// Counts who was told.
    final class Told: Sendable {
        private let counts = Mutex<(payment: Int, prepare: Int)>((0, 0))
        func payment() { counts.withLock { $0.payment += 1 } }
        func prepare() { counts.withLock { $0.prepare += 1 } }
        var both: (payment: Int, prepare: Int) { counts.withLock { $0 } }
    }

    @Test("a Ctrl-C before the payment cancels prepare's task — also one that came before the task was known — and the payment never starts")
    func beforeThePayment() {
        let early = PayInterrupt(), told = Told()
        early.signal()
        early.connect(cancelPayment: told.payment, cancelPrepare: told.prepare)
        #expect(told.both == (0, 1))
        #expect(early.startPaying())

        let during = PayInterrupt(), told2 = Told()
        during.connect(cancelPayment: told2.payment, cancelPrepare: told2.prepare)
        during.signal()
        #expect(told2.both == (0, 1))
        #expect(during.startPaying())
        during.paymentEvent()
        #expect(told2.both == (0, 1), "no payment runs: nothing more is told")
    }

    @Test("a Ctrl-C during the payment is told to it, and once more at its next event; none without a Ctrl-C")
    func duringThePayment() {
        let interrupt = PayInterrupt(), told = Told()
        interrupt.connect(cancelPayment: told.payment, cancelPrepare: told.prepare)
        #expect(!interrupt.startPaying())
        interrupt.paymentEvent()
        #expect(told.both == (0, 0))
        interrupt.signal()
        #expect(told.both == (1, 0))
        interrupt.paymentEvent()
        interrupt.paymentEvent()
        #expect(told.both == (2, 0))
    }

    /// `TapToPay.cancel()` with no payment in progress does nothing (the SDK's): a Ctrl-C after
    /// `pay` decided to pay and before `acceptPayment` started its payment was lost, and the card
    /// was charged (APPROVED) after the operator cancelled.
    @Test("a Ctrl-C between the decision to pay and the payment's start is heard at its first event: cancelled, nothing charged")
    func inTheGap() async throws {
        let dir = TempDir(prefix: "tapemu-payinterrupt")
        let gateway = try EmbeddedGateway(dataDirectory: dir.path)
        let interrupt = PayInterrupt()
        let card = VirtualCardSource(profile: CardProfiles.named("visa-qvsdc")!, simulatesCardTime: false)
        let tapToPay = TapToPay(configuration: TapToPay.Configuration(
            cardSource: card, gateway: gateway, pendingStore: try PendingPaymentStore(dataDirectory: dir.path),
            onEvent: { _ in interrupt.paymentEvent() }))
        try await tapToPay.prepare(token: gateway.issueToken(accountId: "acct_interrupt"))
        interrupt.connect(cancelPayment: { tapToPay.cancel() }, cancelPrepare: { Issue.record("prepare had ended") })
        #expect(!interrupt.startPaying())
        interrupt.signal()   // no payment is in progress yet: this cancel alone is lost
        await #expect(throws: TapToPayError.cancelled) {
            try await tapToPay.acceptPayment(amount: 1000, orderId: "gap-1")
        }
        #expect(try await gateway.charges(orderId: "gap-1", options: GatewayRequestOptions(fault: GatewayFault.none)).isEmpty)
    }

    /// `sale` likewise: `cancelSale()` with no sale in progress does nothing; told again at the
    /// sale's first event, the sale ends onError(cancelled) before anything was sent.
    @Test("sale: a Ctrl-C between initialise and the sale's start ends it onError(cancelled), nothing charged")
    func saleInTheGap() async throws {
        let dir = TempDir(prefix: "tapemu-saleinterrupt")
        let gateway = try EmbeddedGateway(dataDirectory: dir.path)
        let interrupt = PayInterrupt()
        let card = VirtualCardSource(profile: CardProfiles.named("visa-qvsdc")!, simulatesCardTime: false)
        let core = CoreAPI(configuration: PaymentConfiguration(
            cardSource: card, gateway: gateway, pendingStore: try PendingPaymentStore(dataDirectory: dir.path),
            onEvent: { _ in interrupt.paymentEvent() }))
        #expect(await core.initialise(terminal: core.terminal(token: gateway.issueToken(accountId: "acct_interrupt")),
                                      saleListener: NoSaleListener()))
        interrupt.connect(cancelPayment: { core.cancelSale() }, cancelPrepare: { Issue.record("initialise had ended") })
        #expect(!interrupt.startPaying())
        interrupt.signal()
        let outcome = await core.processSale(CoreSale(amount: 1000, orderId: "gap-2"))
        guard case .error(.cancelled, _) = outcome else { Issue.record("the sale ended with \(outcome)"); return }
        #expect(try await gateway.charges(orderId: "gap-2", options: GatewayRequestOptions(fault: GatewayFault.none)).isEmpty)
    }

    struct NoSaleListener: CoreAPISaleListener {
        func onSaleResponse(_ response: CoreSaleResponse) {}
        func onError(_ error: CoreError, withDescription message: String?) {}
        func onTransactionCommError(_ sale: CoreSale, withError error: CoreError, withMessage message: String?) {}
    }
}
