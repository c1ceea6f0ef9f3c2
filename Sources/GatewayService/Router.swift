public import HTTPServer

/// Routes requests by method and path pattern to handlers; answers 404 / 405 in the JSON error
/// shape, and stamps `X-Request-Id` (the server adds it too; handlers get it in the request).
///
/// A pattern is a path whose segments are literal or `{name}` (one segment, any text); a
/// pattern ending in `/*` matches everything under it (for mounting another handler:
/// `router.mount("/graphql", handler)` or `router.mount("/dashboard/*", handler)`).
public struct Router: HTTPHandler {
    public typealias Handle = @Sendable (HTTPRequest, _ parameters: [String: String]) async -> HTTPResponse

    struct Route: Sendable {
        var method: String?
        var segments: [String]
        var prefix: Bool
        var handle: Handle
    }

    private(set) var routes: [Route] = []

    public init() {}

    /// Adds a route; the first matching route wins, in the order they were added.
    public mutating func add(_ method: String, _ pattern: String, _ handle: @escaping Handle) {
        var segments = Self.split(pattern)
        var prefix = false
        if segments.last == "*" {
            segments.removeLast()
            prefix = true
        }
        routes.append(Route(method: method.uppercased(), segments: segments, prefix: prefix, handle: handle))
    }

    /// Mounts another handler at `pattern` for every method (its requests arrive unchanged).
    public mutating func mount(_ pattern: String, _ handler: any HTTPHandler) {
        var segments = Self.split(pattern)
        var prefix = false
        if segments.last == "*" {
            segments.removeLast()
            prefix = true
        }
        routes.append(Route(method: nil, segments: segments, prefix: prefix, handle: { request, _ in
            await handler.handle(request)
        }))
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

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let path = Self.split(request.path)
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.match(route, path) else { continue }
            if let m = route.method, m != request.method.uppercased() {
                if !(m == "GET" && request.method.uppercased() == "HEAD") {
                    allowed.append(m)
                    continue
                }
            }
            return await route.handle(request, parameters)
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
