// Written as a team's own tests would be: only TapToPay and TapToPayTesting.
import Foundation
import TapToPay
import TapToPayTesting
import Testing

@Suite("TapToPayTesting: every scenario of the catalogue's TapToPay face, in-process")
struct CatalogueInProcessTests {
    static let scenarios = ScenarioCatalogue.all.filter { $0.face == .monei }

    @Test("acceptPayment throws what seed 000's SDK throws, and the truth beside it is the catalogue's", arguments: scenarios)
    func scenario(_ scenario: Scenario) async throws {
        let tapToPay = try TapToPay.testing()
        try await tapToPay.prepare(token: tapToPay.testToken())
        tapToPay.nextPayment(meets: scenario)
        let orderId = "order-\(scenario.name)"
        do {
            let result = try await tapToPay.acceptPayment(amount: 2500, orderId: orderId, callbackUrl: nil)
            #expect(scenario.sdk == (result.status == .approved ? .approved : .declined))
        } catch {
            #expect(scenario.sdk == .error(error.code), "\(error)")
        }
        let payment = try #require(tapToPay.payment(orderId: orderId))
        #expect(payment.truth == scenario.truth)
    }

    @Test("the brief's example: an answer lost after the commit is outcomeUnknown, and the card was charged")
    func answerLostAfterCommit() async throws {
        let tapToPay = try TapToPay.testing()
        try await tapToPay.prepare(token: tapToPay.testToken())
        tapToPay.nextPayment(meets: .answerLostAfterCommit)
        await #expect(throws: TapToPayError.outcomeUnknown(orderId: "order-1042")) {
            _ = try await tapToPay.acceptPayment(amount: 1000, orderId: "order-1042", callbackUrl: nil)
        }
        #expect(tapToPay.lastPayment?.groundTruth == GroundTruth(submitted: true, charged: true))
        // The next payment meets no scenario: a plain approval, for your amount.
        let next = try await tapToPay.acceptPayment(amount: 2500, orderId: "order-1043", callbackUrl: nil)
        #expect(next.status == .approved && tapToPay.lastPayment?.amount == 2500)
    }

    @Test("a payment before prepare is notPrepared, as TapToPay's")
    func notPreparedFirst() async throws {
        let tapToPay = try TapToPay.testing()
        await #expect(throws: TapToPayError.notPrepared) {
            _ = try await tapToPay.acceptPayment(amount: 1000, orderId: "order-1", callbackUrl: nil)
        }
    }
}
