import Foundation
@testable import GatewayService
@testable import tapemu
import HTTPClient
import HTTPServer
import PaymentGateway
import Testing
import TestSupport

/// DNS rebinding: a page whose name now resolves to 127.0.0.1 reaches `tapemu gateway serve` as
/// a same-origin page (JSON bodies pass), but its requests name the page in `Host`.
@Suite("A loopback gateway answers requests addressed to loopback only (DNS rebinding)", .temporaryDirectories)
struct LoopbackHostGuardTests {
    @Test("loopback names, with or without a port, in any case", arguments: [
        ("127.0.0.1", true), ("127.0.0.1:8080", true), ("127.1.2.3:80", true), ("localhost", true),
        ("LOCALHOST:8080", true), ("localhost.:8080", true), ("[::1]", true), ("[::1]:8080", true), ("::1", true),
        ("evil.example", false), ("evil.example:8080", false), ("127.0.0.1.evil.example", false),
        ("localhost.evil.example:8080", false), ("128.0.0.1:8080", false), ("[::2]:8080", false),
        ("127.0.0.1:80x", false), ("[::1]x", false), ("", false), ("0.0.0.0:8080", false),
    ])
    func names(_ host: String, _ loopback: Bool) {
        #expect(LoopbackHostGuard.isLoopback(host: host) == loopback, "\(host)")
    }

    @Test("a rebound page's sale, refund and dashboard read are 421 and record nothing; the same requests to 127.0.0.1 or localhost are served")
    func rebindingRefused() async throws {
        let service = try GatewayService(dataDirectory: try temporaryDirectory())
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(1)),
                                    handler: GatewayServeCommand.makeHandler(service, listenHost: "127.0.0.1"))
        func post(_ path: String, _ json: String, host: String) async throws -> HTTPClientResponse {
            try await HTTPClient().send(HTTPClientRequest(method: "POST", url: server.url + path,
                                                          headers: [("Host", host), ("Content-Type", "application/json"),
                                                                    ("Authorization", "Bearer \(service.testToken)")],
                                                          body: Array(json.utf8)))
        }
        let sale = #"{"orderId":"rb-1","amount":1000,"card":{"pan":"4012888888881881","expiry":"2812"}}"#
        let rebound = try await post("/terminal/v1/authorisations", sale, host: "evil.example:\(server.port)")
        #expect(rebound.status == 421)
        let doc = try jsonObject(rebound.body)
        #expect(doc["code"] as? String == "misdirectedRequest")
        #expect(doc["statusCode"] as? Int == 421)
        #expect(try service.gateway.ledger.allPayments().isEmpty)
        let page = try await HTTPClient().send(HTTPClientRequest(url: server.url + "/dashboard/api/payments",
                                                                 headers: [("Host", "evil.example")]))
        #expect(page.status == 421)

        let served = try await post("/terminal/v1/authorisations", sale, host: "localhost:\(server.port)")
        #expect(served.status == 200)
        let uniqueRef = try #require(try jsonObject(served.body)["uniqueRef"] as? String)
        let refund = try await post("/terminal/v1/refunds", #"{"uniqueRef":"\#(uniqueRef)","amount":1000}"#,
                                    host: "evil.example")
        #expect(refund.status == 421)
        #expect(try service.gateway.ledger.allPayments().first { $0.orderId == "rb-1" }?.refundedAmount == 0)
        let plain = try await HTTPClient().send(HTTPClientRequest(url: server.url + "/dashboard/api/payments",
                                                                  headers: [("Authorization", service.apiKey)]))
        #expect(plain.status == 200)   // curl names 127.0.0.1 in Host
        await server.stop()
    }

    @Test("a gateway listening on another address takes any Host (its names are not known)")
    func otherListenersUnguarded() throws {
        let service = try GatewayService(dataDirectory: try temporaryDirectory())
        #expect(GatewayServeCommand.makeHandler(service, listenHost: "0.0.0.0") is Router)
        #expect(GatewayServeCommand.makeHandler(service, listenHost: "127.0.0.1") is LoopbackHostGuard)
        #expect(GatewayServeCommand.makeHandler(service, listenHost: "localhost") is LoopbackHostGuard)
    }
}
