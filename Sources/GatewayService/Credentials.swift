public import HTTPServer
public import PaymentGateway

/// The service's credentials: the one owner of "who may call this route" (``Router`` asks it
/// for every route, by the route's ``RouteCredential``) and of "is this order the caller's".
///
/// - API key: `Authorization: <key>` exactly (MONEI's API takes the key so), compared in
///   constant time.
/// - Test controls: the API key, on a gateway served with `--test-controls` (else 403
///   `testControlsOff`, once the key is right).
/// - Device token: `Authorization: Bearer <token>`, a token of this gateway
///   (`POST /v1/pos/auth-token`) that has not expired. Its ``TokenClaims/terminal`` owns the
///   orders it sends; another terminal's token gets 403 on them.
/// - Dashboard: the API key in `Authorization`, or the session cookie `tapemu_dashboard`
///   (HttpOnly, SameSite=Strict, Path=/) that `GET …?key=<API key>` sets with a 303 to the same
///   path without the key (the URL `gateway serve` prints: the key travels once). A cookie
///   request a browser marks cross-site or same-site (`Sec-Fetch-Site`: another port of
///   127.0.0.1 is the same site) is 403; so is a POST with the cookie (a dashboard action)
///   whose `Origin` is not the dashboard's own. The session is this process's: a restart asks
///   for the printed URL again.
extension GatewayService: RouteAuthenticator {
    public static let dashboardCookie = "tapemu_dashboard"

    public func authenticate(_ request: HTTPRequest, for credential: RouteCredential) -> Result<TokenClaims?, RouteRefusal> {
        let authorization = request.header("Authorization")
        switch credential {
        case .none:
            return .success(nil)
        case .apiKey, .testControls:
            guard let given = authorization, Self.constantTimeEqual(Array(given.utf8), Array(apiKey.utf8)) else {
                return .failure(refusal(request, 401, "unauthorized",
                                        authorization == nil ? "the Authorization header with the API key is missing"
                                                             : "the API key is not valid",
                                        challenge: "ApiKey"))
            }
            // The key first: whether a gateway has test controls is no business of a caller without it.
            if credential == .testControls && !testControls {
                let code = GatewayError.Code.testControlsOff
                return .failure(refusal(request, code.httpStatus, code.description,
                                        "this gateway's test controls are off: its operator enables them with `tapemu gateway serve --test-controls`"))
            }
            return .success(nil)
        case .deviceToken:
            guard let given = authorization else {
                return .failure(refusal(request, 401, "unauthorized",
                                        "the Authorization header with the terminal's token (Bearer <token> from POST /v1/pos/auth-token) is missing",
                                        challenge: "Bearer"))
            }
            let parts = given.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                return .failure(refusal(request, 401, "unauthorized",
                                        "the Authorization header must be Bearer <token> (a terminal's token, not the API key)",
                                        challenge: "Bearer"))
            }
            switch gateway.verifyToken(String(parts[1])) {
            case .valid(let claims):
                return .success(claims)
            case .expired:
                return .failure(refusal(request, 401, "tokenExpired",
                                        "the terminal's token has expired: get a new one (POST /v1/pos/auth-token)",
                                        challenge: "Bearer"))
            case .invalid(let reason):
                return .failure(refusal(request, 401, "unauthorized", "the terminal's token is not valid: \(reason)",
                                        challenge: "Bearer"))
            }
        case .dashboard:
            if let given = authorization {
                guard Self.constantTimeEqual(Array(given.utf8), Array(apiKey.utf8)) else {
                    return .failure(refusal(request, 401, "unauthorized", "the API key is not valid", challenge: "ApiKey"))
                }
                return .success(nil)
            }
            if let key = request.queryValue("key") {
                guard Self.constantTimeEqual(Array(key.utf8), Array(apiKey.utf8)) else {
                    return .failure(refusal(request, 401, "unauthorized",
                                            "the key in the dashboard's URL is not valid: open the URL `tapemu gateway serve` printed"))
                }
                // The key leaves the address bar (and history) at once; the cookie carries the session.
                let r = HTTPResponse(status: 303, headers: [
                    ("Location", request.path),
                    ("Set-Cookie", "\(Self.dashboardCookie)=\(dashboardSession); Path=/; HttpOnly; SameSite=Strict"),
                    ("Cache-Control", "no-store"), ("Referrer-Policy", "no-referrer"),
                ], body: [])
                return .failure(RouteRefusal(r))
            }
            guard let cookie = Self.cookie(Self.dashboardCookie, in: request),
                  Self.constantTimeEqual(Array(cookie.utf8), Array(dashboardSession.utf8)) else {
                return .failure(refusal(request, 401, "unauthorized",
                                        "the dashboard needs its session: open the URL `tapemu gateway serve` printed (it carries the key once), or send the API key in Authorization"))
            }
            if let site = request.header("Sec-Fetch-Site")?.lowercased(), site != "same-origin", site != "none" {
                return .failure(refusal(request, 403, "forbidden",
                                        "the dashboard answers its own pages only (Sec-Fetch-Site: \(site.prefix(32)))"))
            }
            // An action (a refund, a reversal) with the cookie: the page's own origin, said by the
            // browser in Origin (every browser sends it on a POST). SameSite=Strict already keeps
            // the cookie off other sites' requests; this also refuses a page of another port of
            // the same host (same site, not same origin) and a browser that sends no
            // Sec-Fetch-Site.
            if request.method != "GET" && request.method != "HEAD" {
                let host = request.header("Host") ?? ""
                guard let origin = request.header("Origin"), !host.isEmpty,
                      origin == "http://\(host)" || origin == "https://\(host)" else {
                    return .failure(refusal(request, 403, "forbidden",
                                            "a dashboard action needs the dashboard page's own Origin (got \(request.header("Origin").map { String($0.prefix(64)) } ?? "none"))"))
                }
            }
            return .success(nil)
        }
    }

    /// The value of cookie `name` in the request's `Cookie` header(s).
    static func cookie(_ name: String, in request: HTTPRequest) -> String? {
        for (field, value) in request.headers where field.lowercased() == "cookie" {
            for pair in value.split(separator: ";") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                if kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces) == name {
                    return kv[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    private func refusal(_ request: HTTPRequest, _ status: Int, _ code: String, _ message: String,
                         challenge: String? = nil) -> RouteRefusal {
        var r = Wire.errorResponse(status: status, code: code, message: message, requestId: request.requestId)
        if let challenge { r.headers.append(("WWW-Authenticate", challenge)) }
        return RouteRefusal(r)
    }

    // MARK: Own orders

    /// Refuses (403) when `orderId` is not `claims`' terminal's: another terminal sent it, or
    /// payments of it exist that no terminal sent. An order nobody sent is nobody's: nothing to
    /// refuse (a lookup finds nothing).
    func requireOwn(_ orderId: String, _ claims: TokenClaims) async throws(RouteError) {
        let ledger = gateway.ledger
        let owner = try await call { () async throws(GatewayError) in try ledger.orderTerminal(orderId) }
        if owner == claims.terminal { return }
        if owner != nil { throw Self.notYours(orderId) }
        let rows = try await call { () async throws(GatewayError) in try ledger.payments(orderId: orderId) }
        if !rows.isEmpty {
            throw RouteError(403, "forbidden", "order \(orderId.prefix(64)) was not sent by a terminal; the merchant API acts on it")
        }
    }

    /// Refuses (403) a terminal's authorisation of an order that is not its to send — another
    /// terminal sent it, or payments of it exist that no terminal sent — before the gateway's
    /// other checks, by reading only. The claim itself is written with the sale, in its savepoint
    /// of the group commit (``TerminalClaim``), which refuses the same way an order another
    /// terminal claimed since this read.
    func requireClaimable(_ orderId: String, _ claims: TokenClaims) async throws(RouteError) {
        let ledger = gateway.ledger
        let terminal = claims.terminal
        let found = try await call { () async throws(GatewayError) -> OrderClaim? in
            // Payments first, then the claim: a claim commits with its sale (never after it), so
            // a sale this first read sees has its claim in the second read — payments without a
            // claim there are truly nobody's, not another server's sale committed in between.
            let paid = try !ledger.payments(orderId: orderId).isEmpty
            if let owner = try ledger.orderTerminal(orderId) { return owner == terminal ? .mine : .otherTerminal }
            return paid ? .unowned : nil
        }
        if let refusal = found?.refusal(of: orderId) { throw RouteError(refusal) }
    }

    /// The transaction `uniqueRef` must be of the terminal's own order (an unknown one goes on
    /// to the gateway's own 404).
    func requireOwnTransaction(_ uniqueRef: String, _ claims: TokenClaims) async throws(RouteError) {
        let ledger = gateway.ledger
        guard let p = try await call({ () async throws(GatewayError) in try ledger.payment(uniqueRef: uniqueRef) }) else { return }
        try await requireOwn(p.orderId, claims)
    }

    /// Which of `orderIds` are the terminal's own.
    func ownOrders(_ orderIds: Set<String>, _ claims: TokenClaims) async throws(RouteError) -> Set<String> {
        let ledger = gateway.ledger
        var own: Set<String> = []
        for o in orderIds where try await call({ () async throws(GatewayError) in try ledger.orderTerminal(o) }) == claims.terminal {
            own.insert(o)
        }
        return own
    }

    /// A request naming an account must name the token's (403 otherwise).
    static func requireAccount(_ accountId: String, _ claims: TokenClaims) throws(RouteError) {
        guard accountId == claims.accountId else {
            throw RouteError(403, "forbidden", "the terminal's token is for another account than \(accountId.prefix(64))")
        }
    }

    static func notYours(_ orderId: String) -> RouteError {
        RouteError(403, "forbidden", "order \(orderId.prefix(64)) was sent by another terminal; a terminal acts on its own orders only")
    }
}
