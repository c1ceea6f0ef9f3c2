import Foundation
@testable import GatewayService
import HTTPServer
import Testing
import TestSupport

/// Routes added with `addImmediate` are answered by `immediateAnswer(to:)` exactly as `handle`
/// answers them; every other request is left to `handle`.
@Suite("Router: immediate routes", .temporaryDirectories)
struct RouterImmediateTests {
    @Test("GET and HEAD /health at once, the same answer as handle(); POST /health (405), an unknown path (404) and a ledger route: left to handle()")
    func health() async throws {
        let router = try GatewayService(dataDirectory: try temporaryDirectory()).routes()
        for method in ["GET", "HEAD"] {
            let request = HTTPRequest(method: method, path: "/health", requestId: "r-1")
            let now = try #require(router.immediateAnswer(to: request))
            let later = await router.handle(request)
            #expect(now.status == 200 && now.status == later.status && now.body == later.body)
            #expect(String(decoding: now.body, as: UTF8.self) == #"{"status":"ok"}"#)
        }
        #expect(router.immediateAnswer(to: HTTPRequest(method: "POST", path: "/health")) == nil)
        #expect(await router.handle(HTTPRequest(method: "POST", path: "/health")).status == 405)
        #expect(router.immediateAnswer(to: HTTPRequest(method: "GET", path: "/no/such/path")) == nil)
        #expect(router.immediateAnswer(to: HTTPRequest(method: "GET", path: "/v1/payments/pay_1")) == nil)
    }
}
