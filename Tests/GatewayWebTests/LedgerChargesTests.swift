import Foundation
import GatewayGraphQL
import GatewayWeb
import GraphQL
import PaymentGateway
import Testing
import TestSupport

@Suite struct LedgerChargesTests {
    @Test func seedQueryOverTheRealLedger() async throws {
        let dir = TempDir()
        let gateway = try makeGateway(dir)
        let sale = try await pay(gateway, orderId: "order-1042", amount: 1250)
        _ = try await pay(gateway, orderId: "order-1043", amount: 700)
        _ = try await gateway.refund(uniqueRef: sale.uniqueRef, amount: 250, options: GatewayRequestOptions())
        let handler = GraphQLHandler(service: GraphQLService(source: LedgerChargeDataSource(ledger: gateway.ledger)))

        let (status, json) = await Charges.post(handler, Charges.body(
            #"query { charges(filter: {orderId: {eq: "order-1042"}}) { items { id status amount } } }"#))
        #expect(status == 200)
        #expect(json.serialized == #"{"data":{"charges":{"items":[{"id":"\#(sale.paymentId)","status":"PARTIALLY_REFUNDED","amount":1250}]}}}"#)

        let (_, detail) = await Charges.post(handler, Charges.body(
            #"{ charges(filter: {orderId: {eq: "order-1042"}}) { total items { refundedAmount lastRefundAmount refunds { amount type } paymentMethod { card { last4 brand } } } } }"#))
        #expect(detail.serialized == #"{"data":{"charges":{"total":1,"items":[{"refundedAmount":250,"lastRefundAmount":250,"refunds":[{"amount":250,"type":"refund"}],"paymentMethod":{"card":{"last4":"1111","brand":"visa"}}}]}}}"#)

        let (_, all) = await Charges.post(handler, Charges.body("{ charges { total } }"))
        #expect(all.serialized == #"{"data":{"charges":{"total":2}}}"#)
        // No answer anywhere holds the full PAN.
        #expect(!detail.serialized.contains("4111111111111111"))
    }
}
