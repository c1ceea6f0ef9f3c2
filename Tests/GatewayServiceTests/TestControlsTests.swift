import Foundation
@testable import GatewayService
import HTTPClient
import HTTPServer
import PaymentGateway
import TapToPay
import TapToPayTesting
import Testing
import TestSupport
@testable import tapemu

/// `gateway serve --test-controls`: the routes a scenario run needs to make seed 000's setup
/// errors on a served gateway (an expired token, an account of its own whose terms are not
/// accepted, a blocked SDK version) — off unless the operator enables them.
@Suite("The served gateway's test controls: off by default, the API key, what each makes", .temporaryDirectories)
struct TestControlsTests {
    /// A served gateway (the router `gateway serve` runs), its test controls on or off.
    struct Served {
        let service: GatewayService
        let server: HTTPServer
        var url: String { server.url }

        init(testControls: Bool) throws {
            service = try GatewayService(gateway: EmbeddedGateway(dataDirectory: try temporaryDirectory()),
                                         testControls: testControls)
            server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(2)),
                                    handler: GatewayServeCommand.makeHandler(service, listenHost: "127.0.0.1"))
        }

        func send(_ method: String, _ path: String, json: String? = nil, key: String?) async throws -> HTTPClientResponse {
            var headers: [(name: String, value: String)] = []
            if let key { headers.append(("Authorization", key)) }
            if json != nil { headers.append(("Content-Type", "application/json")) }
            return try await HTTPClient().send(HTTPClientRequest(method: method, url: url + path, headers: headers,
                                                                 body: Array((json ?? "").utf8)))
        }
    }

    /// The gateway's error `body` threw (nil when it returned).
    static func refusal(_ body: () async throws(GatewayError) -> Void) async -> GatewayError? {
        do throws(GatewayError) {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    static let routes: [(method: String, path: String, json: String?)] = [
        ("POST", "/admin/test/tokens", #"{"pointOfSaleId":"pos-t","expired":true}"#),
        ("POST", "/admin/test/blocked-sdk-versions", #"{"version":"9.9.9-blocked"}"#),
        ("DELETE", "/admin/test/blocked-sdk-versions/9.9.9-blocked", nil),
    ]

    @Test("off (the default): each route with the API key is 403 testControlsOff, without it 401, a wrong key 401; nothing is blocked")
    func offByDefault() async throws {
        let s = try Served(testControls: false)
        for r in Self.routes {
            let refused = try await s.send(r.method, r.path, json: r.json, key: s.service.apiKey)
            #expect(refused.status == 403, "\(r.method) \(r.path)")
            #expect(try jsonObject(refused.body)["code"] as? String == "testControlsOff", "\(r.method) \(r.path)")
            #expect(String(decoding: refused.body, as: UTF8.self).contains("--test-controls"))
            for key in [nil, s.service.apiKey + "x"] {
                let anonymous = try await s.send(r.method, r.path, json: r.json, key: key)
                #expect(anonymous.status == 401, "\(r.method) \(r.path) with \(key == nil ? "no key" : "a wrong key")")
            }
        }
        #expect(try s.service.gateway.ledger.blockedSDKVersions().isEmpty)
        // The client's typed error.
        let gw = RemoteGateway(baseURL: s.url)
        let e = await Self.refusal { () async throws(GatewayError) in
            try await gw.blockSDKVersion("9.9.9-blocked", apiKey: s.service.apiKey)
        }
        #expect(e?.code == .testControlsOff && e?.reason.contains("--test-controls") == true, "\(String(describing: e))")
        let t = await Self.refusal { () async throws(GatewayError) in
            _ = try await gw.testToken(apiKey: s.service.apiKey, pointOfSaleId: "pos-t", expired: true)
        }
        #expect(t?.code == .testControlsOff, "\(String(describing: t))")
        #expect(try s.service.gateway.ledger.blockedSDKVersions().isEmpty)
        await s.server.stop()
    }

    @Test("on: an expired token is expired; another account's token is valid, its terms not accepted; a blocked version is 426 until unblocked")
    func onMakesEach() async throws {
        let s = try Served(testControls: true)
        let gw = RemoteGateway(baseURL: s.url)
        let key = s.service.apiKey
        let expired = try await gw.testToken(apiKey: key, pointOfSaleId: "pos-t", expired: true)
        guard case .expired(let claims) = try await gw.validateToken(expired, options: GatewayRequestOptions()) else {
            Issue.record("the expired token is not expired")
            return
        }
        #expect(claims.accountId == s.service.accountId && claims.pointOfSaleId == "pos-t")
        let own = try await gw.testToken(apiKey: key, pointOfSaleId: "pos-t", accountId: "acct_own_1")
        guard case .valid(let ownClaims) = try await gw.validateToken(own, options: GatewayRequestOptions()) else {
            Issue.record("the other account's token is not valid")
            return
        }
        #expect(ownClaims.accountId == "acct_own_1")
        let asOwn = RemoteGateway(baseURL: s.url, deviceToken: own)
        #expect(try await asOwn.termsAccepted(accountId: "acct_own_1", options: GatewayRequestOptions()) == false)
        // The version: blocked, then unblocked.
        try await gw.checkSDKVersion("9.9.9-blocked", options: GatewayRequestOptions())
        try await gw.blockSDKVersion("9.9.9-blocked", apiKey: key)
        let blocked = await Self.refusal { () async throws(GatewayError) in
            try await gw.checkSDKVersion("9.9.9-blocked", options: GatewayRequestOptions())
        }
        #expect(blocked?.code == .sdkUpgradeRequired, "\(String(describing: blocked))")
        let unblocked = try await s.send("DELETE", "/admin/test/blocked-sdk-versions/9.9.9-blocked", key: key)
        #expect(unblocked.status == 200)
        try await gw.checkSDKVersion("9.9.9-blocked", options: GatewayRequestOptions())
        await s.server.stop()
    }

    @Test("almost-right input is 400 invalidRequest and does nothing", arguments: [
        ("POST", "/admin/test/tokens", #"{"accountId":""}"#),
        ("POST", "/admin/test/tokens", #"{"pointOfSaleId":"pos\u0001"}"#),
        ("POST", "/admin/test/tokens", #"{"expired":"yes"}"#),
        ("POST", "/admin/test/tokens", #"{"expired":true,"expired":false}"#),
        ("POST", "/admin/test/blocked-sdk-versions", #"{}"#),
        ("POST", "/admin/test/blocked-sdk-versions", #"{"version":""}"#),
        ("POST", "/admin/test/blocked-sdk-versions", #"{"version":"1.0.0","blocked":false}"#),
    ])
    func almostRight(_ method: String, _ path: String, _ json: String) async throws {
        let s = try Served(testControls: true)
        let r = try await s.send(method, path, json: json, key: s.service.apiKey)
        #expect(r.status == 400, "\(json): \(String(decoding: r.body, as: UTF8.self))")
        #expect(try jsonObject(r.body)["code"] as? String == "invalidRequest")
        #expect(try s.service.gateway.ledger.blockedSDKVersions().isEmpty)
        await s.server.stop()
    }

    @Test("gateway serve --test-controls says so and answers them; without the flag the same request is 403 testControlsOff")
    func serveFlag() async throws {
        for flag in [true, false] {
            let server = try ServeProcess(["--data-dir", try temporaryDirectory()] + (flag ? ["--test-controls"] : []))
            let url = try await server.url()
            let key = try await server.apiKey()
            let r = try await HTTPClient().send(HTTPClientRequest(
                method: "POST", url: url + "/admin/test/tokens",
                headers: [("Authorization", key), ("Content-Type", "application/json")], body: Array(#"{"expired":true}"#.utf8)))
            #expect(r.status == (flag ? 200 : 403), "--test-controls \(flag)")
            if flag {
                #expect(await server.line(startingWith: "test controls: on") != nil)
            } else {
                #expect(try jsonObject(r.body)["code"] as? String == "testControlsOff")
            }
            server.process.terminate()
            _ = await server.waitForExit()
        }
    }
}
