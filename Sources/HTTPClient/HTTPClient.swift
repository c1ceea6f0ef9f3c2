import CCurl
public import Foundation
import Synchronization

/// A request for ``HTTPClient``.
public struct HTTPClientRequest: Sendable {
    public var method: String
    /// An absolute `http://` or `https://` URL (the scheme in any case).
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The whole exchange (connect, send, receive) must end within this; nil: the client's default.
    public var timeout: Duration?
    /// At most this many bytes of the answer's body are kept (the rest is read and dropped);
    /// nil: all of it. For a caller that needs the status only, against a peer that answers
    /// without end.
    public var maxResponseBodyBytes: Int?
    /// Whether the server may receive this request twice with no other effect than once (a GET;
    /// an authorisation, by its orderId). Only such a request goes over a kept connection, where
    /// libcurl sends it again on a fresh one when the kept one dies under it; any other goes
    /// over a fresh connection of its own, closed after it. Default: true for GET and HEAD.
    public var idempotent: Bool

    public init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [],
                body: [UInt8] = [], timeout: Duration? = nil, maxResponseBodyBytes: Int? = nil,
                idempotent: Bool? = nil) {
        self.idempotent = idempotent ?? ["GET", "HEAD"].contains(method.uppercased())
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maxResponseBodyBytes = maxResponseBodyBytes
    }
}

/// A complete answer (any status).
public struct HTTPClientResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    /// The first header field with this name, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// Why an exchange gave no complete answer. The kinds split on whether the request may have
/// reached the server: only ``Kind/couldNotConnect`` (and ``Kind/invalidRequest``) prove it
/// never left.
public struct HTTPClientError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// Refused, no route, unknown host, or the connect did not finish in time: no byte of
        /// the request left.
        case couldNotConnect
        /// The connection was reset or closed before any answer came (the request may have been
        /// received and handled).
        case connectionClosed
        /// No complete answer within the timeout, after the connection was made.
        case timedOut
        /// A status line and headers came, then the connection ended before the whole body.
        case answerCutShort
        /// What came back is not HTTP.
        case badAnswer
        /// The caller's task was cancelled while the exchange was under way.
        case cancelled
        /// The request itself is unusable (bad URL…); nothing was sent.
        case invalidRequest
    }

    public var kind: Kind
    public var reason: String
    /// The status of a cut-short answer, when one came.
    public var status: Int?

    public init(_ kind: Kind, _ reason: String, status: Int? = nil) {
        self.kind = kind
        self.reason = reason
        self.status = status
    }

    /// False only when the request provably never left this process.
    public var requestMayHaveLeft: Bool { kind != .couldNotConnect && kind != .invalidRequest }

    public var description: String { "\(kind.rawValue): \(reason)" }
}

/// An async HTTP/1.1 client over libcurl (the only module that imports it).
///
/// Each exchange runs a curl easy handle on a thread of its own (curl_easy_perform blocks), so
/// the caller's task suspends and no thread of Swift's cooperative pool ever blocks. Proxies
/// from the environment are ignored (tapemu talks to the gateway directly).
///
/// Connections are kept: the easy handles (and the connections each one caches) are shared
/// by every ``HTTPClientRequest/idempotent`` request of one client and its copies (keep one
/// client per process or per peer); an exchange that ended in an error
/// drops its handle and the connections it held. On a kept connection that died, libcurl may
/// send the request again on a fresh connection — so an exchange never
/// reports ``HTTPClientError/Kind/couldNotConnect`` ("never left") once a byte of the request
/// was written — the first try may have reached the server before the connection died (see
/// README, "Kept connections").
public struct HTTPClient: Sendable {
    /// The timeout of requests that do not give one.
    public var defaultTimeout: Duration
    /// The CA certificates (a PEM file) an `https://` server's certificate must chain to; nil:
    /// the system's. The server's name is always checked against its certificate.
    public var caCertificateFile: String?

    /// The idle handles of this client and its copies.
    let pool = HandlePool()

    public init(defaultTimeout: Duration = .seconds(30), caCertificateFile: String? = nil) {
        self.defaultTimeout = defaultTimeout
        self.caCertificateFile = caCertificateFile
        _ = Self.globalInit
    }

    private static let globalInit: Bool = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK }()

    /// Sends `request` and returns the complete answer, whatever its status.
    public func send(_ request: HTTPClientRequest) async throws(HTTPClientError) -> HTTPClientResponse {
        let exchange = Exchange(request: request, timeout: request.timeout ?? defaultTimeout, caFile: caCertificateFile,
                                pool: pool)
        let result: Result<HTTPClientResponse, HTTPClientError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Result<HTTPClientResponse, HTTPClientError>, Never>) in
                ExchangeThreads.shared.run { c.resume(returning: exchange.perform()) }
            }
        } onCancel: {
            exchange.cancelled.store(true, ordering: .relaxed)
        }
        return try result.get()
    }
}

/// The threads exchanges block on: an idle one takes the next exchange, else a new one starts
/// (never a queue: every exchange has a thread of its own at once, as with a thread each); a
/// thread idle for `idleLife` ends. Saves a thread's start and end per request.
final class ExchangeThreads: @unchecked Sendable {
    static let shared = ExchangeThreads()
    static let idleLife: TimeInterval = 10
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var idle = 0

    func run(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        if idle > jobs.count {
            jobs.append(job)
            condition.signal()
            condition.unlock()
            return
        }
        condition.unlock()
        let thread = Thread { [self] in
            job()
            serve()
        }
        thread.stackSize = 256 * 1024
        thread.start()
    }

    private func serve() {
        condition.lock()
        defer { condition.unlock() }
        while true {
            idle += 1
            let deadline = Date(timeIntervalSinceNow: Self.idleLife)
            while jobs.isEmpty {
                if !condition.wait(until: deadline) && jobs.isEmpty {
                    idle -= 1
                    return
                }
            }
            idle -= 1
            let job = jobs.removeFirst()
            condition.unlock()
            job()
            condition.lock()
        }
    }
}

/// A client's idle curl easy handles, each with the connections it keeps open. At most
/// `limit` idle handles are kept; more are cleaned up (with their connections), and all of them
/// when the last copy of the client goes.
final class HandlePool: Sendable {
    static let limit = 64
    /// The handles' addresses (a raw pointer is not Sendable).
    private let idle = Mutex<[UInt]>([])

    func take() -> UnsafeMutableRawPointer? {
        idle.withLock { $0.popLast() }.flatMap { UnsafeMutableRawPointer(bitPattern: $0) }
    }

    func give(_ h: UnsafeMutableRawPointer) {
        let kept = idle.withLock { list -> Bool in
            guard list.count < Self.limit else { return false }
            list.append(UInt(bitPattern: h))
            return true
        }
        if !kept { curl_easy_cleanup(h) }
    }

    deinit {
        for h in idle.withLock({ $0 }) { curl_easy_cleanup(UnsafeMutableRawPointer(bitPattern: h)) }
    }
}

/// One exchange's state, touched by curl's callbacks on the exchange's thread.
final class Exchange: @unchecked Sendable {
    let request: HTTPClientRequest
    let timeout: Duration
    let caFile: String?
    let cancelled = Atomic<Bool>(false)
    var body: [UInt8] = []
    var headerLines: [String] = []

    let pool: HandlePool

    init(request: HTTPClientRequest, timeout: Duration, caFile: String? = nil, pool: HandlePool) {
        self.request = request
        self.timeout = timeout
        self.caFile = caFile
        self.pool = pool
    }

    /// A URL for an error message, which ends up in logs: without its query, fragment or user
    /// information, where a merchant's callbackUrl may carry a secret token.
    static func shown(_ url: String) -> String {
        var shown = url
        if let cut = shown.firstIndex(where: { $0 == "?" || $0 == "#" }) { shown = String(shown[..<cut]) + "?…" }
        if let scheme = shown.range(of: "://"), let at = shown[scheme.upperBound...].firstIndex(of: "@"),
           !shown[scheme.upperBound..<at].contains("/") {
            shown = String(shown[..<scheme.upperBound]) + "…@" + shown[shown.index(after: at)...]
        }
        return shown
    }

    func perform() -> Result<HTTPClientResponse, HTTPClientError> {
        // The scheme in any case (RFC 3986 §3.1), as CallbackURL and RemoteGateway.validate take
        // it: a payment recorded with `HTTP://…` as its callbackUrl must get its webhook.
        let scheme = request.url.prefix { $0 != ":" }.lowercased()
        guard scheme == "http" || scheme == "https", request.url.dropFirst(scheme.count).hasPrefix("://") else {
            return .failure(HTTPClientError(.invalidRequest, "not an http URL: \(Self.shown(request.url))"))
        }
        let pooled = pool.take()
        guard let h = pooled ?? curl_easy_init() else {
            return .failure(HTTPClientError(.invalidRequest, "libcurl could not make a handle"))
        }
        let kept = pooled != nil
        var succeeded = false
        defer {
            // A handle whose exchange failed goes with its connections: a fault on one
            // connection never leaks into the next exchange.
            if succeeded { pool.give(h) } else { curl_easy_cleanup(h) }
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        var list: UnsafeMutablePointer<curl_slist>? = nil
        defer { curl_slist_free_all(list) }
        for (name, value) in request.headers { list = curl_slist_append(list, "\(name): \(value)") }
        // No "Expect: 100-continue" round trip.
        list = curl_slist_append(list, "Expect:")
        let ms = max(1, Int(timeout.components.seconds) * 1000 + Int(timeout.components.attoseconds / 1_000_000_000_000_000))

        // A kept handle: its options from the last exchange cleared, its connections kept.
        if kept { curl_easy_reset(h) }
        _ = tapemu_curl_setopt_string(h, CURLOPT_URL, request.url)
        _ = tapemu_curl_setopt_string(h, CURLOPT_PROXY, "")
        _ = tapemu_curl_setopt_long(h, CURLOPT_NOSIGNAL, 1)
        if !request.idempotent {
            // Never over a kept connection, so never sent twice by libcurl.
            _ = tapemu_curl_setopt_long(h, CURLOPT_FRESH_CONNECT, 1)
            _ = tapemu_curl_setopt_long(h, CURLOPT_FORBID_REUSE, 1)
        }
        _ = tapemu_curl_setopt_long(h, CURLOPT_TIMEOUT_MS, ms)
        _ = tapemu_curl_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, ms)
        _ = tapemu_curl_setopt_pointer(h, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list))
        _ = tapemu_curl_setopt_write(h, CURLOPT_WRITEFUNCTION, writeBody)
        _ = tapemu_curl_setopt_pointer(h, CURLOPT_WRITEDATA, me)
        _ = tapemu_curl_setopt_write(h, CURLOPT_HEADERFUNCTION, writeHeader)
        _ = tapemu_curl_setopt_pointer(h, CURLOPT_HEADERDATA, me)
        _ = tapemu_curl_setopt_long(h, CURLOPT_NOPROGRESS, 0)
        _ = tapemu_curl_setopt_xferinfo(h, progress)
        _ = tapemu_curl_setopt_pointer(h, CURLOPT_XFERINFODATA, me)
        // TLS: the peer's certificate and name are always verified (libcurl's defaults, set
        // again so no environment turns them off); --cacert names the CA to trust.
        _ = tapemu_curl_setopt_long(h, CURLOPT_SSL_VERIFYPEER, 1)
        _ = tapemu_curl_setopt_long(h, CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile { _ = tapemu_curl_setopt_string(h, CURLOPT_CAINFO, caFile) }
        let method = request.method.uppercased()
        if method == "HEAD" {
            _ = tapemu_curl_setopt_long(h, CURLOPT_NOBODY, 1)
        } else if method != "GET" || !request.body.isEmpty {
            _ = tapemu_curl_setopt_string(h, CURLOPT_CUSTOMREQUEST, method)
        }

        let code: CURLcode = request.body.withUnsafeBytes { raw in
            if !request.body.isEmpty || method == "POST" || method == "PUT" || method == "PATCH" {
                _ = tapemu_curl_setopt_offset(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(raw.count))
                _ = tapemu_curl_setopt_pointer(h, CURLOPT_POSTFIELDS,
                                               UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            }
            return curl_easy_perform(h)
        }
        var status = 0
        _ = tapemu_curl_getinfo_long(h, CURLINFO_RESPONSE_CODE, &status)
        if code == CURLE_OK {
            succeeded = true
            return .success(HTTPClientResponse(status: status, headers: parsedHeaders(), body: body))
        }
        let message = String(cString: curl_easy_strerror(code))
        var connectTime: curl_off_t = 0
        _ = tapemu_curl_getinfo_offset(h, CURLINFO_CONNECT_TIME_T, &connectTime)
        var sent: curl_off_t = 0
        _ = tapemu_curl_getinfo_offset(h, CURLINFO_SIZE_UPLOAD_T, &sent)
        // Bytes of the request written to a socket in this transfer, over every try: libcurl
        // sends again on a fresh connection when a kept one died under the request.
        var requestBytes = 0
        _ = tapemu_curl_getinfo_long(h, CURLINFO_REQUEST_SIZE, &requestBytes)
        let error: HTTPClientError
        switch code {
        case _ where requestBytes > 0 && (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST
                                           || code == CURLE_COULDNT_RESOLVE_PROXY || code == CURLE_PEER_FAILED_VERIFICATION
                                           || code == CURLE_SSL_CONNECT_ERROR):
            // A kept connection that died after the request went out makes libcurl connect
            // again; that connect failing says nothing about the first try.
            error = HTTPClientError(.connectionClosed, "a kept connection to \(Self.shown(request.url)) ended and a new one could not be made: \(message); the request may have left on the kept one")
        case CURLE_PEER_FAILED_VERIFICATION:
            // Refused before a byte of the request was sent.
            error = HTTPClientError(.couldNotConnect, "the TLS certificate of \(Self.shown(request.url)) is not trusted (\(message)); give the CA that signed it with --cacert FILE; the request never left")
        case CURLE_SSL_CACERT_BADFILE:
            error = HTTPClientError(.invalidRequest, "the CA file \(caFile ?? "(system)") cannot be read as PEM certificates (\(message)); nothing was sent")
        case CURLE_SSL_CONNECT_ERROR:
            error = HTTPClientError(.couldNotConnect, "the TLS handshake with \(Self.shown(request.url)) failed (\(message)); is it an https:// server? The request never left")
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            error = HTTPClientError(.couldNotConnect, "could not connect to \(Self.shown(request.url)): \(message); the request never left")
        case CURLE_ABORTED_BY_CALLBACK:
            error = HTTPClientError(.cancelled, "cancelled while the request was under way")
        case CURLE_OPERATION_TIMEDOUT where connectTime == 0 && requestBytes == 0:
            // (Over a kept connection there is no connect: the connect time is 0 there too, but
            // the request was written.)
            error = HTTPClientError(.couldNotConnect, "could not connect to \(Self.shown(request.url)) within \(timeout); the request never left")
        case CURLE_OPERATION_TIMEDOUT:
            error = HTTPClientError(.timedOut,
                                    status > 0 ? "the answer (HTTP \(status)) did not finish within \(timeout); \(body.count) byte(s) of its body came"
                                               : "no answer within \(timeout)", status: status > 0 ? status : nil)
        case CURLE_PARTIAL_FILE:
            error = HTTPClientError(.answerCutShort, "the connection ended after \(body.count) byte(s) of the HTTP \(status) answer's body", status: status)
        case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            if status > 0 {
                error = HTTPClientError(.answerCutShort, "the connection ended during the HTTP \(status) answer: \(message)", status: status)
            } else {
                error = HTTPClientError(.connectionClosed, "the connection was closed before an answer: \(message)")
            }
        case CURLE_WEIRD_SERVER_REPLY, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_CONTENT_ENCODING:
            error = HTTPClientError(.badAnswer, "not an HTTP answer: \(message)")
        case CURLE_URL_MALFORMAT:
            error = HTTPClientError(.invalidRequest, "bad URL \(Self.shown(request.url)): \(message)")
        default:
            error = status > 0 ? HTTPClientError(.answerCutShort, "\(message) during the HTTP \(status) answer", status: status)
                : HTTPClientError(.connectionClosed, "\(message) (curl error \(code.rawValue))")
        }
        return .failure(error)
    }

    private func parsedHeaders() -> [(name: String, value: String)] {
        // Only the last answer's headers (a 100 Continue comes before the real one).
        var out: [(name: String, value: String)] = []
        for line in headerLines {
            if line.hasPrefix("HTTP/") { out = []; continue }
            guard let colon = line.utf8.firstIndex(of: UInt8(ascii: ":")) else { continue }
            out.append((String(decoding: withoutOWS(line.utf8[..<colon]), as: UTF8.self),
                        String(decoding: withoutOWS(line.utf8[line.utf8.index(after: colon)...]), as: UTF8.self)))
        }
        return out
    }
}

private let writeBody: curl_write_callback = { ptr, size, count, user in
    let e = Unmanaged<Exchange>.fromOpaque(user!).takeUnretainedValue()
    let n = size * count
    let room = e.request.maxResponseBodyBytes.map { max(0, $0 - e.body.count) } ?? n
    if n > 0, room > 0, let ptr {
        ptr.withMemoryRebound(to: UInt8.self, capacity: n) {
            e.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: min(n, room)))
        }
    }
    return n   // all of it taken: the transfer goes on to its end; what is over the limit is dropped
}

private let writeHeader: curl_write_callback = { ptr, size, count, user in
    let e = Unmanaged<Exchange>.fromOpaque(user!).takeUnretainedValue()
    let n = size * count
    if n > 0, let ptr {
        let line = ptr.withMemoryRebound(to: UInt8.self, capacity: n) {
            String(decoding: withoutOWS(UnsafeBufferPointer(start: $0, count: n)), as: UTF8.self)
        }
        if !line.isEmpty { e.headerLines.append(line) }
    }
    return n
}

/// `bytes` without the spaces, tabs, CRs and LFs at either end: a header line, its field name or
/// its value as HTTP bounds them (optional whitespace, the line's CRLF). On the bytes: Foundation's
/// `trimmingCharacters(in:)` cost more than the rest of a header's work (perf, issue 38).
private func withoutOWS<C: BidirectionalCollection<UInt8>>(_ bytes: C) -> C.SubSequence {
    func ows(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
    guard let first = bytes.firstIndex(where: { !ows($0) }), let last = bytes.lastIndex(where: { !ows($0) }) else {
        return bytes[bytes.endIndex...]
    }
    return bytes[first...last]
}

private let progress: curl_xferinfo_callback = { user, _, _, _, _ in
    let e = Unmanaged<Exchange>.fromOpaque(user!).takeUnretainedValue()
    return e.cancelled.load(ordering: .relaxed) ? 1 : 0
}
