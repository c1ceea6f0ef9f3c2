import Foundation
import PaymentGateway
import Testing
import TestSupport

@Suite("charges --pending: a payment reversed since is not reported approved", .temporaryDirectories)
struct ChargesPendingReversedTests {
    /// What the merchant did, through the merchant API, to a sale whose answer `pay` lost.
    enum MerchantAct: Sendable, CustomTestStringConvertible {
        case cancel
        case refund(amount: Int?)
        var testDescription: String {
            switch self {
            case .cancel: "cancelled (reversed)"
            case .refund(let amount): amount.map { "refunded \($0) of 1250" } ?? "refunded in full"
            }
        }
    }

    /// `pay` lost its answer (the sale was approved); the merchant then cancelled the payment (the
    /// merchant API reverses it), or refunded it in full or in part; `charges --pending` found the
    /// sale and reported its finding "approved" — for a payment that charges nothing, or less.
    /// Its finding is the sale's state, as the charges query shows it: "reversed", "refunded",
    /// "partiallyRefunded"; the record leaves the device.
    @Test(arguments: [(MerchantAct.cancel, "reversed"), (.refund(amount: nil), "refunded"),
                      (.refund(amount: 500), "partiallyRefunded")])
    func aPaymentChangedSinceIsReportedByItsState(act: MerchantAct, expected: String) async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["pay", "--amount", "1250", "--order-id", "changed-1", "--data-dir", dir,
                              "--gateway-fault", "lost-answer"])
        #expect(r.status == 4)
        do {
            let gateway = try EmbeddedGateway(dataDirectory: dir, access: .existing)
            let sale = try #require(try await gateway.charges(orderId: "changed-1", options: GatewayRequestOptions()).first)
            switch act {
            case .cancel: _ = try await gateway.reverse(uniqueRef: sale.uniqueRef, options: GatewayRequestOptions())
            case .refund(let amount):
                _ = try await gateway.refund(uniqueRef: sale.uniqueRef, amount: amount, options: GatewayRequestOptions())
            }
        }

        let pending = await runCLI(["charges", "--pending", "--data-dir", dir, "--json"])
        #expect(pending.status == 0, "\(pending.err)")
        let rows = try jsonRows(pending.out)
        #expect(rows.count == 1)
        #expect(rows.first?["finding"] as? String == expected, "\(pending.out)")
        #expect(rows.first?["removedFromDevice"] as? Bool == true)

        let human = await runCLI(["charges", "--pending", "--data-dir", dir])
        #expect(human.out.contains("no payment with an unknown outcome"), "\(human.out)")
    }
}
