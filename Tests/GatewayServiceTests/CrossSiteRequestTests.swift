import Foundation
@testable import GatewayService
import HTTPClient
import HTTPServer
import PaymentGateway
import Testing
import TestSupport

/// A web page open in the tester's browser can make it POST to the service on 127.0.0.1 without
/// asking first (no CORS preflight) only with a body typed text/plain, a form, or no type at all,
/// and without an Authorization header. Two protections, each tested on its own here: the
/// terminal routes need the terminal's token (such a request has none: 401), and every JSON
/// route answers those body types 415 — with the right token too — recording nothing.
@Suite("Write routes take JSON only: a cross-site form or text/plain POST moves no money", .temporaryDirectories)
struct CrossSiteRequestTests {
    /// The request a browser sends for `fetch(url, {method: "POST", mode: "no-cors", body})`,
    /// with the terminal's token added (`withToken`; a page cannot add it) to test the body rule
    /// on its own.
    func post(_ live: LiveService, _ path: String, _ json: String, contentType: String?,
              withToken: Bool = true) async throws -> HTTPClientResponse {
        var headers: [(name: String, value: String)] = [("Origin", "https://evil.example")]
        if withToken { headers.append(("Authorization", "Bearer \(live.token)")) }
        if let contentType { headers.append(("Content-Type", contentType)) }
        return try await HTTPClient().send(HTTPClientRequest(method: "POST", url: live.url + path, headers: headers,
                                                             body: Array(json.utf8)))
    }

    static let simpleTypes: [String?] = ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                                         "multipart/form-data; boundary=x", nil]

    @Test("a refund and a reversal sent as a browser's simple request are 415 and the sale stays whole",
          arguments: simpleTypes)
    func refundAndReversal(_ contentType: String?) async throws {
        let live = try LiveService()
        let sale = try await live.authorise(orderId: "xs-1", amount: 1000)
        #expect(sale.status == .approved)

        let refund = try await post(live, "/terminal/v1/refunds", #"{"uniqueRef":"\#(sale.uniqueRef)","amount":1000}"#,
                                    contentType: contentType)
        #expect(refund.status == 415)
        let doc = try jsonObject(refund.body)
        #expect(doc["code"] as? String == "unsupportedMediaType")
        #expect((doc["message"] as? String)?.contains("application/json") == true)
        let reversal = try await post(live, "/coreapi/v1/reversal", #"{"uniqueRef":"\#(sale.uniqueRef)"}"#,
                                      contentType: contentType)
        #expect(reversal.status == 415)

        let payment = try #require(try live.service.gateway.ledger.allPayments().first { $0.orderId == "xs-1" })
        #expect(payment.status == .approved)
        #expect(payment.refundedAmount == 0)
        await live.server.stop()
    }

    @Test("a refund, a reversal and an authorisation as a browser really sends them (no token) are 401 and move nothing",
          arguments: simpleTypes)
    func withoutToken(_ contentType: String?) async throws {
        let live = try LiveService()
        let sale = try await live.authorise(orderId: "xs-0", amount: 1000)
        for (path, body) in [("/terminal/v1/refunds", #"{"uniqueRef":"\#(sale.uniqueRef)","amount":1000}"#),
                             ("/coreapi/v1/reversal", #"{"uniqueRef":"\#(sale.uniqueRef)"}"#),
                             ("/terminal/v1/authorisations", #"{"orderId":"xs-00","amount":1000,"card":{"pan":"4012888888881881","expiry":"2812"}}"#)] {
            let r = try await post(live, path, body, contentType: contentType, withToken: false)
            #expect(r.status == 401, "\(path)")
            #expect(try jsonObject(r.body)["code"] as? String == "unauthorized", "\(path)")
        }
        let payments = try live.service.gateway.ledger.allPayments()
        #expect(payments.count == 1 && payments[0].refundedAmount == 0 && !payments[0].reversed)
        await live.server.stop()
    }

    @Test("an authorisation sent as a browser's simple request is 415 and records nothing", arguments: simpleTypes)
    func authorisation(_ contentType: String?) async throws {
        let live = try LiveService()
        let r = try await post(live, "/terminal/v1/authorisations",
                               #"{"orderId":"xs-2","amount":1000,"card":{"pan":"4012888888881881","expiry":"2812"}}"#,
                               contentType: contentType)
        #expect(r.status == 415)
        #expect(try live.service.gateway.ledger.allPayments().isEmpty)
        await live.server.stop()
    }

    @Test("JSON with a charset, in any case, or a +json type is taken", arguments: [
        "application/json; charset=utf-8", "Application/JSON", "application/vnd.tapemu+json",
    ])
    func jsonTypes(_ contentType: String) async throws {
        let live = try LiveService()
        let r = try await post(live, "/terminal/v1/authorisations",
                               #"{"orderId":"xs-3","amount":1000,"card":{"pan":"4012888888881881","expiry":"2812"}}"#,
                               contentType: contentType)
        #expect(r.status == 200)
        #expect(try live.service.gateway.ledger.allPayments().count == 1)
        await live.server.stop()
    }

    @Test("an armed fault is kept for the next authorisation, not used up by a request refused for its shape")
    func armedFaultOutlivesARefusedRequest() async throws {
        let live = try LiveService()
        let key = live.service.apiKey
        let arm = try await live.send("POST", "/admin/faults", json: #"{"fault":"error-after-commit","count":1}"#, key: key)
        #expect(arm.status == 200)
        for refused in [#"{"orderId":"xs-4","amount":1000,"card":{"pan":"12ab","expiry":"2812"}}"#,
                        #"{"orderId":"xs-4","amount":1000,"card":{"pan":"4012888888881881","emvData":"zz"}}"#] {
            let r = try await live.send("POST", "/terminal/v1/authorisations", json: refused)
            #expect(r.status == 400)
        }
        let typed = try await post(live, "/terminal/v1/authorisations",
                                   #"{"orderId":"xs-4","amount":1000,"card":{"pan":"4012888888881881","expiry":"2812"}}"#,
                                   contentType: "text/plain")
        #expect(typed.status == 415)
        let badHeader = try await live.send("POST", "/terminal/v1/authorisations",
                                            json: #"{"orderId":"xs-4","amount":1000,"card":{"pan":"4012888888881881","expiry":"2812"}}"#,
                                            headers: [("X-Tapemu-Fault", "no-such-fault")])
        #expect(badHeader.status == 400)
        let armed = try jsonObject(try await live.send("GET", "/admin/faults", key: key).body)
        let counted = try #require(armed["counted"] as? [[String: Any]])
        #expect(counted.first?["fault"] as? String == "error-after-commit")
        #expect(counted.first?["count"] as? Int == 1)

        // The next well-formed authorisation meets it: recorded, its answer a 500.
        let hit = try await live.send("POST", "/terminal/v1/authorisations",
                                      json: #"{"orderId":"xs-4","amount":1000,"card":{"pan":"4012888888881881","expiry":"2812"}}"#)
        #expect(hit.status == 500)
        #expect(try live.service.gateway.ledger.allPayments().count == 1)
        await live.server.stop()
    }

    /// Refused by the gateway's own rules for an authorisation's shape (order id, amount,
    /// currency, callbackUrl, expiry, PSN, EMV data), not by the route's: nothing recorded.
    static let malformedForTheGateway: [String] = [
        #"{"orderId":"xs-5","amount":0,"card":{"pan":"4012888888881881","expiry":"2812"}}"#,
        #"{"orderId":"xs-5","amount":1000,"currency":"eur","card":{"pan":"4012888888881881","expiry":"2812"}}"#,
        #"{"orderId":"   ","amount":1000,"card":{"pan":"4012888888881881","expiry":"2812"}}"#,
        #"{"orderId":"xs-5","amount":1000,"callbackUrl":"ftp://h/x","card":{"pan":"4012888888881881","expiry":"2812"}}"#,
        #"{"orderId":"xs-5","amount":1000,"card":{"pan":"4012888888881881","expiry":"2813"}}"#,
        #"{"orderId":"xs-5","amount":1000,"card":{"pan":"4012888888881881","expiry":"2812","panSequenceNumber":100}}"#,
        #"{"orderId":"xs-5","amount":1000,"card":{"pan":"4012888888881881","expiry":"2812","emvData":"9F02"}}"#,
    ]

    @Test("an armed fault is not used up by an authorisation the gateway refuses for its shape (400, nothing recorded)",
          arguments: ["error-after-commit", "close-after-commit", "error-before-commit"])
    func armedFaultOutlivesAGatewayRefusal(_ fault: String) async throws {
        let live = try LiveService()
        let key = live.service.apiKey
        let arm = try await live.send("POST", "/admin/faults", json: #"{"fault":"\#(fault)","count":1}"#, key: key)
        #expect(arm.status == 200)
        for refused in Self.malformedForTheGateway {
            let r = try await live.send("POST", "/terminal/v1/authorisations", json: refused)
            // The refusal itself, as without a fault: a 400 that says nothing was recorded.
            #expect(r.status == 400, "\(refused)")
            #expect(try jsonObject(r.body)["code"] as? String == "invalidRequest")
        }
        #expect(try live.service.gateway.ledger.allPayments().isEmpty)
        let armed = try jsonObject(try await live.send("GET", "/admin/faults", key: key).body)
        let counted = try #require(armed["counted"] as? [[String: Any]])
        #expect(counted.first?["fault"] as? String == fault)
        #expect(counted.first?["count"] as? Int == 1)
        await live.server.stop()
    }
}
