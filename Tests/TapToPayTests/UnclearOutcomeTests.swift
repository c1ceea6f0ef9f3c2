import DeviceStore
import CardChannel
import Foundation
import PaymentGateway
import CoreAPI
import TapToPay
import Testing
import TestSupport
import VirtualCard

/// Seed 000's "Unclear outcome": after `outcomeUnknown`, look the order up (charges query); a
/// payment that shows is the outcome; when none shows, nothing is concluded.
@Suite("Unclear outcome: the charges query for each pending payment")
struct UnclearOutcomeTests {
    struct Rig {
        /// Removed with the rig.
        let temp = TempDir(prefix: "tapemu-unclear")
        let dir: String
        let gateway: EmbeddedGateway
        let store: PendingPaymentStore
        let tapToPay: TapToPay

        init(fault: GatewayFault?) async throws {
            dir = temp.path
            gateway = try EmbeddedGateway(dataDirectory: dir)
            store = try PendingPaymentStore(dataDirectory: dir)
            let card = try #require(CardProfiles.named("mastercard-mchip"))
            tapToPay = TapToPay(configuration: .init(cardSource: VirtualCardSource(profile: card), gateway: gateway,
                                                     pendingStore: store, gatewayFault: fault))
            try await tapToPay.prepare(token: gateway.issueToken(accountId: "acct_test"))
        }

        func payExpectingUnknown(_ orderId: String) async {
            do {
                _ = try await tapToPay.acceptPayment(amount: 1000, orderId: orderId)
                Issue.record("expected outcomeUnknown")
            } catch {
                #expect(error == .outcomeUnknown(orderId: orderId))
            }
        }
    }

    @Test("a charge that was recorded but whose answer was lost is found, and its record leaves the device")
    func lostAnswerIsFound() async throws {
        let rig = try await Rig(fault: .lostAnswer)
        await rig.payExpectingUnknown("lost-1")
        #expect(try rig.store.get(orderId: "lost-1") != nil)

        let reports = try await rig.tapToPay.resolveUnclearOutcomes()
        let report = try #require(reports.first)
        #expect(reports.count == 1)
        guard case .found(let payment) = report.finding else {
            Issue.record("expected the payment to be found, got \(report.finding)")
            return
        }
        #expect(payment.orderId == "lost-1")
        #expect(payment.status == .approved)
        #expect(report.removedFromStore)
        #expect(try rig.store.get(orderId: "lost-1") == nil)
        #expect(try await rig.tapToPay.resolveUnclearOutcomes().isEmpty)
    }

    @Test("no payment showing proves nothing: the record stays")
    func notFoundStays() async throws {
        let rig = try await Rig(fault: .serverError)
        await rig.payExpectingUnknown("lost-2")
        let reports = try await rig.tapToPay.resolveUnclearOutcomes()
        guard case .notFound? = reports.first?.finding else {
            Issue.record("expected notFound, got \(String(describing: reports.first?.finding))")
            return
        }
        #expect(reports.first?.removedFromStore == false)
        #expect(try rig.store.get(orderId: "lost-2") != nil)
    }

    @Test("a failed query keeps the record for a later try, and the next try finds the charge")
    func failedQueryStays() async throws {
        let rig = try await Rig(fault: .lostAnswer)
        await rig.payExpectingUnknown("lost-3")
        rig.gateway.armFault(.serverError, for: .charges)
        let first = try await rig.tapToPay.resolveUnclearOutcomes()
        guard case .failed? = first.first?.finding else {
            Issue.record("expected failed, got \(String(describing: first.first?.finding))")
            return
        }
        #expect(try rig.store.get(orderId: "lost-3") != nil)
        let second = try await rig.tapToPay.resolveUnclearOutcomes()
        guard case .found? = second.first?.finding else {
            Issue.record("expected found, got \(String(describing: second.first?.finding))")
            return
        }
        #expect(try rig.store.get(orderId: "lost-3") == nil)
    }

    @Test("CoreAPI-style pending sales are left to their own recovery")
    func coreAPISalesAreNotTouched() async throws {
        let rig = try await Rig(fault: nil)
        try rig.store.save(PendingPayment(orderId: "core-1", origin: .coreAPI, amount: 1000, currency: "EUR",
                                          createdAt: Date()))
        #expect(try await rig.tapToPay.resolveUnclearOutcomes().isEmpty)
        #expect(try rig.store.get(orderId: "core-1") != nil)
    }
}
