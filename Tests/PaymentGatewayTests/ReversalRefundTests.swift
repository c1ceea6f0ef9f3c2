import CardChannel
import Foundation
@testable import PaymentGateway
import Testing
import Timing
import TestSupport

@Suite("Transaction list, reversals and refunds")
struct ReversalRefundTests {
    @Test("a sale is reversed once; the second reversal is alreadyReversed and changes nothing")
    func reverseOnce() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let sale = try await g.authorize(Fixture.request(orderId: "r1", amount: 1500))
        let reversal = try await g.reverse(uniqueRef: sale.uniqueRef)
        #expect(reversal.originalUniqueRef == sale.uniqueRef)
        #expect(reversal.amount == 1500)
        #expect(reversal.uniqueRef != sale.uniqueRef)
        let before = try g.ledger.allPayments()
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.reverse(uniqueRef: sale.uniqueRef) }
                == .alreadyReversed)
        #expect(try g.ledger.allPayments() == before)
        #expect(try g.webhooks(orderId: "r1").map(\.event) == [.approved, .reversed])
        // The list now shows C: nothing left to reverse.
        #expect(try await g.transactionList(orderId: "r1").map(\.code) == [.cancelled])
        // And after a restart.
        let g2 = try Fixture.gateway(dir)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g2.reverse(uniqueRef: sale.uniqueRef) }
                == .alreadyReversed)
    }

    @Test("a reversal whose answer was lost is not done twice on retry")
    func reversalLostAnswerThenRetry() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let sale = try await g.authorize(Fixture.request(orderId: "r2", amount: 1000))
        let first = await gatewayErrorCode { () async throws(GatewayError) in
            try await g.reverse(uniqueRef: sale.uniqueRef, options: GatewayRequestOptions(fault: .lostAnswer))
        }
        #expect(first == .connectionLost)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.reverse(uniqueRef: sale.uniqueRef) }
                == .alreadyReversed)
        // A lost answer hides a refusal too: the caller cannot tell, and still nothing is reversed twice.
        #expect(await gatewayErrorCode { () async throws(GatewayError) in
            try await g.reverse(uniqueRef: sale.uniqueRef, options: GatewayRequestOptions(fault: .lostAnswer))
        } == .connectionLost)
        #expect(try g.ledger.allPayments().filter { $0.kind == .reversal }.count == 1)
    }

    @Test("concurrent reversals of one sale: exactly one succeeds")
    func concurrentReversals() async throws {
        let dir = TempDir()
        let a = try Fixture.gateway(dir)
        let b = try Fixture.gateway(dir)
        let sale = try await a.authorize(Fixture.request(orderId: "r3", amount: 1000))
        let results = await withTaskGroup(of: GatewayError.Code?.self) { group in
            for i in 0..<6 {
                let g = i % 2 == 0 ? a : b
                group.addTask {
                    await gatewayErrorCode { () async throws(GatewayError) in try await g.reverse(uniqueRef: sale.uniqueRef) }
                }
            }
            var out: [GatewayError.Code?] = []
            for await r in group { out.append(r) }
            return out
        }
        #expect(results.filter { $0 == nil }.count == 1)
        #expect(results.filter { $0 == .alreadyReversed }.count == 5)
        #expect(try a.ledger.allPayments().filter { $0.kind == .reversal }.count == 1)
    }

    @Test("reversing a declined sale, an unknown ref, a refund or a refunded sale is refused")
    func reversalRefusals() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let declined = try await g.authorize(Fixture.request(orderId: "d", amount: 1051))
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.reverse(uniqueRef: declined.uniqueRef) }
                == .notReversible)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.reverse(uniqueRef: "NOSUCHREF0") }
                == .notFound)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.reverse(uniqueRef: "") }
                == .invalidRequest)
        let sale = try await g.authorize(Fixture.request(orderId: "s", amount: 1000))
        let refund = try await g.refund(uniqueRef: sale.uniqueRef, amount: 100)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.reverse(uniqueRef: refund.uniqueRef) }
                == .notReversible)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.reverse(uniqueRef: sale.uniqueRef) }
                == .notReversible)
        #expect(try g.ledger.payment(uniqueRef: declined.uniqueRef)?.reversed == false)
    }

    @Test("refunds never exceed what is left of the sale")
    func refundBounds() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let sale = try await g.authorize(Fixture.request(orderId: "rf", amount: 1000))
        let r1 = try await g.refund(uniqueRef: sale.uniqueRef, amount: 300)
        #expect(r1.amount == 300 && r1.refundedAmount == 300 && r1.remainingAmount == 700)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.refund(uniqueRef: sale.uniqueRef, amount: 701) }
                == .refundExceedsRemaining)
        // Nothing or less than nothing is a malformed request, on every route (MONEI's answers 400).
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.refund(uniqueRef: sale.uniqueRef, amount: 0) }
                == .invalidRequest)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.refund(uniqueRef: sale.uniqueRef, amount: -5) }
                == .invalidRequest)
        #expect(try await g.charges(orderId: "rf").first?.state == .partiallyRefunded)
        let r2 = try await g.refund(uniqueRef: sale.uniqueRef)   // the rest
        #expect(r2.amount == 700 && r2.remainingAmount == 0)
        #expect(try await g.charges(orderId: "rf").first?.state == .refunded)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.refund(uniqueRef: sale.uniqueRef, amount: 1) }
                == .refundExceedsRemaining)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.refund(uniqueRef: sale.uniqueRef) }
                == .refundExceedsRemaining)
        #expect(try g.webhooks(orderId: "rf").map(\.event) == [.approved, .partiallyRefunded, .refunded])
        #expect(try g.ledger.allPayments().filter { $0.kind == .refund }.map(\.amount) == [300, 700])
    }

    @Test("declined, reversed sales and refunds cannot be refunded")
    func refundRefusals() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let declined = try await g.authorize(Fixture.request(orderId: "d", amount: 1054))
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.refund(uniqueRef: declined.uniqueRef) }
                == .notRefundable)
        let sale = try await g.authorize(Fixture.request(orderId: "s", amount: 1000))
        let refund = try await g.refund(uniqueRef: sale.uniqueRef, amount: 10)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.refund(uniqueRef: refund.uniqueRef) }
                == .notRefundable)
        let other = try await g.authorize(Fixture.request(orderId: "s2", amount: 1000))
        _ = try await g.reverse(uniqueRef: other.uniqueRef)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.refund(uniqueRef: other.uniqueRef) }
                == .notRefundable)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.refund(uniqueRef: "NOSUCHREF0") }
                == .notFound)
    }

    @Test("the transaction list by orderId, by last four, and by both")
    func transactionList() async throws {
        let dir = TempDir()
        let now = WallClock()
        let g = try Fixture.gateway(dir, now: now)
        let a = try await g.authorize(Fixture.request(orderId: "order-a", amount: 1000))
        now.advance(by: 1)
        _ = try await g.authorize(Fixture.request(orderId: "order-b", amount: 2051))
        now.advance(by: 1)
        _ = try await g.authorize(Fixture.request(orderId: "order-c", amount: 3000, pan: Fixture.otherVisa))
        now.advance(by: 1)
        _ = try await g.refund(uniqueRef: a.uniqueRef, amount: 250)

        let byOrder = try await g.transactionList(orderId: "order-a")
        #expect(byOrder.map(\.kind) == [.sale, .refund])
        let first = try #require(byOrder.first)
        #expect(first.code == .approved)
        #expect(first.uniqueRef == a.uniqueRef)
        #expect(first.amount == 1000)
        #expect(first.cardNumber == "476173******0010")
        #expect(first.cardNumber.hasSuffix("0010"))
        #expect(first.orderId == "order-a")

        let byLastFour = try await g.transactionList(panLastFour: "0010")
        #expect(byLastFour.filter { $0.kind == .sale }.map(\.orderId) == ["order-b", "order-a"])   // newest first
        #expect(byLastFour.first(where: { $0.orderId == "order-b" })?.code == .declined)

        #expect(try await g.transactionList(orderId: "order-c", panLastFour: "1111").map(\.orderId) == ["order-c"])
        #expect(try await g.transactionList(orderId: "order-c", panLastFour: "0010").isEmpty)
        #expect(try await g.transactionList(orderId: "never-sent").isEmpty)

        for bad in [TransactionFilter(), TransactionFilter(panLastFour: "12"), TransactionFilter(panLastFour: "abcd"),
                    TransactionFilter(orderId: "")] {
            #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.transactionList(bad) }
                    == .invalidRequest)
        }
    }

    @Test("the seeds' recovery reads A to reverse, anything else to leave alone, nothing to re-run")
    func seedRecoveryShapes() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        // Host approved, answer lost → A → reverse once.
        _ = await gatewayErrorCode { () async throws(GatewayError) in
            try await g.authorize(Fixture.request(orderId: "p-approved", amount: 1092))
        }
        // Host declined, answer lost → D.
        _ = await gatewayErrorCode { () async throws(GatewayError) in
            try await g.authorize(Fixture.request(orderId: "p-declined", amount: 1095))
        }
        // Never arrived → nothing.
        let clock = ManualClock()
        let g2 = try Fixture.gateway(dir, clock: clock)
        let t = Task { try await g2.authorize(Fixture.request(orderId: "p-never", amount: 1091)) }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(30))
        _ = await t.result

        let approved = try await g.transactionList(orderId: "p-approved", panLastFour: "0010")
        #expect(approved.first?.code == .approved)
        #expect(approved.first?.amount == 1092)
        _ = try await g.reverse(uniqueRef: try #require(approved.first).uniqueRef)
        #expect(try await g.transactionList(orderId: "p-approved").first?.code == .cancelled)
        #expect(try await g.transactionList(orderId: "p-declined", panLastFour: "0010").first?.code == .declined)
        #expect(try await g.transactionList(orderId: "p-never", panLastFour: "0010").isEmpty)
    }

    @Test("the codes' meanings are documented for every code")
    func codeMeanings() {
        #expect(TransactionCode.meanings.map(\.code.rawValue) == ["A", "D", "C", "R", "E"])
    }
}
