import BERTLV
import PaymentRules
import Foundation
@testable import GatewayService
import HTTPClient
import HTTPServer
import PaymentGateway
import Synchronization
import Testing
import TestSupport
@testable import tapemu

/// A page on another origin, in a real browser (headless Chromium) that holds the dashboard's
/// session cookie, can neither read nor write through `tapemu gateway serve`: not with `fetch`
/// (CORS, with and without credentials), not with a no-CORS POST (no credential: 401), not by
/// including the dashboard's JSON (the cookie is not sent cross-site; same-site it is, and
/// `Sec-Fetch-Site` makes it 403).
@Suite("A cross-site page in a browser can neither read nor write through the gateway", .serialized, .temporaryDirectories)
struct CrossSiteBrowserTests {
    /// Every request the gateway answered: path, status, the browser's Sec-Fetch-Site.
    final class Recorder: HTTPHandler, @unchecked Sendable {
        let inner: any HTTPHandler
        let seen = Mutex<[(method: String, path: String, status: Int, site: String?)]>([])
        init(_ inner: any HTTPHandler) { self.inner = inner }
        func handle(_ request: HTTPRequest) async -> HTTPResponse {
            let r = await inner.handle(request)
            seen.withLock { $0.append((request.method, request.path, r.status, request.header("Sec-Fetch-Site"))) }
            return r
        }
    }

    /// The other origin's page: nothing but a blank document to run scripts in.
    struct Page: HTTPHandler {
        func handle(_ request: HTTPRequest) async -> HTTPResponse {
            HTTPResponse(status: 200, headers: [("Content-Type", "text/html")], body: Array("<!doctype html><title>other site</title>".utf8))
        }
    }

    @Test("fetch with and without credentials, no-cors POSTs to refund, reverse and authorise, a script include of the dashboard's JSON: nothing read, nothing moved", arguments: ["localhost", "127.0.0.1"])
    func otherOrigin(_ pageHost: String) async throws {
        guard let executable = HeadlessChromium.executable() else {
            Issue.record("Chromium is not installed: apt-get install chromium (scripts/dev setup installs it)")
            return
        }
        let service = try GatewayService(dataDirectory: try temporaryDirectory())
        let recorder = Recorder(GatewayServeCommand.makeHandler(service, listenHost: "127.0.0.1"))
        let gateway = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(2)), handler: recorder)
        let other = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(2)), handler: Page())
        let sale = try await RemoteGateway(baseURL: gateway.url, deviceToken: service.testToken).authorize(
            AuthorisationRequest(orderId: "xs-browser", amount: 1000, card: CardData(pan: PAN("4012888888881881")!, expiry: "2812")))
        #expect(sale.status == .approved)

        let browser = try HeadlessChromium(executable: executable)
        // The tester opened the dashboard: the browser holds its session cookie.
        try browser.open(gateway.url + "/dashboard?key=\(service.apiKey)")
        try browser.waitUntil(##"document.querySelectorAll("#payments tbody tr[data-order-id]").length === 1"##)
        // Then a page on another origin (another port: same site for 127.0.0.1, cross-site for localhost).
        try browser.open("http://\(pageHost):\(other.port)/")
        let base = gateway.url
        let outcome = { (script: String) throws -> String in
            (try browser.evaluate("(async () => { try { \(script) } catch (e) { return 'blocked: ' + e.name; } })()") as? String) ?? "nothing"
        }
        // Read, with the cookie and without: CORS gives the page nothing.
        for credentials in ["include", "omit"] {
            let read = try outcome("const r = await fetch('\(base)/dashboard/api/payments', {credentials: '\(credentials)'}); return 'read: ' + await r.text();")
            #expect(read.hasPrefix("blocked"), "\(pageHost), \(credentials): \(read)")
            #expect(!read.contains(sale.paymentId))
        }
        let merchant = try outcome("const r = await fetch('\(base)/v1/payments?orderId=xs-browser', {credentials: 'include'}); return 'read: ' + await r.text();")
        #expect(merchant.hasPrefix("blocked"), "\(merchant)")
        // Writes the page can send without a preflight: text/plain, forms, no type; with the cookie.
        for (path, body) in [("/terminal/v1/refunds", #"{"uniqueRef":"\#(sale.uniqueRef)","amount":1000}"#),
                             ("/coreapi/v1/reversal", #"{"uniqueRef":"\#(sale.uniqueRef)"}"#),
                             ("/v1/payments/\(sale.paymentId)/refund", #"{"amount":1000}"#),
                             ("/v1/payments/\(sale.paymentId)/cancel", "{}"),
                             ("/terminal/v1/authorisations", #"{"orderId":"xs-2","amount":1000,"card":{"pan":"4012888888881881","expiry":"2812"}}"#)] {
            for type in ["text/plain", "application/x-www-form-urlencoded"] {
                let sent = try outcome("const r = await fetch('\(base)\(path)', {method: 'POST', mode: 'no-cors', credentials: 'include', headers: {'Content-Type': '\(type)'}, body: '\(body)'}); return 'sent: ' + r.type;")
                #expect(sent == "sent: opaque", "\(path): \(sent)")
            }
            // With a JSON type the browser asks first (a preflight): the server allows nothing.
            let preflighted = try outcome("const r = await fetch('\(base)\(path)', {method: 'POST', credentials: 'include', headers: {'Content-Type': 'application/json'}, body: '\(body)'}); return 'read: ' + r.status;")
            #expect(preflighted.hasPrefix("blocked"), "\(path): \(preflighted)")
        }
        // The dashboard's JSON included as a script (the cookie rides along same-site).
        let included = try outcome("""
            return await new Promise(done => { const s = document.createElement('script');
              s.src = '\(base)/dashboard/api/payments'; s.onload = () => done('loaded'); s.onerror = () => done('error');
              document.head.appendChild(s); });
            """)
        #expect(included == "error", "\(included)")

        // The server's side: nothing the page sent was answered 2xx; the sale is whole.
        let fromPage = recorder.seen.withLock { $0.filter { $0.site == "cross-site" || $0.site == "same-site" } }
        #expect(!fromPage.isEmpty)
        for r in fromPage { #expect(!(200..<300).contains(r.status), "\(r.method) \(r.path) answered \(r.status) to the page") }
        let stored = try #require(try service.gateway.ledger.payment(paymentId: sale.paymentId))
        #expect(stored.refundedAmount == 0 && !stored.reversed)
        #expect(try service.gateway.ledger.sales(orderId: "xs-2").isEmpty)
        print("cross-site from \(pageHost): " + fromPage.map { "\($0.method) \($0.path) → \($0.status)" }.joined(separator: "; "))
        await gateway.stop()
        await other.stop()
    }
}
