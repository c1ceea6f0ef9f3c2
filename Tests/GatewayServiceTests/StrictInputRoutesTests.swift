import Foundation
import GatewayService
import HTTPServer
import PaymentGateway
import Testing
import TestSupport
@testable import tapemu

/// Strict input at the edge of the served gateway (issue 33, item 4): the probes of the issue,
/// each with its documented refusal.
@Suite("Strict input on the gateway's routes", .temporaryDirectories)
struct StrictInputRoutesTests {
    static func body(amount: String) -> String {
        #"{"orderId":"strict-\#(UUID().uuidString.prefix(8))","amount":\#(amount),"card":{"pan":"4012888888881881","expiry":"2812"}}"#
    }

    @Test("a repeated key is 400 naming it, and nothing is charged")
    func duplicateKey() async throws {
        let live = try LiveService()
        let r = try await live.send("POST", "/terminal/v1/authorisations",
                                    json: #"{"orderId":"dup-1","amount":1000,"amount":999999,"card":{"pan":"4012888888881881","expiry":"2812"}}"#)
        #expect(r.status == 400)
        let message = try jsonObject(r.body)["message"] as? String ?? ""
        #expect(message.contains(#""amount" appears more than once"#), "\(message)")
        #expect(try live.service.gateway.ledger.sales(orderId: "dup-1").isEmpty)
        await live.server.stop()
    }

    @Test("an amount that is not a JSON integer is 400 naming the field, 'an integer number of minor units'",
          arguments: ["12.0", "12.5", "1e3", "12.50"])
    func nonIntegerAmount(amount: String) async throws {
        let live = try LiveService()
        let r = try await live.send("POST", "/terminal/v1/authorisations", json: Self.body(amount: amount))
        #expect(r.status == 400)
        let message = try jsonObject(r.body)["message"] as? String ?? ""
        #expect(message.contains("the field amount must be an integer number of minor units"), "\(amount): \(message)")
        #expect(!message.contains("not valid JSON"))
        #expect(try live.service.gateway.ledger.allPayments().isEmpty)
        await live.server.stop()
    }

    @Test("valid JSON numbers past the range are 400 about the amount, never 'not valid JSON'",
          arguments: ["1e400", "9223372036854775808", "1234567890123"])
    func hugeAmount(amount: String) async throws {
        let live = try LiveService()
        let r = try await live.send("POST", "/terminal/v1/authorisations", json: Self.body(amount: amount))
        #expect(r.status == 400)
        let message = try jsonObject(r.body)["message"] as? String ?? ""
        #expect(!message.contains("not valid JSON"), "\(amount): \(message)")
        #expect(message.contains("amount"), "\(amount): \(message)")
        await live.server.stop()
    }

    @Test("a merchant refund past 12 digits is 400 invalidRequest, not 422 refundExceedsRemaining")
    func thirteenDigitRefund() async throws {
        let live = try LiveService()
        let sale = try await live.authorise(orderId: "refund-13", amount: 1000)
        let r = try await live.send("POST", "/v1/payments/\(sale.paymentId)/refund", json: #"{"amount":1234567890123}"#,
                                    key: live.service.apiKey)
        #expect(r.status == 400, "\(String(decoding: r.body, as: UTF8.self))")
        #expect(try jsonObject(r.body)["code"] as? String == "invalidRequest")
        await live.server.stop()
    }

    @Test("/graphql takes a POST only as application/json: 415 for text/plain, a form or no type",
          arguments: ["text/plain", "application/x-www-form-urlencoded", nil] as [String?])
    func graphqlContentType(type: String?) async throws {
        let live = try LiveService()
        let router = GatewayServeCommand.makeRouter(live.service, dashboard: false)
        var headers: [(name: String, value: String)] = [("Authorization", live.service.apiKey)]
        if let type { headers.append(("Content-Type", type)) }
        let query = #"{"query":"query { charges { items { id } } }"}"#
        let r = await router.handle(HTTPRequest(method: "POST", path: "/graphql", headers: headers, body: Array(query.utf8)))
        #expect(r.status == 415, "\(type ?? "none"): \(String(decoding: r.body, as: UTF8.self))")
        let ok = await router.handle(HTTPRequest(method: "POST", path: "/graphql",
                                                 headers: [("Authorization", live.service.apiKey), ("Content-Type", "application/json")],
                                                 body: Array(query.utf8)))
        #expect(ok.status == 200)
        await live.server.stop()
    }
}
