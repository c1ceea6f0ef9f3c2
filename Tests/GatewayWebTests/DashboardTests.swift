import Foundation
import GatewayGraphQL
import GatewayWeb
import GraphQL
import HTTPServer
import PaymentGateway
import Synchronization
import Testing
import TestSupport

/// A receiver that answers 500 to everything, recording nothing else.
private struct Failing: WebhookTransport {
    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int { 500 }
}

private final class Clock0: Sendable {
    let value = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: @Sendable () -> Date { { self.value.withLock { $0 } } }
    func advance(_ s: Double) { value.withLock { $0 = $0.addingTimeInterval(s) } }
}

private func get(_ h: DashboardHandler, _ path: String, _ query: [(name: String, value: String)] = [],
                  method: String = "GET") async -> (Int, JSONValue, HTTPResponse) {
    let r = await h.handle(HTTPRequest(method: method, path: path, query: query, requestId: "r-1"))
    return (r.status, (try? JSONValue.parse(r.body)) ?? .null, r)
}

@Suite struct DashboardTests {
    @Test func pageIsSelfContainedWithStableHooks() async throws {
        let dir = TempDir()
        let g = try makeGateway(dir)
        let h = DashboardHandler(source: LedgerChargeDataSource(ledger: g.ledger))
        let (status, _, r) = await get(h, "/")
        #expect(status == 200)
        let html = String(decoding: r.body, as: UTF8.self)
        #expect(r.headers.contains { $0.name == "Content-Type" && $0.value == "text/html; charset=utf-8" })
        for hook in [#"id="order-filter""#, #"id="payments""#, #"id="payment-detail""#, #"id="webhook-attempts""#,
                     #"id="refunds""#, #"id="reversal""#, #"id="webhooks""#, #"id="last-updated""#, "data-order-id"] {
            #expect(html.contains(hook), "\(hook)")
        }
        // No external asset: no src=, no <link>, no absolute URL in the page.
        #expect(!html.contains("src=") && !html.contains("<link") && !html.contains("://"))
        // The CSP's nonce is the one on the inline script and style, and differs per answer.
        let csp = try #require(r.headers.first { $0.name == "Content-Security-Policy" }?.value)
        let nonce = try #require(csp.split(separator: "'").first { $0.hasPrefix("nonce-") }).dropFirst(6)
        #expect(html.contains(#"<script nonce="\#(nonce)">"#) && html.contains(#"<style nonce="\#(nonce)">"#))
        let (_, _, again) = await get(h, "/")
        #expect(again.headers.first { $0.name == "Content-Security-Policy" }?.value != csp)
        #expect(!html.contains("{{"))
    }

    @Test func paymentsListFilteredByOrderIdNewestFirst() async throws {
        let dir = TempDir(), clock = Clock0()
        let g = try makeGateway(dir, now: clock.now)
        _ = try await pay(g, orderId: "order-1041", amount: 1000)
        clock.advance(5)
        _ = try await pay(g, orderId: "order-1042", amount: 1250)
        clock.advance(5)
        _ = try await pay(g, orderId: "order-1043", amount: 1251)
        let h = DashboardHandler(source: LedgerChargeDataSource(ledger: g.ledger), now: clock.now)

        let (s, all, _) = await get(h, "/dashboard/api/payments")
        #expect(s == 200)
        #expect(all["items"]?.array?.compactMap { $0["orderId"]?.string } == ["order-1043", "order-1042", "order-1041"])
        #expect(all["items"]?[0]?["status"]?.string == "FAILED")
        #expect(all["items"]?[0]?["last4"]?.string == "1111" && all["items"]?[0]?["cardBrand"]?.string == "visa")
        #expect(all["now"]?.string == "2027-01-15T08:00:10Z")

        let (_, one, _) = await get(h, "/dashboard/api/payments", [("orderId", "order-1042")])
        #expect(one["items"]?.array?.count == 1)
        #expect(one["items"]?[0]?.serialized.contains(#""orderId":"order-1042","status":"SUCCEEDED","amount":1250"#) == true)
        let (_, none, _) = await get(h, "/dashboard/api/payments", [("orderId", "order-9")])
        #expect(none["items"]?.array?.isEmpty == true)
        let (bad, _, _) = await get(h, "/dashboard/api/payments", [("limit", "0")])
        #expect(bad == 400)
        // Never a full PAN.
        #expect(!all.serialized.contains("4111111111111111"))
    }

    @Test("an order ID with a leading or trailing space is found by its exact text (the filter trimmed it away and answered no payment for an order the ledger, REST and GraphQL hold); a pasted one with stray spaces is still found; the page sends what was typed")
    func orderIdWithSpacesIsFound() async throws {
        let dir = TempDir()
        let g = try makeGateway(dir)
        _ = try await pay(g, orderId: "order-77 ", amount: 1000)
        _ = try await pay(g, orderId: " order-78", amount: 1250)
        _ = try await pay(g, orderId: "order-79", amount: 700)
        let h = DashboardHandler(source: LedgerChargeDataSource(ledger: g.ledger))
        for (typed, found) in [("order-77 ", "order-77 "), (" order-78", " order-78"), ("  order-79 ", "order-79")] {
            let (s, list, _) = await get(h, "/dashboard/api/payments", [("orderId", typed)])
            #expect(s == 200)
            #expect(list["items"]?.array?.compactMap { $0["orderId"]?.string } == [found], "\(typed)")
            #expect(list["total"]?.int == 1, "\(typed)")
        }
        // The page sends the filter as typed (it trimmed it before the server saw it).
        let (_, _, r) = await get(h, "/")
        #expect(!String(decoding: r.body, as: UTF8.self).contains(".value.trim()"))
    }

    @Test func paymentPageShowsRefundsReversalAndEveryDeliveryAttempt() async throws {
        let dir = TempDir(), clock = Clock0()
        let g = try makeGateway(dir, now: clock.now)
        let sale = try await pay(g, orderId: "order-2001", amount: 1000)
        _ = try await g.refund(uniqueRef: sale.uniqueRef, amount: 300, options: GatewayRequestOptions())
        let other = try await pay(g, orderId: "order-2002", amount: 700)
        _ = try await g.reverse(uniqueRef: other.uniqueRef)
        let deliverer = WebhookDeliverer(ledger: g.ledger, transport: Failing(), now: clock.now, random: { 0.5 })
        try await deliverer.deliverDue()
        clock.advance(10)
        try await deliverer.deliverDue()
        let h = DashboardHandler(source: LedgerChargeDataSource(ledger: g.ledger), now: clock.now)

        let (s, d, _) = await get(h, "/dashboard/api/payments/\(sale.paymentId)")
        #expect(s == 200)
        #expect(d["payment"]?["status"]?.string == "PARTIALLY_REFUNDED")
        #expect(d["refunds"]?.array?.map { $0["amount"]?.int } == [300])
        #expect(d["reversal"] == .null)
        let hooks = try #require(d["webhooks"]?.array)
        #expect(hooks.compactMap { $0["event"]?.string } == ["approved", "partiallyRefunded"])
        let first = try #require(hooks.first)
        #expect(first["state"]?.string == "retrying" && first["attempts"]?.int == 2)
        #expect(first["lastStatus"]?.int == 500 && first["lastError"]?.string == "HTTP 500")
        #expect(first["nextAttemptAt"]?.string == "2027-01-15T08:00:30Z")   // 10 s + 20 s
        #expect(first["tries"]?.array?.map { $0["attempt"]?.int } == [1, 2])
        #expect(first["tries"]?[0]?["nextAttemptAt"]?.string == "2027-01-15T08:00:10Z")

        let (_, r, _) = await get(h, "/dashboard/api/payments/\(other.paymentId)")
        #expect(r["payment"]?["status"]?.string == "CANCELED")
        #expect(r["reversal"]?["type"]?.string == "reversal" && r["reversal"]?["amount"]?.int == 700)
    }

    @Test func errorsAreJSON() async throws {
        let dir = TempDir()
        let g = try makeGateway(dir)
        let h = DashboardHandler(source: LedgerChargeDataSource(ledger: g.ledger))
        #expect(await get(h, "/dashboard/api/payments/nope").0 == 404)
        #expect(await get(h, "/dashboard/api/payments/a/b").0 == 404)
        #expect(await get(h, "/elsewhere").0 == 404)
        let (s, body, r) = await get(h, "/dashboard/api/payments", method: "POST")
        // The gateway service's error shape, as every other route of `tapemu gateway serve`.
        #expect(s == 405 && body["statusCode"]?.int == 405 && body["status"]?.string == "MethodNotAllowedError")
        #expect(body["code"]?.string == "methodNotAllowed" && body["message"]?.string?.isEmpty == false)
        let (missing, notFound, _) = await get(h, "/dashboard/api/payments/nope")
        #expect(missing == 404 && notFound["statusCode"]?.int == 404 && notFound["code"]?.string == "notFound")
        #expect(r.headers.contains { $0.name == "Allow" })
        #expect(DashboardHandler.handles(path: "/") && DashboardHandler.handles(path: "/dashboard/api/payments"))
        #expect(!DashboardHandler.handles(path: "/graphql"))
    }
}

@Suite struct RoutesTests {
    @Test func oneMountForGraphQLAndTheDashboard() async throws {
        let dir = TempDir()
        let g = try makeGateway(dir)
        _ = try await pay(g, orderId: "order-1042", amount: 1250)
        let routes = GatewayWebRoutes(ledger: g.ledger, apiKey: "k")
        #expect(GatewayWebRoutes.serves(path: "/graphql") && GatewayWebRoutes.serves(path: "/"))
        #expect(!GatewayWebRoutes.serves(path: "/v1/payments"))
        let (s, json) = await Charges.post(routes, Charges.body(
            #"query { charges(filter: {orderId: {eq: "order-1042"}}) { items { status amount } } }"#),
            headers: [("Authorization", "k")])
        #expect(s == 200 && json.serialized == #"{"data":{"charges":{"items":[{"status":"SUCCEEDED","amount":1250}]}}}"#)
        let page = await routes.handle(HTTPRequest(method: "GET", path: "/"))
        #expect(page.status == 200)
        let list = await routes.handle(HTTPRequest(method: "GET", path: "/dashboard/api/payments", query: [("orderId", "order-1042")]))
        #expect(String(decoding: list.body, as: UTF8.self).contains(#""orderId":"order-1042""#))
        #expect(await routes.handle(HTTPRequest(method: "GET", path: "/nope")).status == 404)
    }
}

@Suite struct IndexingLagTests {
    @Test func chargesBrieflyFindsNothingThenTheSale() async throws {
        let dir = TempDir(), clock = Clock0()
        let g = try makeGateway(dir, now: clock.now)
        _ = try await pay(g, orderId: "order-1042", amount: 1250)
        let source = IndexingLag(LedgerChargeDataSource(ledger: g.ledger), lag: .seconds(30), now: clock.now)
        let handler = GraphQLHandler(service: GraphQLService(source: source))
        let dashboard = DashboardHandler(source: source, now: clock.now)
        let q = Charges.body(#"query { charges(filter: {orderId: {eq: "order-1042"}}) { items { id status amount } } }"#)
        let (_, early) = await Charges.post(handler, q)
        #expect(early.serialized == #"{"data":{"charges":{"items":[]}}}"#)
        #expect(await dashboard.handle(HTTPRequest(method: "GET", path: "/dashboard/api/payments")).body
                == Array(#"{"items":[],"total":0,"exact":0,"totals":[],"offset":0,"limit":50,"now":"2027-01-15T08:00:00Z"}"#.utf8))
        #expect(try g.ledger.sales(orderId: "order-1042").count == 1)   // the ledger holds it all along
        clock.advance(30)
        let (_, later) = await Charges.post(handler, q)
        #expect(later["data"]?["charges"]?["items"]?.array?.count == 1)
    }
}
