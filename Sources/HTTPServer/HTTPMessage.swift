import Foundation

/// The HTTP messages the gateway service handles, independent of the server library
/// (libmicrohttpd lives behind ``HTTPServer``; handlers never see it).

/// A request, fully read (bodies are bounded by the server's limits before a handler runs).
public struct HTTPRequest: Sendable {
    /// Upper-case method: `GET`, `POST`, …
    public var method: String
    /// The decoded path without the query string: `/v1/payments/pay_123`.
    public var path: String
    /// The query items in order (decoded); a repeated name appears several times.
    public var query: [(name: String, value: String)]
    /// Header fields in order; look them up with ``header(_:)`` (case-insensitive).
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The `X-Request-Id` the server gives this request (echoed on the answer).
    public var requestId: String

    public init(method: String, path: String, query: [(name: String, value: String)] = [],
                headers: [(name: String, value: String)] = [], body: [UInt8] = [], requestId: String = "") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.requestId = requestId
    }

    /// The first header field with this name, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { Self.sameFieldName($0.name, name) }?.value
    }

    /// Whether two header field names are the same (ASCII case-insensitive, as field names are
    /// tokens), without making lower-case copies of either.
    public static func sameFieldName(_ a: String, _ b: String) -> Bool {
        var i = a.utf8.makeIterator(), j = b.utf8.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil): return true
            case let (x?, y?):
                if x == y { continue }
                let lx = (0x41...0x5A).contains(x) ? x | 0x20 : x, ly = (0x41...0x5A).contains(y) ? y | 0x20 : y
                if lx != ly { return false }
            default: return false
            }
        }
    }

    /// Whether the body came as `application/json` or `application/<something>+json` (any case,
    /// parameters allowed): the one type every JSON route of the gateway takes (415 otherwise).
    /// A web page can make a browser POST across sites without asking first only as text/plain,
    /// a form or untyped, so a route that needs this cannot be driven by such a page.
    public var hasJSONContentType: Bool { Self.isJSONContentType(header("Content-Type")) }

    /// See ``hasJSONContentType``.
    public static func isJSONContentType(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = contentType.split(separator: ";", maxSplits: 1).first.map { withoutOWS($0).lowercased() } ?? ""
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
    }

    /// `text` without the spaces and tabs at either end (HTTP's optional whitespace around a
    /// field value or parameter). On the bytes: Foundation's `trimmingCharacters(in:)` cost more
    /// than the rest of a request's header checks (perf, issue 38).
    static func withoutOWS(_ text: Substring) -> String {
        let bytes = text.utf8
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
              let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    /// The first query item with this name.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }
}

/// An answer, or on purpose no proper answer (network faults the gateway injects).
public struct HTTPResponse: Sendable {
    /// How the answer reaches the client.
    public enum Delivery: Sendable, Hashable {
        /// Status line, headers and the whole body.
        case complete
        /// The connection is closed without a status line: the client sees a reset/empty reply.
        case closeWithoutAnswer
        /// Status line, headers (with the full Content-Length) and only the first `bytes` of the
        /// body; then the connection stalls until the server's connection timeout closes it.
        case stallMidBody(afterBytes: Int)
    }

    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public var delivery: Delivery

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
                delivery: Delivery = .complete) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delivery = delivery
    }
}

/// What serves requests. Called on any thread; answers every request (errors are responses).
public protocol HTTPHandler: Sendable {
    func handle(_ request: HTTPRequest) async -> HTTPResponse
    /// The executor the server starts each request's task on (nil: Swift's global one). A
    /// handler whose work runs on its own threads anyway (a ledger's) names them here: the
    /// request then starts there, without a hop through the cooperative pool first.
    var preferredExecutor: (any TaskExecutor)? { get }
    /// The answer to `request` when it needs no waiting at all — no ledger, no I/O, no lock
    /// held for long (`GET /health`, a refusal decided from the request alone) — given at once
    /// on the server's polling thread, without a task and without suspending the connection;
    /// nil: the server runs ``handle(_:)`` as a task. When it answers, it answers exactly as
    /// ``handle(_:)`` would.
    func immediateAnswer(to request: HTTPRequest) -> HTTPResponse?
}

extension HTTPHandler {
    public var preferredExecutor: (any TaskExecutor)? { nil }
    public func immediateAnswer(to request: HTTPRequest) -> HTTPResponse? { nil }
}

extension HTTPResponse {
    /// MONEI's name of an error status: its reason phrase without spaces, ending in `Error`
    /// (`BadRequestError`, `UnauthorizedError`, `NotFoundError`, `UnprocessableEntityError`,
    /// `InternalServerError`, `ServiceUnavailableError`, as MONEI's OpenAPI document names them).
    public static func errorName(_ status: Int) -> String {
        let name = HTTPStatus.reason(status).split(separator: " ").joined()
        return name.hasSuffix("Error") ? name : name + "Error"
    }

    /// An error in the one shape every route of `tapemu gateway serve` answers with (docs/GATEWAY.md,
    /// "The gateway over the network"), and the server itself for what it refuses before a handler:
    /// `{"status":"BadRequestError","statusCode":400,"message":…,"code":…,"requestId":…,"requestTime":…}`
    /// (keys sorted; `code` and `requestId` left out when nil or empty): MONEI's `ApiException`
    /// (its OpenAPI document; the official SDK's `BadRequestError`, `UnauthorizedError`, …),
    /// whose `status` is the error's name (``errorName(_:)``). tapemu adds `code`.
    public static func jsonError(status: Int, code: String?, message: String, requestId: String) -> HTTPResponse {
        struct Body: Encodable {
            var status: String
            var statusCode: Int
            var message: String
            var code: String?
            var requestId: String?
            var requestTime: String
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = Body(status: errorName(status), statusCode: status, message: message, code: code,
                        requestId: requestId.isEmpty ? nil : requestId, requestTime: Date().formatted(.iso8601))
        let data = (try? encoder.encode(body)) ?? Data("{}".utf8)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: Array(data))
    }
}
