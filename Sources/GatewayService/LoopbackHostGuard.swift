import Foundation
public import HTTPServer
#if canImport(Glibc)
import Glibc
#endif

/// What a server listening on loopback answers: requests addressed to a loopback name only.
///
/// A web page can point a DNS name of its own at 127.0.0.1 once it is loaded (DNS rebinding);
/// its scripts then reach the port as a page of the same origin — JSON bodies, custom headers and
/// all, past ``HTTPRequest``'s Content-Type rule — but every request carries the page's name in
/// `Host`. So a request whose `Host` is not `127.x.x.x`, `localhost` or `[::1]` (any port) is
/// answered 421 and nothing is done. A request without `Host` (HTTP/1.0; no browser sends one)
/// passes.
public struct LoopbackHostGuard: HTTPHandler {
    public let inner: any HTTPHandler

    public init(inner: any HTTPHandler) { self.inner = inner }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        if let host = request.header("Host"), !Self.isLoopback(host: host) { return refusal(host, request) }
        return await inner.handle(request)
    }

    private func refusal(_ host: String, _ request: HTTPRequest) -> HTTPResponse {
        let shown = host.unicodeScalars.count > 64 ? String(String.UnicodeScalarView(host.unicodeScalars.prefix(64))) + "…" : host
        return Wire.errorResponse(
            status: 421, code: "misdirectedRequest",
            message: "this server listens on loopback and answers requests addressed to 127.0.0.1, localhost "
                + "or [::1] only, not to '\(shown)' (a guard against web pages that rebind their name to this machine)",
            requestId: request.requestId)
    }

    /// The refusal of a foreign `Host` at once, else the inner handler's immediate answer.
    public func immediateAnswer(to request: HTTPRequest) -> HTTPResponse? {
        if let host = request.header("Host"), !Self.isLoopback(host: host) { return refusal(host, request) }
        return inner.immediateAnswer(to: request)
    }

    /// Whether a host — a `Host` header, or an address to listen on — names this machine's
    /// loopback: `localhost`, `127.x.x.x`, `[::1]` or `::1`, with or without a port, in any case.
    public static func isLoopback(host header: String) -> Bool {
        var name = header.trimmingCharacters(in: .whitespaces).lowercased()
        if name == "::1" { return true }
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            let rest = name[name.index(after: close)...]
            guard rest.isEmpty || (rest.first == ":" && rest.dropFirst().allSatisfy(\.isASCII) && rest.dropFirst().allSatisfy(\.isNumber)) else {
                return false
            }
            return name[name.index(after: name.startIndex)..<close] == "::1"
        }
        if let colon = name.lastIndex(of: ":") {
            let port = name[name.index(after: colon)...]
            guard port.allSatisfy({ $0.isASCII && $0.isNumber }) else { return false }
            name = String(name[..<colon])
        }
        if name.hasSuffix(".") { name.removeLast() }
        if name == "localhost" { return true }
        var address = in_addr()
        guard inet_pton(AF_INET, name, &address) == 1 else { return false }
        return UInt32(bigEndian: address.s_addr) >> 24 == 127
    }
}
