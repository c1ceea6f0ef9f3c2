import CMicroHTTPD
public import Foundation
import Synchronization
import Timing

/// What an ``HTTPServer`` accepts and how long it waits.
public struct HTTPServerConfiguration: Sendable {
    /// The IPv4 address to listen on (`127.0.0.1` by default: loopback only; `0.0.0.0` for
    /// every interface). `localhost` means `127.0.0.1`.
    public var host: String
    /// The TCP port; 0 takes an ephemeral one (``HTTPServer/port`` says which).
    public var port: UInt16
    /// The largest request body; a bigger one gets `413` (before it is read, when the
    /// Content-Length says so).
    public var maxBodySize: Int
    /// The most header fields a request may carry; more gets `431`.
    public var maxHeaderCount: Int
    /// The memory a connection may use for the request line and headers (libmicrohttpd's
    /// per-connection pool): a request whose headers do not fit gets libmicrohttpd's own `431`.
    public var maxHeaderBytes: Int
    /// A connection idle this long (a slow client, a stalled answer) is closed.
    public var connectionTimeout: Duration
    /// The most connections held at once. Past it, the oldest connection still reading a request
    /// (idle or slow) is answered `503` with `Retry-After` and closed to make room; when every
    /// connection is handling a request, the newcomer gets that `503` (``ConnectionGuard``).
    public var maxConnections: Int
    /// The total time a request's headers and body may take to arrive, counted from the
    /// connection's accept (or from its previous answer): not restarted by each byte as
    /// ``connectionTimeout`` is. Past it: `408` and the connection is closed.
    public var requestTimeout: Duration
    /// The most connections from one client address (other than loopback, unless
    /// ``limitLoopbackPerAddress``); past it that address's oldest connection still reading a
    /// request is answered `503` with `Retry-After` and closed.
    public var maxConnectionsPerAddress: Int
    /// The `Retry-After` (seconds) of a `503` that sheds a connection.
    public var retryAfterSeconds: Int
    /// Whether ``maxConnectionsPerAddress`` also holds for loopback clients (off: every local
    /// process shares 127.0.0.1, where only the global limit keeps room).
    public var limitLoopbackPerAddress = false
    /// Serve HTTPS with this certificate and key (nil: plain HTTP).
    public var tls: HTTPServerTLS? = nil
    /// libmicrohttpd's polling threads (epoll, each with its share of the connections): the
    /// machine's cores, at most 4. Handlers run on Swift's tasks, not on these threads.
    public var threads = min(4, max(1, ProcessInfo.processInfo.activeProcessorCount))

    public init(host: String = "127.0.0.1", port: UInt16 = 0, maxBodySize: Int = 1 << 20,
                maxHeaderCount: Int = 64, maxHeaderBytes: Int = 32 * 1024,
                connectionTimeout: Duration = .seconds(10), maxConnections: Int = 512,
                requestTimeout: Duration = .seconds(10), maxConnectionsPerAddress: Int = 64,
                retryAfterSeconds: Int = 1) {
        self.host = host
        self.port = port
        self.maxBodySize = maxBodySize
        self.maxHeaderCount = maxHeaderCount
        self.maxHeaderBytes = maxHeaderBytes
        self.connectionTimeout = connectionTimeout
        self.maxConnections = maxConnections
        self.requestTimeout = requestTimeout
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.retryAfterSeconds = retryAfterSeconds
    }
}

/// The certificate (chain) and private key of an HTTPS server, as PEM text.
public struct HTTPServerTLS: Sendable {
    public var certificatePEM: String
    public var privateKeyPEM: String

    public init(certificatePEM: String, privateKeyPEM: String) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
    }

    /// Reads both PEM files; a file that cannot be read or holds no PEM block of its kind throws.
    public init(certificateFile: String, privateKeyFile: String) throws(HTTPServerError) {
        func read(_ path: String, _ what: String, _ marker: String) throws(HTTPServerError) -> String {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw HTTPServerError("cannot read the TLS \(what) \(path)")
            }
            let text = String(decoding: data, as: UTF8.self)
            guard text.contains("-----BEGIN ") && text.contains(marker) else {
                throw HTTPServerError("the TLS \(what) \(path) is not PEM (no -----BEGIN …\(marker) block)")
            }
            return text
        }
        certificatePEM = try read(certificateFile, "certificate", "CERTIFICATE-----")
        privateKeyPEM = try read(privateKeyFile, "key", "PRIVATE KEY-----")
    }

    /// Whether this machine's libmicrohttpd serves TLS at all.
    public static var isSupported: Bool { tapemu_mhd_supports_tls() != 0 }
}

/// Why a server could not start.
public struct HTTPServerError: Error, Hashable, Sendable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// An HTTP/1.1 server over libmicrohttpd that hands every request to an ``HTTPHandler``.
///
/// - Every answer the handler gives carries an `X-Request-Id` (the client's own, when it sent
///   a short token-like one; else a fresh random one). Limits: ``HTTPServerConfiguration``.
/// - The three ``HTTPResponse/Delivery`` modes are real network behaviour: `closeWithoutAnswer`
///   closes the TCP connection without a status line; `stallMidBody` sends the status line,
///   the headers with the full Content-Length and a part of the body, then sends nothing until
///   the connection timeout (or ``stop()``) closes the connection.
/// - ``stop()`` stops accepting, lets the requests under way finish, then returns.
///
/// Threads: libmicrohttpd polls every connection with epoll on a few threads of its own
/// (``HTTPServerConfiguration/threads``, one per core), not a thread per connection, so the
/// server's cost grows with cores, not with clients. Its callbacks run on those threads
/// (nonisolated; no actor). When a request is complete, its connection is suspended
/// (`MHD_suspend_connection`) and the handler starts as a `Task`; the handler's answer resumes
/// the connection, and libmicrohttpd's thread queues it. Nothing waits on a polling thread: a
/// slow handler holds its own connection only. A stalled answer suspends its connection the same
/// way after its first bytes, until the connection timeout or ``stop()`` resumes it to close it.
/// A connection is resumed exactly once (``Suspension``), and none is left suspended when the
/// daemon stops (libmicrohttpd forbids it).
public final class HTTPServer: Sendable {
    public let configuration: HTTPServerConfiguration
    private let core: ServerCore
    private let daemon: Mutex<DaemonHandle?>

    /// The port the server listens on (the ephemeral one when the configuration asked for 0).
    public let port: UInt16

    /// `http://HOST:PORT`, or `https://…` when it serves TLS.
    public var url: String {
        "\(configuration.tls == nil ? "http" : "https")://\(configuration.host == "0.0.0.0" ? "127.0.0.1" : configuration.host):\(port)"
    }

    /// Binds the address and starts serving `handler`.
    public init(configuration: HTTPServerConfiguration = HTTPServerConfiguration(),
                handler: any HTTPHandler) throws(HTTPServerError) {
        self.configuration = configuration
        let (ours, bound) = try Self.listen(host: configuration.host, port: configuration.port)
        port = bound
        // libmicrohttpd closes the listening socket it was given on some of its failures to start
        // (a TLS key that is not the certificate's, a thread it could not start) and not on others,
        // so it gets a copy of its own, and ours is closed here alone: closing a socket it had
        // already closed closed whatever another thread had opened under that number meanwhile.
        defer { close(ours) }
        let fd = fcntl(ours, F_DUPFD_CLOEXEC, 0)
        guard fd >= 0 else {
            throw HTTPServerError("cannot listen on \(configuration.host):\(bound): \(String(cString: strerror(errno)))")
        }
        core = ServerCore(handler: handler, configuration: configuration)
        // epoll, not select(): select() takes no descriptor at or above FD_SETSIZE (1024), and a
        // busy process — a ledger's files, webhook connections, a test run's many servers —
        // holds that many: the daemon then refused to start ("could not start"), or a
        // connection past it could not be served.
        let flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
        let timeout = max(1, UInt32(clamping: configuration.connectionTimeout.components.seconds))
        let cls = Unmanaged.passUnretained(core).toOpaque()
        let limit = max(1, configuration.maxConnections)
        let started: OpaquePointer?
        if let tls = configuration.tls {
            guard HTTPServerTLS.isSupported else {
                close(fd)
                throw HTTPServerError("this libmicrohttpd was built without TLS (MHD_FEATURE_TLS)")
            }
            started = tapemu_mhd_start_tls(flags, fd, accessHandler, cls, completedHandler, cls, timeout,
                                           max(4096, configuration.maxHeaderBytes),
                                           UInt32(clamping: limit + ConnectionGuard.headroom(limit)),
                                           UInt32(clamping: max(1, configuration.threads)),
                                           connectionNotice, cls, requestLineNotice, cls,
                                           tls.certificatePEM, tls.privateKeyPEM)
        } else {
            started = tapemu_mhd_start(flags, fd, accessHandler, cls, completedHandler, cls, timeout,
                                       max(4096, configuration.maxHeaderBytes),
                                       UInt32(clamping: limit + ConnectionGuard.headroom(limit)),
                                       UInt32(clamping: max(1, configuration.threads)),
                                       connectionNotice, cls, requestLineNotice, cls)
        }
        guard let d = started else {
            ListenSocket.closeCopy(fd, of: ours)
            throw HTTPServerError(configuration.tls == nil
                ? "libmicrohttpd could not start on \(configuration.host):\(bound)"
                : "libmicrohttpd could not start TLS on \(configuration.host):\(bound) (does the key match the certificate?)")
        }
        daemon = Mutex(DaemonHandle(daemon: d))
        core.connections.start()
    }

    deinit {
        if let d = daemon.withLock({ $0.take() }) {
            core.beginStopping()
            // Dropped without stop(): handlers still running lose their connections (closed
            // without an answer); libmicrohttpd must not stop with a connection suspended.
            core.resumeAllForStop()
            MHD_stop_daemon(d.daemon)
        }
        core.connections.stop()
    }

    /// Stops accepting connections, lets every request under way finish (a stalled answer ends
    /// at once), closes the connections, then returns. Calling it again does nothing.
    public func stop() async {
        guard let d = daemon.withLock({ $0.take() }) else { return }
        // The listening socket leaves libmicrohttpd's epoll sets; new connections are refused at
        // once (shutdown ends the listening), but the descriptor is closed only after
        // MHD_stop_daemon has joined the polling threads: a polling thread that saw the quiesce
        // late still removes it from its own epoll set, and a descriptor closed under it made
        // libmicrohttpd abort ("Failed to remove listen FD from epoll set", once in a full test run).
        let listenSocket = MHD_quiesce_daemon(d.daemon)
        if listenSocket >= 0 { shutdown(listenSocket, Int32(SHUT_RDWR)) }
        core.beginStopping()
        await core.waitUntilIdle()
        // MHD_stop_daemon joins libmicrohttpd's threads: off the cooperative pool.
        await withBlockingCall { [core] in
            // A request that came on a kept connection after the wait: closed unanswered.
            core.resumeAllForStop()
            MHD_stop_daemon(d.daemon)
            if listenSocket >= 0 { close(listenSocket) }
        }
        core.connections.stop()
    }

    /// Connections held now, and how many the connection guard has closed to make room, closed
    /// at the request deadline, and shed with 503 at their headers (for tests and benchmarks).
    public var connectionCounts: (held: Int, evictedForRoom: Int, timedOut: Int, shed: Int) {
        core.connections.counts
    }

    /// The number of requests under way (read, being handled or being answered).
    public var requestsInFlight: Int { core.inFlight }

    private static func listen(host: String, port: UInt16) throws(HTTPServerError) -> (Int32, UInt16) {
        let address = host == "localhost" ? "127.0.0.1" : host
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        guard inet_pton(AF_INET, address, &sin.sin_addr) == 1 else {
            throw HTTPServerError("\(host) is not an IPv4 address (give one like 127.0.0.1)")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPServerError("socket() failed: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw HTTPServerError("cannot listen on \(host):\(port): \(reason)")
        }
        guard Glibc.listen(fd, 128) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw HTTPServerError("cannot listen on \(host):\(port): \(reason)")
        }
        var out = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &out) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return (fd, UInt16(bigEndian: out.sin_port))
    }
}

struct DaemonHandle: @unchecked Sendable {
    var daemon: OpaquePointer
}

/// The listening socket's copy handed to libmicrohttpd.
enum ListenSocket {
    /// Closes `copy` (a `dup` of `original`) after libmicrohttpd failed to start with it, unless
    /// libmicrohttpd already closed it: then `copy`'s number is free or another thread's new
    /// descriptor (another file: its device and inode differ from `original`'s), left alone.
    static func closeCopy(_ copy: Int32, of original: Int32) {
        var a = stat(), b = stat()
        guard fstat(original, &a) == 0, fstat(copy, &b) == 0, a.st_dev == b.st_dev, a.st_ino == b.st_ino else { return }
        close(copy)
    }
}

// MARK: - The server's shared state

final class ServerCore: @unchecked Sendable {
    let handler: any HTTPHandler
    /// The handler's (read once).
    let preferredExecutor: (any TaskExecutor)?
    let configuration: HTTPServerConfiguration
    let connections: ConnectionGuard
    private struct State {
        var inFlight = 0
        var stopping = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())
    /// The suspended connections: a handler's (resumed by its answer) or a stall's (resumed at
    /// the connection timeout, or when the server stops).
    private struct Suspended {
        var handlers: [ObjectIdentifier: Suspension] = [:]
        var stalls: [ObjectIdentifier: Suspension] = [:]
        var stopping = false
        /// The daemon is about to stop: no connection may be suspended any more.
        var closing = false
    }
    private let suspended = Mutex(Suspended())

    init(handler: any HTTPHandler, configuration: HTTPServerConfiguration) {
        self.handler = handler
        preferredExecutor = handler.preferredExecutor
        self.configuration = configuration
        connections = ConnectionGuard(configuration: configuration)
    }

    var inFlight: Int { state.withLock { $0.inFlight } }

    /// The daemon is about to stop (``resumeAllForStop()`` ran): a request that arrives now on a
    /// kept connection is closed unanswered.
    var closing: Bool { suspended.withLock { $0.closing } }

    func requestStarted() { state.withLock { $0.inFlight += 1 } }

    func requestEnded() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.inFlight -= 1
            guard s.inFlight == 0 else { return [] }
            defer { s.idleWaiters = [] }
            return s.idleWaiters
        }
        for w in waiters { w.resume() }
    }

    func beginStopping() {
        state.withLock { $0.stopping = true }
        suspended.withLock { s in
            s.stopping = true
            for stall in s.stalls.values { stall.resume(with: nil) }
            s.stalls = [:]
        }
    }

    /// Resumes every suspended connection without an answer (they close), and suspends none
    /// after: libmicrohttpd must not stop with a suspended connection.
    func resumeAllForStop() {
        // Resumed under the lock (as every resume is): once this returns, no answer can resume
        // a connection of the daemon being stopped.
        suspended.withLock { s in
            s.stopping = true
            s.closing = true
            for one in s.handlers.values { one.resume(with: nil) }
            for one in s.stalls.values { one.resume(with: nil) }
            s.handlers = [:]
            s.stalls = [:]
        }
    }

    /// Suspends `connection` for its handler; false when the daemon is about to stop.
    func suspendForHandler(_ connection: OpaquePointer, _ suspension: Suspension) -> Bool {
        // Under the lock, so resumeAllForStop() either sees it or prevents it.
        suspended.withLock { s -> Bool in
            guard !s.closing else { return false }
            s.handlers[ObjectIdentifier(suspension)] = suspension
            MHD_suspend_connection(connection)
            return true
        }
    }

    /// The handler's answer: resumes the connection (unless the stop already did).
    func answer(_ suspension: Suspension, _ response: HTTPResponse) {
        suspended.withLock { s in
            if s.handlers.removeValue(forKey: ObjectIdentifier(suspension)) != nil { suspension.resume(with: response) }
        }
    }

    /// Suspends a stalled answer's connection until the connection timeout or the stop; false
    /// when the server is stopping (the stall ends at once).
    func suspendForStall(_ connection: OpaquePointer, _ suspension: Suspension) -> Bool {
        let registered = suspended.withLock { s -> Bool in
            guard !s.stopping && !s.closing else { return false }
            s.stalls[ObjectIdentifier(suspension)] = suspension
            MHD_suspend_connection(connection)
            return true
        }
        guard registered else { return false }
        let seconds = Double(configuration.connectionTimeout.components.seconds)
            + Double(configuration.connectionTimeout.components.attoseconds) / 1e18
        DispatchQueue.global().asyncAfter(deadline: .now() + max(0.05, seconds)) { [self] in
            suspended.withLock { s in
                if s.stalls.removeValue(forKey: ObjectIdentifier(suspension)) != nil { suspension.resume(with: nil) }
            }
        }
        return true
    }

    func waitUntilIdle() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.inFlight == 0 { return true }
                s.idleWaiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
}

/// One request on its connection thread; lives from the first call of the access handler to
/// libmicrohttpd's completion notice.
final class RequestContext: @unchecked Sendable {
    var method = ""
    var path = ""
    var headers: [(name: String, value: String)] = []
    var query: [(name: String, value: String)] = []
    var body: [UInt8] = []
    var requestId = ""
    /// An answer decided before the handler (413, 431).
    var rejection: HTTPResponse?
    var answered = false
    /// While the handler runs: the suspended connection, which its answer resumes.
    var suspension: Suspension?
}

/// A suspended connection, resumed exactly once — by the handler's answer, the end of a stall,
/// or the server's stop, whichever comes first — with the answer to queue (nil: close without
/// one). The answer is read on libmicrohttpd's thread once it calls the access handler again.
final class Suspension: @unchecked Sendable {
    private let connection: UInt
    private let slot = Mutex<(resumed: Bool, answer: HTTPResponse?)>((false, nil))

    init(_ connection: OpaquePointer) {
        self.connection = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
    }

    func resume(with answer: HTTPResponse?) {
        let first = slot.withLock { s -> Bool in
            guard !s.resumed else { return false }
            s = (true, answer)
            return true
        }
        if first { MHD_resume_connection(OpaquePointer(bitPattern: connection)) }
    }

    var answer: HTTPResponse? { slot.withLock { $0.answer } }
}

/// The body of a stalled answer: the first bytes, then nothing until the stall ends.
final class StallBody {
    let bytes: [UInt8]
    let sendCount: Int
    let core: ServerCore
    let connection: OpaquePointer?
    /// The stall began (the connection was suspended, or could not be): the next call ends it.
    var stalled = false
    init(bytes: [UInt8], sendCount: Int, core: ServerCore, connection: OpaquePointer?) {
        self.bytes = bytes
        self.sendCount = min(max(0, sendCount), bytes.count)
        self.core = core
        self.connection = connection
    }
}

// MARK: - libmicrohttpd callbacks (on libmicrohttpd's threads)

private final class FieldBox {
    var items: [(name: String, value: String)] = []
    var holdsNUL = false
}

/// The fields of `kind` with their lengths as libmicrohttpd decoded them: a `%00` in a query
/// item is a NUL byte there, which a C string would end at (`orderId=o-1%00x` read as `o-1`).
/// `holdsNUL` says whether any name or value has one (the request is then refused).
private func collect(_ connection: OpaquePointer?, _ kind: MHD_ValueKind)
    -> (items: [(name: String, value: String)], holdsNUL: Bool) {
    let box = FieldBox()
    let iterator: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
        let b = Unmanaged<FieldBox>.fromOpaque(cls!).takeUnretainedValue()
        guard let key else { return .YES }
        let name = UnsafeRawBufferPointer(start: key, count: keySize)
        let bytes = value.map { UnsafeRawBufferPointer(start: $0, count: valueSize) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
        if name.contains(0) || bytes.contains(0) { b.holdsNUL = true }
        b.items.append((String(decoding: name, as: UTF8.self), String(decoding: bytes, as: UTF8.self)))
        return .YES
    }
    _ = withExtendedLifetime(box) {
        MHD_get_connection_values_n(connection, kind, iterator, Unmanaged.passUnretained(box).toOpaque())
    }
    return (box.items, box.holdsNUL)
}

private func newRequestId(clientGiven: String?) -> String {
    if let given = clientGiven, (1...64).contains(given.utf8.count),
       given.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
           || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E }) {
        return given
    }
    // 128 random bits as 32 hex digits: two draws (each a getrandom call), not one per byte.
    var g = SystemRandomNumberGenerator()
    let words = (g.next(), g.next())
    return String(unsafeUninitializedCapacity: 32) { out in
        for k in 0..<32 {
            let word = k < 16 ? words.0 : words.1
            let nibble = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * (k % 16))) & 0xF
            out[k] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
        }
        return 32
    }
}

/// Queues `response` on `connection`; returns .NO (close without answer) when it cannot.
private func queue(_ response: HTTPResponse, _ ctx: RequestContext, _ connection: OpaquePointer?,
                   _ core: ServerCore) -> MHD_Result {
    ctx.answered = true
    let mhdResponse: OpaquePointer?
    switch response.delivery {
    case .closeWithoutAnswer:
        return .NO
    case .complete:
        mhdResponse = response.body.withUnsafeBytes { raw in
            MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress),
                                            .RESPMEM_MUST_COPY)
        }
    case .stallMidBody(let afterBytes):
        let stall = StallBody(bytes: response.body, sendCount: afterBytes, core: core, connection: connection)
        let reader: MHD_ContentReaderCallback = { cls, pos, buf, max in
            let s = Unmanaged<StallBody>.fromOpaque(cls!).takeUnretainedValue()
            let position = Int(pos)
            if position < s.sendCount {
                let n = min(max, s.sendCount - position)
                s.bytes.withUnsafeBytes { raw in
                    buf!.withMemoryRebound(to: UInt8.self, capacity: n) { dst in
                        dst.update(from: raw.baseAddress!.assumingMemoryBound(to: UInt8.self) + position, count: n)
                    }
                }
                return n
            }
            // Nothing more until the connection timeout or the stop: the connection is suspended
            // (0: no data yet), and resumed then to end here.
            if !s.stalled, let connection = s.connection {
                s.stalled = true
                if s.core.suspendForStall(connection, Suspension(connection)) { return 0 }
            }
            return -2 // MHD_CONTENT_READER_END_WITH_ERROR: close the connection.
        }
        let free: MHD_ContentReaderFreeCallback = { cls in
            Unmanaged<StallBody>.fromOpaque(cls!).release()
        }
        mhdResponse = MHD_create_response_from_callback(UInt64(response.body.count), 4096, reader,
                                                        Unmanaged.passRetained(stall).toOpaque(), free)
    }
    guard let r = mhdResponse else { return .NO }
    defer { MHD_destroy_response(r) }
    for (name, value) in response.headers
        where !HTTPRequest.sameFieldName(name, "X-Request-Id") && !HTTPRequest.sameFieldName(name, "Content-Length") {
        _ = MHD_add_response_header(r, name, value)
    }
    _ = MHD_add_response_header(r, "X-Request-Id", ctx.requestId)
    return MHD_queue_response(connection, UInt32(clamping: response.status), r)
}

private let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, version, uploadData, uploadSize, conCls in
    let core = Unmanaged<ServerCore>.fromOpaque(cls!).takeUnretainedValue()
    guard let conCls, let uploadSize else { return .NO }
    // First call: the request line and headers are in.
    guard let existing = conCls.pointee else {
        let ctx = RequestContext()
        ctx.method = method.map { String(cString: $0) } ?? ""
        ctx.path = url.map { String(cString: $0) } ?? "/"
        let headers = collect(connection, .HEADER_KIND), query = collect(connection, .GET_ARGUMENT_KIND)
        ctx.headers = headers.items
        ctx.query = query.items
        ctx.requestId = newRequestId(clientGiven: ctx.headers.first { HTTPRequest.sameFieldName($0.name, "X-Request-Id") }?.value)
        conCls.pointee = Unmanaged.passRetained(ctx).toOpaque()
        core.requestStarted()
        let admission = connection.map { core.connections.headersIn($0, version: version) } ?? (shed: false, pathHoldsNUL: false)
        if admission.shed {
            // No room and no idle or slow connection to close for it: an answer, not a reset.
            var r = HTTPResponse.jsonError(status: 503, code: "serviceUnavailable",
                                           message: "the server is at its connection limit; try again",
                                           requestId: ctx.requestId)
            r.headers.append(("Retry-After", String(core.configuration.retryAfterSeconds)))
            r.headers.append(("Connection", "close"))
            ctx.rejection = r
        } else if admission.pathHoldsNUL {
            // libmicrohttpd hands the path over as a C string, cut at a decoded NUL:
            // `/dashboard%00.html` would be served as `/dashboard`.
            ctx.rejection = HTTPResponse.jsonError(status: 400, code: "invalidRequest", message: "the path holds a NUL byte (%00)",
                                                   requestId: ctx.requestId)
        } else if headers.holdsNUL || query.holdsNUL {
            // No handler sees a text cut at (or holding) a NUL: an order id, a last four.
            ctx.rejection = HTTPResponse.jsonError(status: 400, code: "invalidRequest", message: "a query item or header field holds a NUL byte (%00)",
                                                   requestId: ctx.requestId)
        } else if ctx.headers.count > core.configuration.maxHeaderCount {
            ctx.rejection = HTTPResponse.jsonError(status: 431, code: "requestHeaderFieldsTooLarge",
                                                   message: "the request has \(ctx.headers.count) header fields; at most \(core.configuration.maxHeaderCount) are accepted",
                                                   requestId: ctx.requestId)
        } else if let length = ctx.headers.first(where: { HTTPRequest.sameFieldName($0.name, "Content-Length") })?.value,
                  let n = Int(HTTPRequest.withoutOWS(length[...])), n > core.configuration.maxBodySize {
            ctx.rejection = HTTPResponse.jsonError(status: 413, code: "payloadTooLarge",
                                                   message: "the request body has \(n) bytes; at most \(core.configuration.maxBodySize) are accepted",
                                                   requestId: ctx.requestId)
        }
        if let rejection = ctx.rejection {
            // Answer before reading the body; libmicrohttpd closes the connection afterwards.
            if queue(rejection, ctx, connection, core) == .YES { return .YES }
            ctx.answered = false
        }
        return .YES
    }
    let ctx = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()
    if uploadSize.pointee > 0 {
        let n = uploadSize.pointee
        if !ctx.answered && ctx.rejection == nil {
            if ctx.body.count + n > core.configuration.maxBodySize {
                ctx.rejection = HTTPResponse.jsonError(status: 413, code: "payloadTooLarge", message: "the request body is larger than \(core.configuration.maxBodySize) bytes",
                                                       requestId: ctx.requestId)
                ctx.body = []
            } else if let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: n) {
                    ctx.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: n))
                }
            }
        }
        uploadSize.pointee = 0
        return .YES
    }
    if ctx.answered { return .YES }
    if let suspension = ctx.suspension {
        // Called again after the resume: the handler's answer, or none (the server stopped).
        ctx.suspension = nil
        guard let answer = suspension.answer else { return .NO }
        return queue(answer, ctx, connection, core)
    }
    if let rejection = ctx.rejection { return queue(rejection, ctx, connection, core) }
    // The connection guard may have answered this connection (its deadline passed) meanwhile.
    if let connection, !core.connections.beginHandling(connection) { return .NO }
    // The whole request is in: the connection waits suspended while the handler runs as a
    // task; its answer resumes it (this thread serves the other connections meanwhile).
    guard let connection else { return .NO }
    let request = HTTPRequest(method: ctx.method, path: ctx.path, query: ctx.query, headers: ctx.headers,
                              body: ctx.body, requestId: ctx.requestId)
    // A handler that answers at once (GET /health): on this thread, without suspending the
    // connection or starting a task — unless the daemon is stopping (then closed unanswered, as
    // below).
    if let answer = core.handler.immediateAnswer(to: request) {
        return core.closing ? .NO : queue(answer, ctx, connection, core)
    }
    let suspension = Suspension(connection)
    guard core.suspendForHandler(connection, suspension) else {
        // The daemon is stopping: this request, come on a kept connection, is not run.
        return .NO
    }
    ctx.suspension = suspension
    let handler = core.handler
    Task(executorPreference: core.preferredExecutor) { [core] in core.answer(suspension, await handler.handle(request)) }
    return .YES
}

private let completedHandler: MHD_RequestCompletedCallback = { cls, connection, conCls, _ in
    guard let cls, let conCls, let existing = conCls.pointee else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    if let connection { core.connections.requestDone(connection) }
    Unmanaged<RequestContext>.fromOpaque(existing).release()
    conCls.pointee = nil
    core.requestEnded()
}

/// libmicrohttpd's connection notices: the connection guard's record of every connection.
private let connectionNotice: MHD_NotifyConnectionCallback = { cls, connection, _, code in
    guard let cls, let connection else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    // MHD_CONNECTION_NOTIFY_STARTED = 0, MHD_CONNECTION_NOTIFY_CLOSED = 1 (microhttpd.h).
    switch code.rawValue {
    case 0: core.connections.started(connection)
    case 1: core.connections.closed(connection)
    default: break
    }
}

/// The raw request target, before libmicrohttpd decodes it: a `%00` in its path would end
/// the decoded C string (the query keeps its lengths, ``collect(_:_:)``); a raw NUL byte ends
/// this C string early, which the access handler sees from where the HTTP version starts.
private let requestLineNotice: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?)
    -> UnsafeMutableRawPointer? = { cls, uri, connection in
    guard let cls, let uri, let connection else { return nil }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let raw = Array(UnsafeBufferPointer(start: UnsafeRawPointer(uri).assumingMemoryBound(to: UInt8.self), count: strlen(uri)))
    let path = raw.prefix { $0 != UInt8(ascii: "?") }
    var holdsNUL = false
    if path.count >= 3 {
        for k in 0..<(path.count - 2) where path[k] == UInt8(ascii: "%") && path[k + 1] == UInt8(ascii: "0")
            && path[k + 2] == UInt8(ascii: "0") {
            holdsNUL = true
        }
    }
    core.connections.requestLine(connection, holdsNUL: holdsNUL,
                                 targetEnd: UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(uri))) &+ UInt(raw.count))
    return nil
}

/// Reason phrases of the statuses tapemu answers with.
public enum HTTPStatus {
    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 402: return "Payment Required"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 413: return "Payload Too Large"
        case 415: return "Unsupported Media Type"
        case 422: return "Unprocessable Entity"
        case 426: return "Upgrade Required"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error"
        }
    }
}
