public import GatewayGraphQL
public import HTTPServer
import GraphQL
import Foundation

/// `GET|POST /graphql`: the `charges` query (``ChargesSchema``) over HTTP. Mount it at
/// `/graphql`; it answers whatever path it is given.
///
/// With an `apiKey`, a request whose `Authorization` header is not that key (compared in
/// constant time) is `401` — MONEI's GraphQL API takes the API key in that header.
public struct GraphQLHandler: HTTPHandler {
    public let service: GraphQLService
    public let apiKey: String?

    public init(service: GraphQLService, apiKey: String? = nil) {
        self.service = service
        self.apiKey = apiKey
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        if let apiKey, !WebAuth.matches(request.header("Authorization"), apiKey) {
            return JSONResponse.make(401, .object([("errors", .array([
                GraphQLError("missing or wrong API key in the Authorization header").json]))]), requestId: request.requestId)
        }
        // A POST's body is JSON, sent as such (GraphQL over HTTP: application/json): 415
        // otherwise, as every JSON route of the gateway — a text/plain or form POST is what a
        // page on another site can make a browser send without asking. A GET carries its query
        // in the query string (GraphQL over HTTP allows it for queries, never mutations) and has
        // no body to type.
        if request.method == "POST" && !request.hasJSONContentType {
            let given = request.header("Content-Type").map { "Content-Type: \($0)" } ?? "no Content-Type"
            return JSONResponse.make(415, .object([("errors", .array([
                GraphQLError("the body must be sent as Content-Type: application/json (the request has \(given))").json]))]),
                requestId: request.requestId)
        }
        let answer = service.respond(method: request.method, query: request.query, body: request.body)
        var response = JSONResponse.make(answer.status, answer.body, requestId: request.requestId)
        if let allow = answer.allow { response.headers.append(("Allow", allow)) }
        return response
    }
}

enum WebAuth {
    /// Constant time in the length of the expected key.
    static func matches(_ given: String?, _ expected: String) -> Bool {
        let a = Array((given ?? "").utf8), b = Array(expected.utf8)
        var diff = UInt8(a.count == b.count ? 0 : 1)
        for k in 0..<b.count { diff |= b[k] ^ (k < a.count ? a[k] : 0) }
        return diff == 0
    }
}

enum JSONResponse {
    /// An error in the gateway service's shape (``HTTPResponse/jsonError(status:code:message:requestId:)``),
    /// not cached.
    static func error(_ status: Int, code: String, _ message: String, requestId: String) -> HTTPResponse {
        var r = HTTPResponse.jsonError(status: status, code: code, message: message, requestId: requestId)
        r.headers.append(("Cache-Control", "no-store"))
        return r
    }

    static func make(_ status: Int, _ body: JSONValue, requestId: String) -> HTTPResponse {
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json; charset=utf-8"),
                                                        ("Cache-Control", "no-store")]
        if !requestId.isEmpty { headers.append(("X-Request-Id", requestId)) }
        return HTTPResponse(status: status, headers: headers, body: Array(body.serialized.utf8))
    }
}
