import Foundation
import GatewayGraphQL
import GatewayWeb
import GraphQL
import HTTPServer
import PaymentGateway
import PaymentRules
import Testing

enum Charges {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func sale(_ id: String, order: String, amount: Int, status: AuthorisationStatus = .approved,
                     reversed: Bool = false, refunded: Int = 0, at offset: Double = 0, last4: String = "0010",
                     brand: CardBrand = .visa) -> Payment {
        Payment(paymentId: id, orderId: order, amount: amount, status: status,
                statusCode: status == .approved ? "00" : "51",
                statusMessage: status == .approved ? "Approved" : "Insufficient funds",
                authorisationCode: status == .approved ? "A1B2C3" : nil, uniqueRef: "REF" + id,
                cardBrand: brand, last4: last4, maskedPAN: "476173******" + last4, expiry: "2812",
                callbackUrl: "https://merchant.example/hook", accountId: "acct_test", reversed: reversed,
                refundedAmount: refunded, createdAt: t0.addingTimeInterval(offset))
    }

    static let source = InMemoryChargeDataSource([
        sale("p1", order: "order-1042", amount: 1250, refunded: 250, at: 10),
        Payment(paymentId: "r1", kind: .refund, orderId: "order-1042", parentPaymentId: "p1", amount: 250,
                statusMessage: "Refunded", uniqueRef: "REFr1", last4: "0010", maskedPAN: "476173******0010",
                createdAt: t0.addingTimeInterval(20)),
        sale("p2", order: "order-1043", amount: 990, status: .declined, at: 30, last4: "1111"),
        sale("p3", order: "order-1044", amount: 500, reversed: true, at: 40),
        Payment(paymentId: "v3", kind: .reversal, orderId: "order-1044", parentPaymentId: "p3", amount: 500,
                statusMessage: "Reversed", uniqueRef: "REFv3", last4: "0010", maskedPAN: "476173******0010",
                createdAt: t0.addingTimeInterval(50)),
    ])

    static func post(_ handler: some HTTPHandler, _ body: String, headers: [(name: String, value: String)] = []) async -> (Int, JSONValue) {
        let r = await handler.handle(HTTPRequest(method: "POST", path: "/graphql",
                                                 headers: [("Content-Type", "application/json")] + headers,
                                                 body: Array(body.utf8), requestId: "req-1"))
        return (r.status, (try? JSONValue.parse(r.body)) ?? .string("not JSON: " + String(decoding: r.body, as: UTF8.self)))
    }

    static func body(_ query: String, variables: JSONValue? = nil) -> String {
        var members: [(String, JSONValue)] = [("query", .string(query))]
        if let variables { members.append(("variables", variables)) }
        return JSONValue.object(members).serialized
    }
}

@Suite struct GraphQLHandlerTests {
    let handler = GraphQLHandler(service: GraphQLService(source: Charges.source))

    @Test func seedQueryVerbatim() async {
        let (status, json) = await Charges.post(handler, Charges.body(
            #"query { charges(filter: {orderId: {eq: "order-1042"}}) { items { id status amount } } }"#))
        #expect(status == 200)
        #expect(json.serialized == #"{"data":{"charges":{"items":[{"id":"p1","status":"PARTIALLY_REFUNDED","amount":1250}]}}}"#)
    }

    @Test func noMatchIsAnEmptyList() async {
        let (_, json) = await Charges.post(handler, Charges.body(
            #"{ charges(filter: {orderId: {eq: "order-9"}}) { items { id } total } }"#))
        #expect(json.serialized == #"{"data":{"charges":{"items":[],"total":0}}}"#)
    }

    @Test func everyFieldOfACharge() async {
        let (_, json) = await Charges.post(handler, Charges.body("""
            { charges(filter: {orderId: {eq: "order-1042"}}) { total items {
                __typename id accountId orderId amount currency status statusCode statusMessage authorizationCode
                refundedAmount lastRefundAmount createdAt updatedAt description callbackUrl
                paymentMethod { method card { brand last4 expiration } }
                uniqueRef transactionCode cryptogram reversed sdkVersion
                refunds { id type amount uniqueRef createdAt } reversal { id }
            } } }
            """))
        let item = json["data"]?["charges"]?["items"]?[0]
        #expect(json["errors"] == nil, "\(json.serialized)")
        #expect(item?.serialized == """
            {"__typename":"Charge","id":"p1","accountId":"acct_test","orderId":"order-1042","amount":1250,"currency":"EUR","status":"PARTIALLY_REFUNDED","statusCode":"E000","statusMessage":"Transaction approved","authorizationCode":"A1B2C3","refundedAmount":250,"lastRefundAmount":250,"createdAt":1800000010,"updatedAt":1800000010,"description":null,"callbackUrl":"https://merchant.example/hook","paymentMethod":{"method":"card","card":{"brand":"visa","last4":"0010","expiration":1861919999}},"uniqueRef":"REFp1","transactionCode":"A","cryptogram":"unverified","reversed":false,"sdkVersion":null,"refunds":[{"id":"r1","type":"refund","amount":250,"uniqueRef":"REFr1","createdAt":1800000020}],"reversal":null}
            """)
    }

    @Test func filtersSizeAndOrder() async {
        let (_, all) = await Charges.post(handler, Charges.body("{ charges { total items { id } } }"))
        #expect(all.serialized == #"{"data":{"charges":{"total":3,"items":[{"id":"p3"},{"id":"p2"},{"id":"p1"}]}}}"#)
        let (_, paged) = await Charges.post(handler, Charges.body("{ charges(size: 1, from: 1) { total items { id } } }"))
        #expect(paged.serialized == #"{"data":{"charges":{"total":3,"items":[{"id":"p2"}]}}}"#)
        let (_, byStatus) = await Charges.post(handler, Charges.body(#"{ charges(filter: {status: {eq: "CANCELED"}}) { items { id status reversal { type amount } } } }"#))
        #expect(byStatus.serialized == #"{"data":{"charges":{"items":[{"id":"p3","status":"CANCELED","reversal":{"type":"reversal","amount":500}}]}}}"#)
        let (_, byId) = await Charges.post(handler, Charges.body(#"{ charges(filter: {id: {eq: "p2"}}) { items { id status statusMessage } } }"#))
        #expect(byId.serialized == #"{"data":{"charges":{"items":[{"id":"p2","status":"FAILED","statusMessage":"Transaction declined due to insufficient funds"}]}}}"#)
        let (_, amount) = await Charges.post(handler, Charges.body("{ charges(filter: {amount: {gte: 600}, not: {status: {eq: \"FAILED\"}}}) { items { id } } }"))
        #expect(amount.serialized == #"{"data":{"charges":{"items":[{"id":"p1"}]}}}"#)
        let (_, or) = await Charges.post(handler, Charges.body(#"{ charges(filter: {or: [{orderId: {eq: "order-1043"}}, {orderId: {eq: "order-1044"}}]}) { items { orderId } } }"#))
        #expect(or.serialized == #"{"data":{"charges":{"items":[{"orderId":"order-1044"},{"orderId":"order-1043"}]}}}"#)
        let (_, one) = await Charges.post(handler, Charges.body(#"{ charge(id: "p3") { orderId } none: charge(id: "r1") { id } }"#))
        #expect(one.serialized == #"{"data":{"charge":{"orderId":"order-1044"},"none":null}}"#)
        let (_, tooBig) = await Charges.post(handler, Charges.body("{ charges(size: 5000) { total } }"))
        #expect(tooBig.serialized == #"{"errors":[{"message":"size must be between 0 and 1000","locations":[{"line":1,"column":3}],"path":["charges"]}],"data":null}"#)
    }

    @Test func variablesTypedAndChecked() async {
        // orderId is a SearchableStringFilterInput in MONEI's schema: its variable is a String.
        let q = "query Find($order: String!) { charges(filter: {orderId: {eq: $order}}) { items { a: id b: amount } } }"
        let (_, ok) = await Charges.post(handler, Charges.body(q, variables: .object([("order", .string("order-1043"))])))
        #expect(ok.serialized == #"{"data":{"charges":{"items":[{"a":"p2","b":990}]}}}"#)
        let (s1, missing) = await Charges.post(handler, Charges.body(q))
        #expect(s1 == 200)
        #expect(missing["data"] == nil)
        #expect(missing["errors"]?[0]?["message"]?.string == "Variable \"$order\" of required type \"String!\" was not provided")
        #expect(missing["errors"]?[0]?["locations"]?.serialized == #"[{"line":1,"column":12}]"#)
        let (_, wrong) = await Charges.post(handler, Charges.body(q, variables: .object([("order", .bool(true))])))
        #expect(wrong["errors"]?[0]?["message"]?.string?.hasPrefix("Variable \"$order\" got an invalid value") == true)
        // An ID variable where MONEI's schema has a String is a validation error, as there.
        let (_, idVariable) = await Charges.post(handler, Charges.body(
            "query ($o: ID!) { charges(filter: {orderId: {eq: $o}}) { total } }", variables: .object([("o", .string("order-1043"))])))
        #expect(idVariable["errors"]?[0]?["message"]?.string == "variable \"$o\" of type \"ID!\" used in position expecting type \"String\"")
        let (_, size) = await Charges.post(handler, Charges.body(
            "query ($n: Int) { charges(size: $n) { total } }", variables: .object([("n", .string("1"))])))
        #expect(size["data"] == nil)
    }

    @Test func unknownFieldIsAnErrorWithItsLocation() async {
        let (status, json) = await Charges.post(handler, Charges.body("{\n  charges {\n    items { id cardNumber }\n  }\n}"))
        #expect(status == 200)
        #expect(json.serialized == #"{"errors":[{"message":"Cannot query field \"cardNumber\" on type \"Charge\"","locations":[{"line":3,"column":16}]}]}"#)
    }

    @Test func getWithQueryItems() async {
        let r = await handler.handle(HTTPRequest(method: "GET", path: "/graphql", query: [
            ("query", "query ($o: String) { charges(filter: {orderId: {eq: $o}}) { items { id } } }"),
            ("variables", #"{"o": "order-1044"}"#),
        ]))
        #expect(r.status == 200)
        #expect(String(decoding: r.body, as: UTF8.self) == #"{"data":{"charges":{"items":[{"id":"p3"}]}}}"#)
        #expect(r.headers.contains { $0.name == "Content-Type" && $0.value.hasPrefix("application/json") })
    }

    @Test(arguments: ["", "[]", "{\"query\": 1}", "{\"query\": \"{ charges { total } }\", \"variables\": []}",
                      "{\"query\": \"{ charges { total } }\", \"operationName\": 3}", "{\"query\": \"x\"", "\u{FF}"])
    func badBodiesAre400(_ body: String) async {
        let (status, json) = await Charges.post(handler, body)
        #expect(status == 400)
        #expect(json["errors"]?[0]?["message"]?.string?.isEmpty == false)
    }

    @Test func otherMethodsAre405() async {
        let r = await handler.handle(HTTPRequest(method: "DELETE", path: "/graphql"))
        #expect(r.status == 405)
        #expect(r.headers.contains { $0.name == "Allow" && $0.value == "GET, POST" })
    }

    @Test func apiKeyWhenConfigured() async {
        let locked = GraphQLHandler(service: GraphQLService(source: Charges.source), apiKey: "key_123")
        let (s1, _) = await Charges.post(locked, Charges.body("{ charges { total } }"))
        #expect(s1 == 401)
        let (s2, _) = await Charges.post(locked, Charges.body("{ charges { total } }"), headers: [("Authorization", "key_12")])
        #expect(s2 == 401)
        let (s3, ok) = await Charges.post(locked, Charges.body("{ charges { total } }"), headers: [("authorization", "key_123")])
        #expect(s3 == 200)
        #expect(ok.serialized == #"{"data":{"charges":{"total":3}}}"#)
    }

    @Test func aDataSourceErrorIsAnErrorNotAnEmptyList() async {
        struct Broken: ChargeDataSource {
            func sales(orderId: String?, paymentId: String?) throws(GatewayError) -> [Payment] {
                throw GatewayError(.corruptLedger, "the ledger is damaged")
            }
            func children(ofPaymentId paymentId: String) throws(GatewayError) -> [Payment] { [] }
        }
        let h = GraphQLHandler(service: GraphQLService(source: Broken()))
        let (_, json) = await Charges.post(h, Charges.body(#"{ charges(filter: {orderId: {eq: "order-1042"}}) { items { id } } }"#))
        #expect(json["data"] == .null)
        #expect(json["errors"]?[0]?["path"]?.serialized == #"["charges"]"#)
    }
}
