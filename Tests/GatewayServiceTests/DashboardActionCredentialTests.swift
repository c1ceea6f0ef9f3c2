import Foundation
import GatewayService
import HTTPClient
import HTTPServer
import PaymentGateway
import Testing
import TestSupport
@testable import tapemu

/// The dashboard's refund and reverse buttons take the dashboard's credential, and with the
/// session cookie (ambient: the browser adds it) also the page's own Origin.
@Suite("Dashboard actions: the session cookie and the page's own Origin", .temporaryDirectories)
struct DashboardActionCredentialTests {
    @Test("a refund with the cookie: refused without an Origin, with another origin (another port: same site) or cross-site; done with the page's own; the API key needs no Origin; nothing is refunded by a refusal")
    func refundNeedsOwnOrigin() async throws {
        let f = try await RouteCredentialTableTests.Fixture()
        let url = f.server.url + "/dashboard/api/payments/\(f.sale.paymentId)/refund"
        let host = String(f.server.url.dropFirst("http://".count))
        func post(_ headers: [(name: String, value: String)]) async throws -> HTTPClientResponse {
            try await HTTPClient().send(HTTPClientRequest(method: "POST", url: url,
                                                          headers: [("Content-Type", "application/json")] + headers,
                                                          body: Array(#"{"amount": 100}"#.utf8)))
        }
        let port = Int(host.split(separator: ":").last!)!
        for (label, headers) in [
            ("no Origin", [("Cookie", f.cookie)]),
            ("another port", [("Cookie", f.cookie), ("Origin", "http://127.0.0.1:\(port == 9 ? 10 : 9)")]),
            ("another host name", [("Cookie", f.cookie), ("Origin", "http://localhost:\(port)")]),
            ("null", [("Cookie", f.cookie), ("Origin", "null")]),
            ("same-site fetch", [("Cookie", f.cookie), ("Origin", "http://\(host)"), ("Sec-Fetch-Site", "same-site")]),
            ("no cookie", [("Origin", "http://\(host)")]),
        ] as [(String, [(name: String, value: String)])] {
            let r = try await post(headers)
            #expect(r.status == 403 || r.status == 401, "\(label): \(r.status)")
            #expect(try f.service.gateway.ledger.payment(paymentId: f.sale.paymentId)?.refundedAmount == 0, "\(label) refunded")
        }
        let own = try await post([("Cookie", f.cookie), ("Origin", "http://\(host)"), ("Sec-Fetch-Site", "same-origin")])
        #expect(own.status == 200, "\(String(decoding: own.body, as: UTF8.self))")
        #expect(try f.service.gateway.ledger.payment(paymentId: f.sale.paymentId)?.refundedAmount == 100)
        let withKey = try await post([("Authorization", f.service.apiKey)])
        #expect(withKey.status == 200)
        #expect(try f.service.gateway.ledger.payment(paymentId: f.sale.paymentId)?.refundedAmount == 200)
        // A GET with the cookie needs no Origin (a navigation sends none).
        let list = try await HTTPClient().send(HTTPClientRequest(url: f.server.url + "/dashboard/api/payments",
                                                                 headers: [("Cookie", f.cookie)]))
        #expect(list.status == 200)
        await f.server.stop()
    }
}
