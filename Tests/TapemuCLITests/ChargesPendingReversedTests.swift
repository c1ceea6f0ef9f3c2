import Foundation
import PaymentGateway
import Testing
@testable import tapemu
import TestSupport

@Suite("charges --pending: a payment reversed since is not reported approved", .temporaryDirectories)
struct ChargesPendingReversedTests {
    /// `pay` lost its answer (the sale was approved); the merchant then cancelled the payment
    /// (the merchant API reverses it); `charges --pending` found the sale and reported its finding
    /// "approved" — a payment that charges nothing. Its finding is "reversed".
    @Test func aPaymentReversedSinceIsReportedReversed() async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["pay", "--amount", "1250", "--order-id", "cancelled-1", "--data-dir", dir,
                              "--gateway-fault", "lost-answer"])
        #expect(r.status == 4)
        do {
            let gateway = try EmbeddedGateway(dataDirectory: dir, access: .existing)
            let sale = try #require(try await gateway.charges(orderId: "cancelled-1", options: GatewayRequestOptions()).first)
            _ = try await gateway.reverse(uniqueRef: sale.uniqueRef, options: GatewayRequestOptions())
        }

        let pending = await runCLI(["charges", "--pending", "--data-dir", dir, "--json"])
        #expect(pending.status == 0, "\(pending.err)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(pending.out.utf8)) as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows.first?["finding"] as? String == "reversed", "\(pending.out)")
        #expect(rows.first?["removedFromDevice"] as? Bool == true)

        let human = await runCLI(["charges", "--pending", "--data-dir", dir])
        #expect(human.out.contains("no payment with an unknown outcome"), "\(human.out)")
    }

    /// The same for a refund: `pay` lost its answer, the merchant refunded the payment in full (or
    /// in part) through the merchant API, and `charges --pending` reported the finding "approved"
    /// — for a payment that, in full, charges nothing. Its finding is the sale's state, as the
    /// charges query shows it: "refunded", "partiallyRefunded".
    @Test(arguments: [(nil as Int?, "refunded"), (500, "partiallyRefunded")])
    func aPaymentRefundedSinceIsReportedByItsState(refund: Int?, expected: String) async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["pay", "--amount", "1250", "--order-id", "refunded-1", "--data-dir", dir,
                              "--gateway-fault", "lost-answer"])
        #expect(r.status == 4)
        do {
            let gateway = try EmbeddedGateway(dataDirectory: dir, access: .existing)
            let sale = try #require(try await gateway.charges(orderId: "refunded-1", options: GatewayRequestOptions()).first)
            _ = try await gateway.refund(uniqueRef: sale.uniqueRef, amount: refund, options: GatewayRequestOptions())
        }

        let pending = await runCLI(["charges", "--pending", "--data-dir", dir, "--json"])
        #expect(pending.status == 0, "\(pending.err)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(pending.out.utf8)) as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows.first?["finding"] as? String == expected, "\(pending.out)")
        #expect(rows.first?["removedFromDevice"] as? Bool == true)
    }
}
