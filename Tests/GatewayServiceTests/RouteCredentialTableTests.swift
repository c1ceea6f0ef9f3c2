import BERTLV
import PaymentRules
import Foundation
@testable import GatewayService
import HTTPClient
import HTTPServer
import PaymentGateway
import Testing
import TestSupport
import VirtualCard
@testable import tapemu

/// The security suite's table: every route `tapemu gateway serve` answers, generated from the
/// router's own table (``Router/table``), × {no credential, a wrong one, another terminal's
/// token, the right one} → the documented status. A route added without a row here (its
/// decision) fails `everyRouteHasADecision`; a route whose credential check is removed fails
/// `credentialMatchesTheDecision` and its row of `probe`.
@Suite("Every route × every credential: the documented status", .temporaryDirectories)
struct RouteCredentialTableTests {
    /// A route's decision: its credential and a request that exercises it on the fixture.
    struct Decision: Sendable, CustomStringConvertible {
        var route: String
        var credential: RouteCredential
        var method: String
        /// `{order}`, `{ref}`, `{id}`, `{token}` are the fixture's.
        var path: String
        var body: String?
        /// The status with the right credential.
        var right: Int
        /// The status with another terminal's token, on a terminal-token route (the same as
        /// `right` for a route that names no order); nil for other credentials (derived).
        var otherTerminal: Int? = nil
        var description: String { route }
    }

    static let account = GatewayService.defaultAccountId
    static let card = #""card":{"pan":"4012888888881881","expiry":"2812"}"#

    /// The documented decisions (docs/GATEWAY.md's API table says the same; `readmeListsEveryRoute`).
    static let decisions: [Decision] = [
        Decision(route: "GET /health", credential: .none, method: "GET", path: "/health", right: 200),
        Decision(route: "POST /terminal/v1/authorisations", credential: .deviceToken, method: "POST",
                 path: "/terminal/v1/authorisations", body: #"{"orderId":"{order}","amount":1000,\#(card)}"#,
                 right: 200, otherTerminal: 403),
        Decision(route: "GET /terminal/v1/charges", credential: .deviceToken, method: "GET",
                 path: "/terminal/v1/charges?orderId={order}", right: 200, otherTerminal: 403),
        Decision(route: "POST /terminal/v1/refunds", credential: .deviceToken, method: "POST",
                 path: "/terminal/v1/refunds", body: #"{"uniqueRef":"{ref}","amount":100}"#, right: 200, otherTerminal: 403),
        Decision(route: "POST /terminal/v1/tokens/validate", credential: .none, method: "POST",
                 path: "/terminal/v1/tokens/validate", body: #"{"token":"{token}"}"#, right: 200),
        Decision(route: "POST /terminal/v1/sdk-versions/check", credential: .none, method: "POST",
                 path: "/terminal/v1/sdk-versions/check", body: #"{"version":"1.0.0"}"#, right: 200),
        Decision(route: "GET /terminal/v1/terms", credential: .deviceToken, method: "GET",
                 path: "/terminal/v1/terms?accountId=\(account)", right: 200, otherTerminal: 200),
        Decision(route: "PUT /terminal/v1/terms", credential: .deviceToken, method: "PUT",
                 path: "/terminal/v1/terms", body: #"{"accountId":"\#(account)","accepted":true}"#, right: 200, otherTerminal: 200),
        // The other terminal's list is answered, without this terminal's transaction (checked below).
        Decision(route: "GET /coreapi/v1/transactions", credential: .deviceToken, method: "GET",
                 path: "/coreapi/v1/transactions?orderId={order}", right: 200, otherTerminal: 200),
        Decision(route: "POST /coreapi/v1/reversal", credential: .deviceToken, method: "POST",
                 path: "/coreapi/v1/reversal", body: #"{"uniqueRef":"{ref}","deviceType":"AppleTTP"}"#, right: 200, otherTerminal: 403),
        Decision(route: "GET /v1/payments", credential: .apiKey, method: "GET", path: "/v1/payments?orderId={order}", right: 200),
        Decision(route: "GET /support/v1/orders/{orderId}", credential: .apiKey, method: "GET",
                 path: "/support/v1/orders/{order}", right: 200),
        Decision(route: "GET /v1/payments/{id}", credential: .apiKey, method: "GET", path: "/v1/payments/{id}", right: 200),
        Decision(route: "POST /v1/payments/{id}/refund", credential: .apiKey, method: "POST",
                 path: "/v1/payments/{id}/refund", body: #"{"amount":100}"#, right: 200),
        // MONEI cancels an AUTHORIZED payment only: past the key, the captured sale's 422.
        Decision(route: "POST /v1/payments/{id}/cancel", credential: .apiKey, method: "POST",
                 path: "/v1/payments/{id}/cancel", body: #"{"cancellationReason":"duplicated"}"#, right: 422),
        Decision(route: "POST /v1/payments/{id}/capture", credential: .apiKey, method: "POST",
                 path: "/v1/payments/{id}/capture", body: "{}", right: 422),
        Decision(route: "POST /v1/payments", credential: .apiKey, method: "POST", path: "/v1/payments",
                 body: #"{"amount":500,"currency":"EUR","orderId":"merchant-1","transactionType":"AUTH","paymentMethod":{"card":{"number":"4012888888881881","expMonth":"12","expYear":"28"}}}"#,
                 right: 200),
        Decision(route: "POST /v1/pos/auth-token", credential: .apiKey, method: "POST",
                 path: "/v1/pos/auth-token", body: #"{"pointOfSaleId":"pos-new"}"#, right: 200),
        Decision(route: "GET /admin/faults", credential: .apiKey, method: "GET", path: "/admin/faults", right: 200),
        Decision(route: "POST /admin/faults", credential: .apiKey, method: "POST", path: "/admin/faults",
                 body: #"{"fault":"close-after-commit","count":1}"#, right: 200),
        Decision(route: "DELETE /admin/faults", credential: .apiKey, method: "DELETE", path: "/admin/faults", right: 200),
        // No deliverer runs in this fixture: past the key, the route's own 409.
        Decision(route: "GET /admin/webhook-faults", credential: .apiKey, method: "GET", path: "/admin/webhook-faults", right: 409),
        Decision(route: "POST /admin/webhook-faults", credential: .apiKey, method: "POST", path: "/admin/webhook-faults",
                 body: #"{"faults":"duplicate"}"#, right: 409),
        Decision(route: "DELETE /admin/webhook-faults", credential: .apiKey, method: "DELETE", path: "/admin/webhook-faults", right: 409),
        // The test controls: the key, on a gateway served with --test-controls (the fixture's);
        // `testControlsOffIsRefused` probes a gateway without them.
        Decision(route: "POST /admin/test/tokens", credential: .testControls, method: "POST", path: "/admin/test/tokens",
                 body: #"{"pointOfSaleId":"pos-t","expired":true}"#, right: 200),
        Decision(route: "POST /admin/test/blocked-sdk-versions", credential: .testControls, method: "POST",
                 path: "/admin/test/blocked-sdk-versions", body: #"{"version":"0.0.1-blocked"}"#, right: 200),
        Decision(route: "DELETE /admin/test/blocked-sdk-versions/{version}", credential: .testControls, method: "DELETE",
                 path: "/admin/test/blocked-sdk-versions/0.0.1-blocked", right: 200),
        Decision(route: "* /graphql", credential: .apiKey, method: "POST", path: "/graphql",
                 body: #"{"query":"{ charges(filter: {orderId: {eq: \"{order}\"}}) { total } }"}"#, right: 200),
        Decision(route: "* /", credential: .dashboard, method: "GET", path: "/", right: 200),
        Decision(route: "* /dashboard/*", credential: .dashboard, method: "GET", path: "/dashboard/api/payments?orderId={order}", right: 200),
    ]

    /// The router `tapemu gateway serve` runs on loopback.
    static func servedRouter(_ service: GatewayService) -> Router { GatewayServeCommand.makeRouter(service, dashboard: true) }

    static func key(_ e: Router.Entry) -> String { "\(e.method ?? "*") \(e.pattern)" }

    @Test("every route of the served router has a documented decision, and every decision a route")
    func everyRouteHasADecision() throws {
        let service = try GatewayService(dataDirectory: try temporaryDirectory())
        let routes = Self.servedRouter(service).table.map(Self.key)
        let decided = Self.decisions.map(\.route)
        #expect(Set(routes).subtracting(decided).isEmpty, "routes without a decision: \(Set(routes).subtracting(decided).sorted())")
        #expect(Set(decided).subtracting(routes).isEmpty, "decisions without a route: \(Set(decided).subtracting(routes).sorted())")
        #expect(routes.count == Set(routes).count, "a route twice: \(routes)")
    }

    @Test("the router's credential column is the documented one, route by route")
    func credentialMatchesTheDecision() throws {
        let service = try GatewayService(dataDirectory: try temporaryDirectory())
        let table = Dictionary(uniqueKeysWithValues: Self.servedRouter(service).table.map { (Self.key($0), $0.credential) })
        for d in Self.decisions {
            #expect(table[d.route] == d.credential, "\(d.route): the router says \(table[d.route].map(\.rawValue) ?? "nothing")")
        }
    }

    @Test("docs/GATEWAY.md's API table lists every route with its credential")
    func readmeListsEveryRoute() throws {
        let readme = try String(contentsOf: DashboardBrowserTests.packageRoot.appendingPathComponent("docs/GATEWAY.md"), encoding: .utf8)
        let words: [RouteCredential: String] = [.none: "none", .apiKey: "API key", .deviceToken: "terminal token",
                                                .dashboard: "dashboard session", .testControls: "API key, `--test-controls`"]
        for d in Self.decisions {
            let parts = d.route.split(separator: " ", maxSplits: 1)
            let method = parts[0] == "*" ? "any" : String(parts[0])
            let row = "| \(method) | `\(parts[1])` | \(words[d.credential]!) |"
            #expect(readme.contains(row), "docs/GATEWAY.md has no row \(row)")
        }
    }

    /// The fixture: a served gateway, the terminal `pos-a`'s approved sale (the order and
    /// transaction the requests name), the tokens of `pos-a` and of `pos-b` (same account).
    struct Fixture {
        let service: GatewayService
        let server: HTTPServer
        let mine: String
        let other: String
        let sale: AuthorisationResponse
        let cookie: String

        init(testControls: Bool = true) async throws {
            service = try GatewayService(gateway: EmbeddedGateway(dataDirectory: try temporaryDirectory()),
                                         testControls: testControls)
            server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(2)),
                                    handler: GatewayServeCommand.makeHandler(service, listenHost: "127.0.0.1"))
            mine = service.gateway.issueToken(accountId: service.accountId, pointOfSaleId: "pos-a")
            other = service.gateway.issueToken(accountId: service.accountId, pointOfSaleId: "pos-b")
            sale = try await RemoteGateway(baseURL: server.url, deviceToken: mine).authorize(
                AuthorisationRequest(orderId: "own-1", amount: 1000, card: CardData(pan: PAN("4012888888881881")!, expiry: "2812")))
            // The dashboard's session, as a browser gets it: the printed URL once.
            let opened = try await HTTPClient().send(HTTPClientRequest(url: server.url + "/dashboard?key=\(service.apiKey)"))
            let setCookie = try #require(opened.header("Set-Cookie"))
            cookie = String(try #require(setCookie.split(separator: ";").first))
        }

        func fill(_ text: String) -> String {
            text.replacingOccurrences(of: "{order}", with: sale.orderId).replacingOccurrences(of: "{ref}", with: sale.uniqueRef)
                .replacingOccurrences(of: "{id}", with: sale.paymentId).replacingOccurrences(of: "{token}", with: mine)
        }

        enum Given: String, CaseIterable { case nothing, wrong, otherTerminal, right }

        /// The credential header(s) of `given` for a route that takes `credential`.
        func headers(_ given: Given, _ credential: RouteCredential) -> [(name: String, value: String)] {
            let flip = { (s: String) -> String in String(s.dropLast()) + (s.last == "0" ? "1" : "0") }
            switch (given, credential) {
            case (.nothing, _): return []
            case (.otherTerminal, _): return [("Authorization", "Bearer \(other)")]
            case (.wrong, .deviceToken): return [("Authorization", "Bearer \(flip(mine))")]
            case (.wrong, .dashboard): return [("Cookie", flip(cookie))]
            case (.wrong, _): return [("Authorization", flip(service.apiKey))]
            case (.right, .deviceToken): return [("Authorization", "Bearer \(mine)")]
            case (.right, .dashboard): return [("Cookie", cookie)]
            case (.right, .apiKey), (.right, .testControls): return [("Authorization", service.apiKey)]
            case (.right, .none): return []
            }
        }

        func send(_ d: Decision, _ given: Given) async throws -> HTTPClientResponse {
            var h = headers(given, d.credential)
            let body = d.body.map(fill)
            if body != nil { h.append(("Content-Type", "application/json")) }
            return try await HTTPClient().send(HTTPClientRequest(method: d.method, url: server.url + fill(d.path), headers: h,
                                                                 body: Array((body ?? "").utf8)))
        }
    }

    /// The documented status of `d` for `given`.
    static func expected(_ d: Decision, _ given: Fixture.Given) -> Int {
        switch (given, d.credential) {
        case (.right, _), (_, .none): return d.right
        case (.otherTerminal, .deviceToken): return d.otherTerminal ?? d.right
        default: return 401
        }
    }

    @Test("no credential, a wrong one, another terminal's token, the right one: the documented status; what a refused request names is untouched",
          arguments: decisions)
    func probe(_ d: Decision) async throws {
        let f = try await Fixture()
        var seen: [String] = []
        for given in Fixture.Given.allCases {
            let r = try await f.send(d, given)
            seen.append("\(given.rawValue) → \(r.status)")
            #expect(r.status == Self.expected(d, given), "\(d.route) with \(given.rawValue): \(r.status) \(String(decoding: r.body.prefix(300), as: UTF8.self))")
            let text = String(decoding: r.body, as: UTF8.self)
            if r.status == 401 || r.status == 403 {
                // A refusal reveals nothing of the payment and changed nothing.
                #expect(!text.contains(f.sale.uniqueRef) && !text.contains(f.sale.paymentId), "\(d.route) \(given.rawValue)")
                let stored = try #require(try f.service.gateway.ledger.payment(paymentId: f.sale.paymentId))
                #expect(stored.refundedAmount == 0 && !stored.reversed, "\(d.route) \(given.rawValue) moved money")
            }
            if given == .otherTerminal && d.credential == .deviceToken {
                #expect(!text.contains(f.sale.uniqueRef), "\(d.route): another terminal saw this terminal's transaction")
            }
        }
        print("security table: \(d.route) [\(d.credential.rawValue)]: \(seen.joined(separator: ", "))")
        await f.server.stop()
    }

    @Test("a gateway served without --test-controls: each test control is 401 without the key or with a wrong one, 403 testControlsOff with it, and does nothing",
          arguments: decisions.filter { $0.credential == .testControls })
    func testControlsOffIsRefused(_ d: Decision) async throws {
        let f = try await Fixture(testControls: false)
        for given in Fixture.Given.allCases {
            let r = try await f.send(d, given)
            let want = given == .right ? 403 : 401
            #expect(r.status == want, "\(d.route) with \(given.rawValue): \(r.status) \(String(decoding: r.body.prefix(300), as: UTF8.self))")
            if given == .right { #expect(try jsonObject(r.body)["code"] as? String == "testControlsOff") }
        }
        #expect(try f.service.gateway.ledger.blockedSDKVersions().isEmpty)
        await f.server.stop()
    }

    @Test("the dashboard: the key in the URL once → 303 to the page without it and an HttpOnly, SameSite=Strict cookie; a cross-site or same-site request with the cookie is 403; a wrong key 401")
    func dashboardSession() async throws {
        let f = try await Fixture()
        let opened = try await HTTPClient().send(HTTPClientRequest(url: f.server.url + "/dashboard?key=\(f.service.apiKey)"))
        #expect(opened.status == 303)
        #expect(opened.header("Location") == "/dashboard")
        let setCookie = try #require(opened.header("Set-Cookie"))
        #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict") && setCookie.contains("Path=/"))
        #expect(!setCookie.contains(f.service.apiKey))
        let wrong = try await HTTPClient().send(HTTPClientRequest(url: f.server.url + "/dashboard?key=\(f.service.apiKey)0"))
        #expect(wrong.status == 401 && wrong.header("Set-Cookie") == nil)
        for site in ["cross-site", "same-site"] {
            let r = try await HTTPClient().send(HTTPClientRequest(
                url: f.server.url + "/dashboard/api/payments", headers: [("Cookie", f.cookie), ("Sec-Fetch-Site", site)]))
            #expect(r.status == 403, "\(site)")
        }
        for site in ["same-origin", "none"] {
            let r = try await HTTPClient().send(HTTPClientRequest(
                url: f.server.url + "/dashboard/api/payments", headers: [("Cookie", f.cookie), ("Sec-Fetch-Site", site)]))
            #expect(r.status == 200, "\(site)")
        }
        await f.server.stop()
    }

    @Test("a terminal's expired token is 401 tokenExpired; the API key is no terminal token; a token is no API key")
    func crossedCredentials() async throws {
        let f = try await Fixture()
        let expired = f.service.gateway.issueToken(accountId: f.service.accountId, ttl: .zero, pointOfSaleId: "pos-a")
        let old = try await HTTPClient().send(HTTPClientRequest(
            url: f.server.url + "/terminal/v1/charges?orderId=own-1", headers: [("Authorization", "Bearer \(expired)")]))
        #expect(old.status == 401)
        #expect(try jsonObject(old.body)["code"] as? String == "tokenExpired")
        for value in [f.service.apiKey, "Bearer \(f.service.apiKey)"] {
            let r = try await HTTPClient().send(HTTPClientRequest(
                url: f.server.url + "/terminal/v1/charges?orderId=own-1", headers: [("Authorization", value)]))
            #expect(r.status == 401)
        }
        let asKey = try await HTTPClient().send(HTTPClientRequest(
            url: f.server.url + "/v1/payments?orderId=own-1", headers: [("Authorization", f.mine)]))
        #expect(asKey.status == 401)
        // The same terminal with a later token (another tokenId, same pointOfSaleId) finds its order.
        let later = f.service.gateway.issueToken(accountId: f.service.accountId, pointOfSaleId: "pos-a")
        let found = try await RemoteGateway(baseURL: f.server.url, deviceToken: later).charges(orderId: "own-1")
        #expect(found.map(\.paymentId) == [f.sale.paymentId])
        // Another account's terminal is refused the terms of this one.
        let foreign = f.service.gateway.issueToken(accountId: "acct_other", pointOfSaleId: "pos-a")
        let terms = try await HTTPClient().send(HTTPClientRequest(
            url: f.server.url + "/terminal/v1/terms?accountId=\(f.service.accountId)", headers: [("Authorization", "Bearer \(foreign)")]))
        #expect(terms.status == 403)
        await f.server.stop()
    }

    @Test("the probes of the issue: a terminal lists, refunds and reverses only its own; the other terminal's list by last four is empty")
    func issueProbes() async throws {
        let f = try await Fixture()
        let thief = RemoteGateway(baseURL: f.server.url, deviceToken: f.other)
        let list = try await thief.transactionList(TransactionFilter(orderId: nil, panLastFour: "1881"), options: GatewayRequestOptions())
        #expect(list.isEmpty)
        await #expect(throws: GatewayError.self) { _ = try await thief.refund(uniqueRef: f.sale.uniqueRef, amount: nil, options: GatewayRequestOptions()) }
        await #expect(throws: GatewayError.self) { _ = try await thief.reverse(uniqueRef: f.sale.uniqueRef, options: GatewayRequestOptions()) }
        await #expect(throws: GatewayError.self) { _ = try await thief.charges(orderId: "own-1") }
        let stored = try #require(try f.service.gateway.ledger.payment(paymentId: f.sale.paymentId))
        #expect(stored.refundedAmount == 0 && !stored.reversed)
        // Its own: listed by last four, and reversed.
        let owner = RemoteGateway(baseURL: f.server.url, deviceToken: f.mine)
        #expect(try await owner.transactionList(TransactionFilter(orderId: nil, panLastFour: "1881"), options: GatewayRequestOptions())
            .map(\.uniqueRef) == [f.sale.uniqueRef])
        _ = try await owner.reverse(uniqueRef: f.sale.uniqueRef, options: GatewayRequestOptions())
        #expect(try f.service.gateway.ledger.payment(paymentId: f.sale.paymentId)?.reversed == true)
        await f.server.stop()
    }
}
