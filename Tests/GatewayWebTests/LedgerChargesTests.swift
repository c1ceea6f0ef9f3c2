import Foundation
import GatewayGraphQL
import GatewayWeb
import GraphQL
import PaymentGateway
import Testing
import TestSupport
import PaymentRules

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

/// "café" composed (U+00E9) and decomposed (e + U+0301): two orders in the ledger (its SQL
/// compares bytes), the same string to Swift's `==`.
@Suite("Order IDs compare byte for byte, in GraphQL filters as in the ledger")
struct OrderIDEquivalenceTests {
    static let composed = "caf\u{00E9}-1", decomposed = "cafe\u{0301}-1"

    @Test("canonically equivalent order IDs are two orders: eq, ne and eq nested in or/not give the same payments as the ledger")
    func composedAndDecomposedAreTwoOrders() async throws {
        #expect(Self.composed == Self.decomposed)                 // what made the filter wrong
        #expect(!OrderID.same(Self.composed, Self.decomposed))
        let dir = TempDir()
        let gateway = try makeGateway(dir)
        let one = try await pay(gateway, orderId: Self.composed, amount: 1000)
        let two = try await pay(gateway, orderId: Self.decomposed, amount: 2000)
        #expect(one.paymentId != two.paymentId)
        #expect(try gateway.ledger.sales(orderId: Self.composed).map(\.paymentId) == [one.paymentId])
        let handler = GraphQLHandler(service: GraphQLService(source: LedgerChargeDataSource(ledger: gateway.ledger)))

        func amounts(_ filter: String) async throws -> [Int] {
            let (status, json) = await Charges.post(handler, Charges.body("{ charges(filter: \(filter)) { items { amount } } }"))
            #expect(status == 200)
            return (json["data"]?["charges"]?["items"]?.array ?? []).compactMap { $0["amount"]?.int }.sorted()
        }
        let c = Self.composed, d = Self.decomposed
        #expect(try await amounts(#"{orderId: {eq: "\#(c)"}}"#) == [1000])
        #expect(try await amounts(#"{or: [{orderId: {eq: "\#(c)"}}]}"#) == [1000])
        #expect(try await amounts(#"{and: [{orderId: {eq: "\#(d)"}}]}"#) == [2000])
        #expect(try await amounts(#"{orderId: {ne: "\#(c)"}}"#) == [2000])
        #expect(try await amounts(#"{not: {orderId: {eq: "\#(d)"}}}"#) == [1000])
        // The in-memory source agrees with the ledger's.
        let memory = InMemoryChargeDataSource(try gateway.ledger.allPayments())
        #expect(try memory.sales(orderId: c, paymentId: nil).map(\.paymentId) == [one.paymentId])
        #expect(try memory.sales(orderId: d, paymentId: one.paymentId).isEmpty)
        #expect(try LedgerChargeDataSource(ledger: gateway.ledger).sales(orderId: d, paymentId: one.paymentId).isEmpty)
    }
}
