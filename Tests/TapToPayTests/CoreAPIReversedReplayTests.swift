import Foundation
import PaymentGateway
import CoreAPI
import Testing
import TestSupport

/// Seed 002's step 5: after a sale was reversed (step 4), "(Optional) Run the sale again". Run
/// again as it was stored — the same orderId — the gateway answers with the order's sale as it
/// stands: code C, nothing charged. onSaleResponse said `responseText` "Approved" (`responseCode`
/// 00) beside code C, and CoreSaleResponse's doc said C "shows only in transaction lists" (found
/// by the review running `tapemu sale` after `tapemu resolve`). The code stays C — not an
/// approval — and the text now says what happened and what to do, as the MONEI-style face does.
@Suite("CoreAPI: a sale run again after its reversal")
struct CoreAPIReversedReplayTests {
    @Test func theResponseSaysItWasReversed() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let orderId = coreOrderId("reversed")
        let first = try await rig.answeredSale(amount: 1250, orderId: orderId)
        #expect(first.code == "A")
        _ = try await rig.gateway.reverse(uniqueRef: first.uniqueRef, options: GatewayRequestOptions(fault: GatewayFault.none))

        let again = try await rig.answeredSale(amount: 1250, orderId: orderId)
        #expect(again.code == TransactionCode.cancelled.rawValue)
        #expect(!again.isApproved)
        #expect(again.uniqueRef == first.uniqueRef)
        let text = again.responseText
        #expect(text.contains("reversed"), "\(text)")
        #expect(text.contains("new order ID"), "\(text)")
        let sales = try rig.ledgerRows(orderId: orderId).filter { $0.kind == TransactionKind.sale }
        #expect(sales.count == 1)
        #expect(try rig.store.all().isEmpty)
    }
}
