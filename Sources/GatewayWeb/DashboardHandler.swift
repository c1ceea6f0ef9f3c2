public import HTTPServer
public import Foundation
public import GatewayGraphQL
import GraphQL
public import PaymentGateway

/// The dashboard: one self-contained page, the JSON it polls, a CSV export and two actions.
///
/// | method, path | answer |
/// |---|---|
/// | `GET /` (also `/dashboard`, `/dashboard/`) | the page (``DashboardPage``): inline CSS and JS, no external asset |
/// | `GET /dashboard/api/payments?orderId=&status=&from=&to=&limit=&offset=` | `{"items": [sale…], "total", "exact", "totals": [{currency, count, amount, refunded, net}], "offset", "limit", "now"}`, newest first; the filter is ``DashboardQuery`` (order ID prefix, case-insensitive; `exact`: how many match it exactly) |
/// | `GET /dashboard/api/payments.csv?…` | every sale the same filter shows (no paging), RFC 4180 CSV (``DashboardQuery/csv(_:)``) |
/// | `GET /dashboard/api/payments/{id}` | `{"payment", "refunds", "reversal", "webhooks": [{…, "tries": [attempt…]}]}`, 404 when no such sale |
/// | `POST /dashboard/api/payments/{id}/refund` `{"amount": minor units}` (no amount: all that is left) | the gateway's refund, its rules and messages as the API's; the sale after it |
/// | `POST /dashboard/api/payments/{id}/reverse` `{}` | the gateway's reversal (once; the CoreAPI's rule) |
///
/// Mount it for `/` and the `/dashboard` prefix (``handles(path:)``). Other paths are 404,
/// other methods 405. A POST's body is JSON sent as such (415 otherwise: an HTML form on
/// another site cannot send it); the router's dashboard credential checks the session cookie
/// and, for a POST with the cookie, the page's own `Origin`. Without a ``gateway`` (a
/// read-only dashboard) the actions are 405. Answers never hold a full PAN (brand and last four only).
public struct DashboardHandler: HTTPHandler {
    public let source: any DashboardDataSource
    /// What the refund and reverse buttons call: the same gateway as the API (nil: no actions).
    public let gateway: (any Gateway)?
    public let now: @Sendable () -> Date
    /// The page polls its JSON this often.
    public let pollInterval: Duration

    public init(source: any DashboardDataSource, gateway: (any Gateway)? = nil, now: @escaping @Sendable () -> Date = { Date() },
                pollInterval: Duration = .seconds(1)) {
        self.source = source
        self.gateway = gateway
        self.now = now
        self.pollInterval = pollInterval
    }

    /// The paths this handler serves (for a router).
    public static func handles(path: String) -> Bool {
        path == "/" || path == "/dashboard" || path.hasPrefix("/dashboard/")
    }

    static let apiPrefix = "/dashboard/api/payments"

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let path = request.path
        if request.method == "POST", path.hasPrefix(Self.apiPrefix + "/") {
            let rest = path.dropFirst(Self.apiPrefix.count + 1).split(separator: "/", omittingEmptySubsequences: false)
            if rest.count == 2, !rest[0].isEmpty, rest[1] == "refund" || rest[1] == "reverse" {
                return await action(String(rest[1]), paymentId: String(rest[0]), request)
            }
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            var r = error(405, "methodNotAllowed", "use GET", request)
            r.headers.append(("Allow", "GET, HEAD"))
            return r
        }
        if path == "/" || path == "/dashboard" || path == "/dashboard/" { return page(request) }
        do throws(GatewayError) {
            if path == Self.apiPrefix || path == Self.apiPrefix + "/" { return try list(request) }
            if path == Self.apiPrefix + ".csv" { return try csv(request) }
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

    /// The sales ``DashboardQuery`` keeps, newest first (of the newest ``DashboardQuery/scanLimit``).
    private func matching(_ q: DashboardQuery) throws(GatewayError) -> [Payment] {
        q.matching(try source.recentSales(limit: DashboardQuery.scanLimit))
    }

    private func list(_ request: HTTPRequest) throws(GatewayError) -> HTTPResponse {
        let q: DashboardQuery
        do throws(DashboardQuery.Invalid) { q = try DashboardQuery(request) } catch {
            return self.error(400, "invalidRequest", error.message, request)
        }
        let sales = try matching(q)
        let page = sales.dropFirst(q.offset).prefix(q.limit)
        return JSONResponse.make(200, .object([
            ("items", .array(page.map(DashboardJSON.summary))),
            ("total", .int(sales.count)),
            ("exact", .int(q.exact(sales).count)),
            ("totals", .array(DashboardQuery.totals(sales).map { t in
                .object([("currency", .string(t.currency)), ("count", .int(t.count)), ("amount", .int(t.amount)),
                         ("refunded", .int(t.refunded)), ("net", .int(t.net))])
            })),
            ("offset", .int(q.offset)),
            ("limit", .int(q.limit)),
            ("now", DashboardJSON.time(now())),
        ]), requestId: request.requestId)
    }

    private func csv(_ request: HTTPRequest) throws(GatewayError) -> HTTPResponse {
        let q: DashboardQuery
        do throws(DashboardQuery.Invalid) { q = try DashboardQuery(request, paging: false) } catch {
            return self.error(400, "invalidRequest", error.message, request)
        }
        let body = DashboardQuery.csv(try matching(q))
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "text/csv; charset=utf-8; header=present"),
            ("Content-Disposition", "attachment; filename=\"payments.csv\""),
            ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
        ]
        if !request.requestId.isEmpty { headers.append(("X-Request-Id", request.requestId)) }
        return HTTPResponse(status: 200, headers: headers, body: request.method == "HEAD" ? [] : Array(body.utf8))
    }

    /// A refund or a reversal of sale `paymentId` through ``gateway``: the API's rules and
    /// messages (its ``GatewayError``'s code and reason), answered with the sale as it now stands.
    private func action(_ kind: String, paymentId: String, _ request: HTTPRequest) async -> HTTPResponse {
        guard let gateway else {
            var r = error(405, "methodNotAllowed", "this dashboard is read only", request)
            r.headers.append(("Allow", "GET, HEAD"))
            return r
        }
        guard request.hasJSONContentType else {
            return error(415, "unsupportedMediaType", "the body must be sent as Content-Type: application/json", request)
        }
        var amount: Int?
        do {
            let body = request.body.isEmpty ? JSONValue.object([]) : try JSONValue.parse(request.body)
            guard case .object(let members) = body else { throw DashboardQuery.Invalid(message: "the body must be a JSON object") }
            for (key, value) in members {
                switch (kind, key, value) {
                case ("refund", "amount", .int(let a)): amount = a
                case ("refund", "amount", .null): amount = nil
                case ("refund", "amount", _):
                    throw DashboardQuery.Invalid(message: "amount must be a whole number of minor units")
                default:
                    throw DashboardQuery.Invalid(message: "unknown field \(key.prefix(64)) (a \(kind) takes \(kind == "refund" ? "amount" : "no field"))")
                }
            }
        } catch let e as DashboardQuery.Invalid {
            return error(400, "invalidRequest", e.message, request)
        } catch {
            return self.error(400, "invalidRequest", "the body is not JSON: \(error)", request)
        }
        let options = GatewayRequestOptions(timeout: nil, fault: GatewayFault.none)
        do throws(GatewayError) {
            guard let sale = try source.sales(orderId: nil, paymentId: paymentId).first else {
                return error(404, "notFound", "no payment \(paymentId.prefix(64))", request)
            }
            if kind == "refund" {
                _ = try await gateway.refund(uniqueRef: sale.uniqueRef, amount: amount, options: options)
            } else {
                _ = try await gateway.reverse(uniqueRef: sale.uniqueRef, options: options)
            }
            return try detail(paymentId, request)
        } catch {
            return self.error(Self.status(error.code), error.code.description, error.reason, request)
        }
    }

    /// The HTTP status of a refused action: the API's (``GatewayError/Code/httpStatus``).
    static func status(_ code: GatewayError.Code) -> Int { code.httpStatus }

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
