public import HTTPServer
public import PaymentGateway
import Timing

/// What a route takes before its handler runs: the one column of ``Router``'s table that
/// decides who may call it (docs/GATEWAY.md's API table lists it per route; the security suite is
/// generated from ``Router/table``).
public enum RouteCredential: String, Sendable, Hashable, CaseIterable {
    /// Open to anyone: reads no payment and moves no money (`/health`, the SDK version check,
    /// a token's own validation).
    case none
    /// The merchant API key in `Authorization` (as MONEI's API takes it): merchant REST,
    /// GraphQL, admin, the POS auth token.
    case apiKey
    /// A terminal's token in `Authorization: Bearer <token>` (from `POST /v1/pos/auth-token`),
    /// valid and unexpired; the handler acts only on that terminal's own orders.
    case deviceToken
    /// The dashboard's session cookie (HttpOnly, SameSite=Strict; set by opening the URL
    /// `gateway serve` prints, which carries the key once) or the API key in `Authorization`.
    case dashboard
    /// The merchant API key, on a gateway whose operator enabled its test controls
    /// (`gateway serve --test-controls`, ``GatewayService/testControls``): without the key 401 as
    /// ``apiKey``; with it, on a gateway without them, 403 `testControlsOff`.
    case testControls
}

/// A matched route's path parameters and, on a ``RouteCredential/deviceToken`` route, the
/// claims of the terminal's token.
public struct RouteMatch: Sendable {
    public var parameters: [String: String]
    /// The verified token's claims (``RouteCredential/deviceToken`` routes only).
    public var claims: TokenClaims?

    public init(parameters: [String: String] = [:], claims: TokenClaims? = nil) {
        self.parameters = parameters
        self.claims = claims
    }

    public subscript(name: String) -> String? { parameters[name] }
}

/// Checks a request's credential for a route (``GatewayService`` is the one implementation):
/// the claims to hand on, or the refusal to answer.
public protocol RouteAuthenticator: Sendable {
    func authenticate(_ request: HTTPRequest, for credential: RouteCredential) -> Result<TokenClaims?, RouteRefusal>
}

/// A request refused for its credential (401, 403) or redirected once it gave one (303).
public struct RouteRefusal: Error, Sendable {
    public var response: HTTPResponse
    public init(_ response: HTTPResponse) { self.response = response }
}

/// Routes requests by method and path pattern to handlers; checks each route's credential
/// first; answers 404 / 405 in the JSON error shape, and stamps `X-Request-Id` (the server adds
/// it too; handlers get it in the request).
///
/// A pattern is a path whose segments are literal or `{name}` (one segment, any text); a
/// pattern ending in `/*` matches everything under it (for mounting another handler:
/// `router.mount("/graphql", .apiKey, handler)`).
public struct Router: HTTPHandler {
    public typealias Handle = @Sendable (HTTPRequest, _ match: RouteMatch) async -> HTTPResponse

    /// Requests start on the ledger's threads (``Timing/BlockingExecutor/ledger``), where their
    /// ledger calls run anyway: one hop from libmicrohttpd's thread instead of two.
    public var preferredExecutor: (any TaskExecutor)? { BlockingExecutor.ledger }

    /// One row of the table: what ``table`` lists.
    public struct Entry: Sendable, Hashable, CustomStringConvertible {
        /// nil: every method (a mounted handler).
        public var method: String?
        public var pattern: String
        public var credential: RouteCredential
        public var description: String { "\(method ?? "*") \(pattern) [\(credential.rawValue)]" }
    }

    struct Route: Sendable {
        var entry: Entry
        var segments: [String]
        var prefix: Bool
        var handle: Handle
        /// A route that never waits (``addImmediate(_:_:_:_:)``): its answer at once.
        var immediate: (@Sendable (HTTPRequest, RouteMatch) -> HTTPResponse)? = nil
    }

    private(set) var routes: [Route] = []
    let authenticator: any RouteAuthenticator

    public init(authenticator: any RouteAuthenticator) {
        self.authenticator = authenticator
    }

    /// Every route with its credential, in the order they match.
    public var table: [Entry] { routes.map(\.entry) }

    /// Adds a route; the first matching route wins, in the order they were added.
    public mutating func add(_ method: String, _ pattern: String, _ credential: RouteCredential,
                             _ handle: @escaping Handle) {
        let (segments, prefix) = Self.parse(pattern)
        routes.append(Route(entry: Entry(method: method.uppercased(), pattern: pattern, credential: credential),
                            segments: segments, prefix: prefix, handle: handle))
    }

    /// Adds a route whose handler never waits — no ledger, no I/O (`GET /health`): the server
    /// answers it on its polling thread (``HTTPHandler/immediateAnswer(to:)``), without a task.
    public mutating func addImmediate(_ method: String, _ pattern: String, _ credential: RouteCredential,
                                      _ answer: @escaping @Sendable (HTTPRequest, RouteMatch) -> HTTPResponse) {
        add(method, pattern, credential) { request, match in answer(request, match) }
        routes[routes.count - 1].immediate = answer
    }

    /// Mounts another handler at `pattern` for every method (its requests arrive unchanged,
    /// once their credential passed).
    public mutating func mount(_ pattern: String, _ credential: RouteCredential, _ handler: any HTTPHandler) {
        let (segments, prefix) = Self.parse(pattern)
        routes.append(Route(entry: Entry(method: nil, pattern: pattern, credential: credential),
                            segments: segments, prefix: prefix, handle: { request, _ in
            await handler.handle(request)
        }))
    }

    private static func parse(_ pattern: String) -> ([String], Bool) {
        var segments = split(pattern)
        if segments.last == "*" {
            segments.removeLast()
            return (segments, true)
        }
        return (segments, false)
    }

    static func split(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }

    private static func match(_ route: Route, _ path: [String]) -> [String: String]? {
        if route.prefix ? path.count < route.segments.count : path.count != route.segments.count { return nil }
        var parameters: [String: String] = [:]
        for (pattern, segment) in zip(route.segments, path) {
            if pattern.hasPrefix("{") && pattern.hasSuffix("}") {
                parameters[String(pattern.dropFirst().dropLast())] = segment
            } else if pattern != segment {
                return nil
            }
        }
        return parameters
    }

    /// The first route that takes `request` (method and path), with its path parameters; else
    /// the methods the path's routes allow.
    private func route(for request: HTTPRequest) -> (found: (Route, [String: String])?, allowed: [String]) {
        let path = Self.split(request.path)
        let method = request.method.uppercased()
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.match(route, path) else { continue }
            if let m = route.entry.method, m != method {
                if !(m == "GET" && method == "HEAD") {
                    allowed.append(m)
                    continue
                }
            }
            return ((route, parameters), allowed)
        }
        return (nil, allowed)
    }

    /// The answer of a route added with ``addImmediate(_:_:_:_:)`` (its credential checked first,
    /// as ``handle(_:)`` does); nil for every other request, which ``handle(_:)`` answers.
    public func immediateAnswer(to request: HTTPRequest) -> HTTPResponse? {
        guard let (route, parameters) = route(for: request).found, let immediate = route.immediate else { return nil }
        switch authenticator.authenticate(request, for: route.entry.credential) {
        case .success(let claims): return immediate(request, RouteMatch(parameters: parameters, claims: claims))
        case .failure(let refusal): return refusal.response
        }
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let (found, allowed) = route(for: request)
        if let (route, parameters) = found {
            switch authenticator.authenticate(request, for: route.entry.credential) {
            case .success(let claims):
                return await route.handle(request, RouteMatch(parameters: parameters, claims: claims))
            case .failure(let refusal):
                return refusal.response
            }
        }
        if !allowed.isEmpty {
            var r = Wire.errorResponse(status: 405, code: "methodNotAllowed",
                                       message: "\(request.method) is not allowed on \(request.path); use \(allowed.joined(separator: ", "))",
                                       requestId: request.requestId)
            r.headers.append(("Allow", allowed.joined(separator: ", ")))
            return r
        }
        return Wire.errorResponse(status: 404, code: "notFound", message: "no route for \(request.method) \(request.path)",
                                  requestId: request.requestId)
    }
}
