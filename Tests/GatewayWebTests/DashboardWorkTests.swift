import Foundation
import GatewayGraphQL
import GatewayWeb
import GraphQL
import HTTPServer
import PaymentGateway
import Synchronization
import Testing
import TestSupport

final class DashboardWorkClock: Sendable {
    let value = Mutex(Date(timeIntervalSince1970: 1_800_000_000))  // 2027-01-15T08:00:00Z
    var now: @Sendable () -> Date { { self.value.withLock { $0 } } }
    func advance(_ s: Double) { value.withLock { $0 = $0.addingTimeInterval(s) } }
}

private func send(_ h: DashboardHandler, _ method: String, _ path: String, _ query: [(name: String, value: String)] = [],
                  body: String? = nil, contentType: String? = "application/json") async -> (Int, JSONValue, HTTPResponse) {
    var headers: [(name: String, value: String)] = []
    if let contentType, body != nil { headers.append(("Content-Type", contentType)) }
    let r = await h.handle(HTTPRequest(method: method, path: path, query: query, headers: headers,
                                       body: Array((body ?? "").utf8), requestId: "r-1"))
    return (r.status, (try? JSONValue.parse(r.body)) ?? .null, r)
}

private func orders(_ list: JSONValue) -> [String] { list["items"]?.array?.compactMap { $0["orderId"]?.string } ?? [] }

/// The dashboard's list as a place to work: filters, totals, pages, CSV, actions.
@Suite struct DashboardWorkTests {
    /// Five sales a minute apart on 2027-01-15 and one the next day (newest first in lists).
    static func shop(_ dir: TempDir) async throws -> (EmbeddedGateway, DashboardHandler, DashboardWorkClock, [String: AuthorisationResponse]) {
        let clock = DashboardWorkClock()
        let g = try makeGateway(dir, now: clock.now)
        var sales: [String: AuthorisationResponse] = [:]
        for (order, amount) in [("Shop-100", 1000), ("shop-1001", 2000), ("SHOP-200", 1251), ("other-1", 500),
                                ("=cmd|' /C calc'!A0,\"x\"", 700)] {
            sales[order] = try await pay(g, orderId: order, amount: amount)
            clock.advance(60)
        }
        clock.advance(86_400)
        sales["late-1"] = try await pay(g, orderId: "late-1", amount: 300)
        let h = DashboardHandler(source: LedgerChargeDataSource(ledger: g.ledger), gateway: g, now: clock.now)
        return (g, h, clock, sales)
    }

    @Test("the order filter is a case-insensitive prefix and says how many match exactly")
    func prefixFilter() async throws {
        let dir = TempDir()
        let (_, h, _, _) = try await Self.shop(dir)
        let (s, shop, _) = await send(h, "GET", "/dashboard/api/payments", [("orderId", "shop-")])
        #expect(s == 200)
        #expect(orders(shop) == ["SHOP-200", "shop-1001", "Shop-100"])
        #expect(shop["exact"]?.int == 0 && shop["total"]?.int == 3)
        let (_, exact, _) = await send(h, "GET", "/dashboard/api/payments", [("orderId", "Shop-100")])
        #expect(orders(exact) == ["shop-1001", "Shop-100"])
        #expect(exact["exact"]?.int == 1)
        // Only its exact bytes are exact: another case is a prefix match, not the order.
        let (_, other, _) = await send(h, "GET", "/dashboard/api/payments", [("orderId", " shop-100 ")])
        #expect(orders(other) == ["shop-1001", "Shop-100"] && other["exact"]?.int == 0)
        let (_, none, _) = await send(h, "GET", "/dashboard/api/payments", [("orderId", "shop-3")])
        #expect(orders(none).isEmpty && none["total"]?.int == 0)
    }

    @Test("status and day filters; totals of everything the filter shows, not only the page; pages")
    func statusDatesTotalsPages() async throws {
        let dir = TempDir()
        let (_, h, _, _) = try await Self.shop(dir)
        let (_, failed, _) = await send(h, "GET", "/dashboard/api/payments", [("status", "FAILED")])
        #expect(orders(failed) == ["SHOP-200"])
        let (_, day, _) = await send(h, "GET", "/dashboard/api/payments", [("from", "2027-01-16"), ("to", "2027-01-16")])
        #expect(orders(day) == ["late-1"])
        let (_, first, _) = await send(h, "GET", "/dashboard/api/payments", [("to", "2027-01-15")])
        #expect(first["total"]?.int == 5)
        let (_, page, _) = await send(h, "GET", "/dashboard/api/payments", [("limit", "2"), ("offset", "2")])
        #expect(orders(page) == ["other-1", "SHOP-200"])
        #expect(page["total"]?.int == 6 && page["offset"]?.int == 2 && page["limit"]?.int == 2)
        let totals = try #require(page["totals"]?.array)
        #expect(totals.count == 1 && totals[0]["currency"]?.string == "EUR" && totals[0]["count"]?.int == 6)
        #expect(totals[0]["amount"]?.int == 1000 + 2000 + 1251 + 500 + 700 + 300)
        // A declined sale moved no money.
        #expect(totals[0]["net"]?.int == 1000 + 2000 + 500 + 700 + 300)
        for bad in [[("status", "succeeded")], [("from", "2027-13-01")], [("from", "2027-01-16"), ("to", "2027-01-15")],
                    [("offset", "-1")], [("limit", "1001")]] {
            let (status, body, _) = await send(h, "GET", "/dashboard/api/payments", bad)
            #expect(status == 400 && body["code"]?.string == "invalidRequest", "\(bad)")
        }
    }

    @Test("CSV export: what the filter shows, all pages, RFC 4180 quoting, a formula defused, no full PAN")
    func csvExport() async throws {
        let dir = TempDir()
        let (_, h, _, sales) = try await Self.shop(dir)
        let (s, _, r) = await send(h, "GET", "/dashboard/api/payments.csv", [("orderId", "shop"), ("limit", "1")])
        #expect(s == 200)
        #expect(r.headers.contains { $0.name == "Content-Type" && $0.value.hasPrefix("text/csv") })
        #expect(r.headers.contains { $0.name == "Content-Disposition" && $0.value.contains("payments.csv") })
        let text = String(decoding: r.body, as: UTF8.self)
        let lines = text.components(separatedBy: "\r\n")
        #expect(lines.first == "paymentId,orderId,status,amount,currency,refundedAmount,cardBrand,last4,createdAt,statusCode,statusMessage")
        #expect(lines.count == 5 && lines.last == "")  // header, three sales (no paging), final CRLF
        #expect(lines[3] == "\(sales["Shop-100"]!.paymentId),Shop-100,SUCCEEDED,1000,EUR,0,visa,1111,2027-01-15T08:00:00Z,E000,Transaction approved")
        let (_, _, odd) = await send(h, "GET", "/dashboard/api/payments.csv", [("orderId", "=")])
        let row = String(decoding: odd.body, as: UTF8.self).components(separatedBy: "\r\n")[1]
        #expect(row.contains(#","'=cmd|' /C calc'!A0,""x""",SUCCEEDED,"#), "\(row)")
        #expect(!text.contains("4111111111111111") && !String(decoding: odd.body, as: UTF8.self).contains("4111111111111111"))
        let (bad, _, _) = await send(h, "GET", "/dashboard/api/payments.csv", [("status", "nope")])
        #expect(bad == 400)
    }

    @Test("refund and reverse go through the gateway: its rules and the API's message; a body that is not JSON is refused")
    func actions() async throws {
        let dir = TempDir()
        let (g, h, _, sales) = try await Self.shop(dir)
        let sale = try #require(sales["Shop-100"])
        // What the API says to a refund over the amount (the same gateway call).
        var apiMessage = ""
        do throws(GatewayError) { _ = try await g.refund(uniqueRef: sale.uniqueRef, amount: 1001) } catch { apiMessage = error.reason }
        #expect(!apiMessage.isEmpty)
        let path = "/dashboard/api/payments/\(sale.paymentId)"
        let (over, overBody, _) = await send(h, "POST", path + "/refund", body: #"{"amount": 1001}"#)
        #expect(over == 422 && overBody["message"]?.string == apiMessage, "\(overBody)")
        let (ok, after, _) = await send(h, "POST", path + "/refund", body: #"{"amount": 250}"#)
        #expect(ok == 200 && after["payment"]?["refundedAmount"]?.int == 250 && after["payment"]?["status"]?.string == "PARTIALLY_REFUNDED")
        #expect(try g.ledger.sales(orderId: "Shop-100").first?.refundedAmount == 250)
        // The rest, with no amount.
        let (rest, all, _) = await send(h, "POST", path + "/refund", body: "{}")
        #expect(rest == 200 && all["payment"]?["status"]?.string == "REFUNDED")
        let other = try #require(sales["other-1"])
        let (rev, reversed, _) = await send(h, "POST", "/dashboard/api/payments/\(other.paymentId)/reverse", body: "{}")
        #expect(rev == 200 && reversed["payment"]?["status"]?.string == "CANCELED")
        let (again, againBody, _) = await send(h, "POST", "/dashboard/api/payments/\(other.paymentId)/reverse", body: "{}")
        #expect(again == 409 && againBody["code"]?.string == "alreadyReversed")
        // A form or text body (what another site's page can send without asking): 415, nothing done.
        let (form, _, _) = await send(h, "POST", "/dashboard/api/payments/\(other.paymentId)/refund", body: "amount=1",
                                      contentType: "application/x-www-form-urlencoded")
        #expect(form == 415)
        for body in [#"{"amount": "1"}"#, #"{"amount": 1.5}"#, #"{"amount": 1, "amount": 2}"#, #"{"reason": "x"}"#, "[1]", "{"] {
            let (status, _, _) = await send(h, "POST", path + "/refund", body: body)
            #expect(status == 400, "\(body)")
        }
        let (missing, _, _) = await send(h, "POST", "/dashboard/api/payments/nope/refund", body: "{}")
        #expect(missing == 404)
        // A read-only dashboard has no actions.
        let readOnly = DashboardHandler(source: LedgerChargeDataSource(ledger: g.ledger))
        let (ro, _, _) = await send(readOnly, "POST", path + "/refund", body: "{}")
        #expect(ro == 405)
    }
}
