public import HTTPServer
public import Foundation
public import GatewayGraphQL
import GraphQL
import PaymentGateway

/// The dashboard: one self-contained page and the JSON it polls.
///
/// | method, path | answer |
/// |---|---|
/// | `GET /` (also `/dashboard`, `/dashboard/`) | the page (``DashboardPage``): inline CSS and JS, no external asset |
/// | `GET /dashboard/api/payments?orderId=&limit=` | `{"items": [sale…], "total", "now"}`, newest first; `orderId` filters by order ID (exact, the seed's step 3; also trimmed of stray spaces) |
/// | `GET /dashboard/api/payments/{id}` | `{"payment", "refunds", "reversal", "webhooks": [{…, "tries": [attempt…]}]}`, 404 when no such sale |
///
/// Mount it for `/` and the `/dashboard` prefix (``handles(path:)``). Other paths are 404,
/// other methods 405. Answers never hold a full PAN (brand and last four only).
public struct DashboardHandler: HTTPHandler {
    public let source: any DashboardDataSource
    public let now: @Sendable () -> Date
    /// The page polls its JSON this often.
    public let pollInterval: Duration

    public init(source: any DashboardDataSource, now: @escaping @Sendable () -> Date = { Date() },
                pollInterval: Duration = .seconds(1)) {
        self.source = source
        self.now = now
        self.pollInterval = pollInterval
    }

    /// The paths this handler serves (for a router).
    public static func handles(path: String) -> Bool {
        path == "/" || path == "/dashboard" || path.hasPrefix("/dashboard/")
    }

    static let apiPrefix = "/dashboard/api/payments"

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            var r = error(405, "methodNotAllowed", "use GET", request)
            r.headers.append(("Allow", "GET, HEAD"))
            return r
        }
        let path = request.path
        if path == "/" || path == "/dashboard" || path == "/dashboard/" { return page(request) }
        do throws(GatewayError) {
            if path == Self.apiPrefix || path == Self.apiPrefix + "/" { return try list(request) }
            if path.hasPrefix(Self.apiPrefix + "/") {
                let id = String(path.dropFirst(Self.apiPrefix.count + 1))
                guard !id.isEmpty, !id.contains("/") else { return error(404, "notFound", "no such page", request) }
                return try detail(id, request)
            }
        } catch {
            return self.error(503, error.code.description, "the ledger cannot be read: \(error.reason)", request)
        }
        return error(404, "notFound", "no such page", request)
    }

    private func list(_ request: HTTPRequest) throws(GatewayError) -> HTTPResponse {
        let limitText = request.queryValue("limit") ?? "100"
        guard let limit = Int(limitText), (1...1000).contains(limit) else {
            return error(400, "invalidRequest", "limit must be 1 to 1000", request)
        }
        // The order ID as given (an order ID may begin or end with a space: OrderID), and
        // trimmed, for one pasted with stray spaces; blank: the newest payments.
        let typed = request.queryValue("orderId") ?? ""
        let trimmed = typed.trimmingCharacters(in: .whitespaces)
        var sales: [Payment]
        var total: Int
        if trimmed.isEmpty {
            sales = try source.recentSales(limit: limit)
            total = sales.count
        } else {
            sales = try source.sales(orderId: typed, paymentId: nil)
            if trimmed != typed { sales += try source.sales(orderId: trimmed, paymentId: nil) }
            sales.sort { $0.createdAt > $1.createdAt }
            total = sales.count
        }
        total = max(total, sales.count)
        return JSONResponse.make(200, .object([
            ("items", .array(sales.prefix(limit).map(DashboardJSON.summary))),
            ("total", .int(total)),
            ("now", DashboardJSON.time(now())),
        ]), requestId: request.requestId)
    }

    private func detail(_ id: String, _ request: HTTPRequest) throws(GatewayError) -> HTTPResponse {
        guard let sale = try source.sales(orderId: nil, paymentId: id).first else {
            return error(404, "notFound", "no payment \(id.prefix(64))", request)
        }
        let body = DashboardJSON.detail(sale, children: try source.children(ofPaymentId: id),
                                        webhooks: try source.webhooks(ofPaymentId: id))
        return JSONResponse.make(200, body, requestId: request.requestId)
    }

    private func error(_ status: Int, _ code: String, _ message: String, _ request: HTTPRequest) -> HTTPResponse {
        JSONResponse.error(status, code: code, message, requestId: request.requestId)
    }

    private func page(_ request: HTTPRequest) -> HTTPResponse {
        var nonceBytes = [UInt8](repeating: 0, count: 16)
        var rng = SystemRandomNumberGenerator()
        for k in nonceBytes.indices { nonceBytes[k] = UInt8.random(in: 0...255, using: &rng) }
        let nonce = Data(nonceBytes).base64EncodedString()
        let ms = pollInterval.components.seconds * 1000 + pollInterval.components.attoseconds / 1_000_000_000_000_000
        let html = DashboardPage.html(nonce: nonce, pollMilliseconds: Int(max(100, ms)))
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Cache-Control", "no-store"),
            ("Content-Security-Policy",
             "default-src 'none'; script-src 'nonce-\(nonce)'; style-src 'nonce-\(nonce)'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
        ]
        if !request.requestId.isEmpty { headers.append(("X-Request-Id", request.requestId)) }
        return HTTPResponse(status: 200, headers: headers, body: request.method == "HEAD" ? [] : Array(html.utf8))
    }
}
