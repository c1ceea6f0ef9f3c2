import Foundation
import GatewayGraphQL
import GraphQL
import PaymentGateway

/// The gateway's GraphQL endpoint: the query text (parser, validator, executor over the
/// `charges` schema) and the JSON body of a `POST /graphql`.
enum GraphQLHarness {
    static let fullPAN = "4761739001010010"
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// Made for each input: a global would hold the schema through Swift's tagged enum
    /// payloads, which LeakSanitizer cannot see through (it reported them as leaks).
    static func source() -> InMemoryChargeDataSource { InMemoryChargeDataSource([
        Payment(paymentId: "p1", orderId: "order-1042", amount: 1250, authorisationCode: "A1B2C3", uniqueRef: "REFp1",
                last4: "0010", maskedPAN: "476173******0010", expiry: "2812", refundedAmount: 250, createdAt: t0),
        Payment(paymentId: "r1", kind: .refund, orderId: "order-1042", parentPaymentId: "p1", amount: 250,
                uniqueRef: "REFr1", last4: "0010", maskedPAN: "476173******0010", createdAt: t0 + 10),
        Payment(paymentId: "p2", orderId: "order-1043", amount: 990, status: .declined, statusCode: "51",
                statusMessage: "Insufficient funds", uniqueRef: "REFp2", last4: "1111", maskedPAN: "411111******1111",
                createdAt: t0 + 20),
    ]) }

    /// Input: one byte, then either query text (byte even) or a POST body (byte odd).
    ///
    /// Every answer is JSON our reader reads back to the same value, with `data`, `errors` or
    /// both; every error has a message; a query that parses parses again to the same document;
    /// no answer holds a full PAN.
    @Sendable static func graphql(_ input: [UInt8]) throws(FuzzFailure) {
        guard let mode = input.first else { return }
        let rest = Array(input.dropFirst())
        let service = GraphQLService(source: source())
        let answer: GraphQLService.Answer
        if mode & 1 == 0 {
            if let doc = try? Parser.parse(rest) {
                let again = try? Parser.parse(rest)
                try expect(again == doc, "the same text parsed to two documents")
            }
            let text = String(decoding: rest, as: UTF8.self)
            let body = JSONValue.object([("query", .string(text))]).serialized
            answer = service.respond(method: "POST", query: [], body: Array(body.utf8))
            try expect(answer.status == 200, "a well-formed body answered \(answer.status)")
        } else {
            answer = service.respond(method: "POST", query: [], body: rest)
            try expect(answer.status == 200 || answer.status == 400 || answer.status == 413,
                       "a body answered \(answer.status)")
        }
        let text = answer.body.serialized
        let reread: JSONValue
        do { reread = try JSONValue.parse(text) } catch {
            throw FuzzFailure("the answer is not JSON we read back: \(error)")
        }
        try expect(reread == answer.body, "the answer does not read back to itself")
        try expect(answer.body["data"] != nil || answer.body["errors"] != nil, "an answer with neither data nor errors")
        for e in answer.body["errors"]?.array ?? [] {
            try expect(e["message"]?.string?.isEmpty == false, "an error without a message")
        }
        try expect(!text.contains(fullPAN), "an answer holds a full PAN")
    }

    /// Seeds: the seed query, variables, fragments, errors, and bodies.
    static var seeds: [(String, [UInt8])] {
        func query(_ name: String, _ q: String) -> (String, [UInt8]) { (name, [0] + Array(q.utf8)) }
        func body(_ name: String, _ b: String) -> (String, [UInt8]) { (name, [1] + Array(b.utf8)) }
        return [
            query("monei-seed-query", #"query { charges(filter: {orderId: {eq: "order-1042"}}) { items { id status amount } } }"#),
            query("fragments", """
                query Q($s: Boolean = false) { c: charges(size: 2) { total items { ...F @skip(if: $s) } } }
                fragment F on Charge { id __typename paymentMethod { card { last4 } } refunds { amount } }
                """),
            query("filters", #"{ charges(filter: {or: [{status: {eq: "FAILED"}}, {amount: {gte: 1000}}], not: {id: {ne: "p1"}}}) { items { id } } }"#),
            query("block-string", "{ charges(filter: {orderId: {eq: \"\"\"\n  order-1042\n\"\"\"}}) { total } }"),
            query("errors", "{ charges { items { nope } } charge { id } }"),
            body("body-variables", #"{"query":"query ($o: String!) { charges(filter: {orderId: {eq: $o}}) { items { id } } }","variables":{"o":"order-1043"}}"#),
            body("body-missing-variable", #"{"query":"query ($o: ID!) { charge(id: $o) { id } }","operationName":null}"#),
            body("body-not-json", #"{"query": "{ charges { total } }""#),
        ]
    }
}
