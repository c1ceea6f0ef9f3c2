import CMicroHTTPD
import Foundation

/// Keeps connection slots for clients that use them: the server's answer to slow and idle
/// connections (a hostile local user holding hundreds of them must not lock a terminal out).
///
/// Every connection is in one of two phases: *reading* a request (from its accept, or from
/// the end of its previous answer, until its body is complete — idle keep-alive connections
/// and slow senders are here) or *handling* one (the handler runs, the answer is sent).
/// - **Total deadline**: a connection reading longer than
///   ``HTTPServerConfiguration/requestTimeout`` in all — however many bytes trickle in, unlike
///   libmicrohttpd's idle timeout, which each byte restarts — is answered `408` and closed; a kept
///   connection idle since its last answer (no new request begun) is closed without an answer.
/// - **Room for newcomers**: past ``HTTPServerConfiguration/maxConnections`` (or
///   ``HTTPServerConfiguration/maxConnectionsPerAddress`` from one address), the oldest
///   connection still reading (the same address's, for the per-address limit) is answered
///   `503` with `Retry-After` and closed, so idle and slow connections never take the last
///   slot from a client that sends its request at once. Only when every connection is handling
///   a request is the newcomer itself answered `503` with `Retry-After` (after its headers) —
///   never reset. libmicrohttpd's own hard limit sits above ``maxConnections`` (by
///   ``headroom``), so a newcomer is accepted while older ones are being closed.
///
/// An answer to a connection that is still reading is written to its socket directly (libmicrohttpd
/// writes nothing in that phase), then the socket is shut down: libmicrohttpd's polling thread
/// sees the end of the stream and closes the connection. libmicrohttpd reports a closed connection
/// (`MHD_CONNECTION_NOTIFY_CLOSED`) before it closes the socket, and both happen under this
/// guard's lock here, so a descriptor is never shut down after it was reused.
final class ConnectionGuard: @unchecked Sendable {
    struct Entry {
        var fd: Int32
        var address: String
        /// When the current reading phase began; nil while a request is being handled.
        var readingSince: ContinuousClock.Instant?
        /// Answered and shut down by the guard (not counted as held any more).
        var evicted = false
        /// To be answered 503 once its headers are in (no room, nothing to evict).
        var shed = false
        /// The raw request target's path holds a NUL or `%00`.
        var pathHoldsNUL = false
        /// Where the raw request target's C string ends (its address plus its strlen): libmicrohttpd
        /// ends the target with a NUL just before the HTTP version, so an earlier end is a raw NUL
        /// byte inside it (``headersIn(_:version:)``).
        var rawTargetEnd: UInt = 0
        /// Requests answered on this connection so far (a kept connection has one or more).
        var served = 0
        /// The current reading phase has a request line: a request has begun.
        var requestBegun = false
        /// A kept connection waiting, idle, for its client's next request: answered at least once,
        /// nothing of a new request read. Closed without an answer (``evict(_:status:)``).
        var idleKept: Bool { served > 0 && !requestBegun }
    }

    let configuration: HTTPServerConfiguration
    private let lock = NSCondition()
    private var entries: [UInt: Entry] = [:]
    /// Entries not evicted, in all and by address.
    private var held = 0
    private var heldByAddress: [String: Int] = [:]
    private var stopping = false
    private var watchdog: Thread?
    /// Counters for tests and benchmarks.
    private(set) var evictedForRoom = 0
    private(set) var timedOut = 0
    private(set) var shedAtHeaders = 0

    /// libmicrohttpd's hard limit is `maxConnections + headroom`.
    static func headroom(_ maxConnections: Int) -> Int { max(16, maxConnections / 4) }

    init(configuration: HTTPServerConfiguration) {
        self.configuration = configuration
    }

    func start() {
        let t = Thread { [self] in watch() }
        t.name = "HTTPServer-deadlines"
        watchdog = t
        t.start()
    }

    func stop() {
        lock.lock()
        stopping = true
        lock.broadcast()
        lock.unlock()
    }

    var counts: (held: Int, evictedForRoom: Int, timedOut: Int, shed: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (held, evictedForRoom, timedOut, shedAtHeaders)
    }

    // MARK: Events (libmicrohttpd's threads)

    func started(_ connection: OpaquePointer) {
        let fd = tapemu_mhd_connection_fd(connection)
        let address = Self.address(tapemu_mhd_client_address(connection))
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        let now = ContinuousClock.now
        lock.lock()
        defer { lock.unlock() }
        entries[key] = Entry(fd: fd, address: address, readingSince: now)
        held += 1
        heldByAddress[address, default: 0] += 1
        // Counts kept as they change, and a scan only to pick whom to close: this runs on
        // libmicrohttpd's accepting thread, where a burst of hundreds of connections arrives.
        // Not on loopback unless asked: every local process shares 127.0.0.1, so there the
        // limit only churns (a burst of reconnects would close an honest client's fresh
        // connection before its headers are read); the global limit keeps the room there.
        let limited = configuration.limitLoopbackPerAddress || !(address.hasPrefix("127.") || address == "::1")
        if limited && heldByAddress[address, default: 0] > configuration.maxConnectionsPerAddress {
            if let oldest = oldestReader(address: address) {
                evict(oldest, status: 503)
                evictedForRoom += 1
            }
        }
        // The server past its limit: the oldest reader anywhere makes room, or the newcomer is shed.
        if held > configuration.maxConnections {
            if let oldest = oldestReader(address: nil), oldest != key {
                evict(oldest, status: 503)
                evictedForRoom += 1
            } else {
                entries[key]?.shed = true
            }
        }
    }

    func closed(_ connection: OpaquePointer) {
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        lock.lock()
        if let e = entries.removeValue(forKey: key), !e.evicted { release(e) }
        lock.unlock()
    }

    /// A connection no longer held (closed, or answered and shut down by the guard).
    private func release(_ e: Entry) {
        held -= 1
        let n = heldByAddress[e.address, default: 1] - 1
        heldByAddress[e.address] = n > 0 ? n : nil
    }

    func requestLine(_ connection: OpaquePointer, holdsNUL: Bool, targetEnd: UInt) {
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        lock.lock()
        if holdsNUL { entries[key]?.pathHoldsNUL = true }
        entries[key]?.rawTargetEnd = targetEnd
        entries[key]?.requestBegun = true
        lock.unlock()
    }

    /// At the headers: whether the connection is to be shed, and whether its path held a NUL.
    /// `version` is the HTTP version libmicrohttpd hands the access handler: it starts just
    /// past the NUL that ends the raw request target.
    func headersIn(_ connection: OpaquePointer, version: UnsafePointer<CChar>?) -> (shed: Bool, pathHoldsNUL: Bool) {
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        lock.lock()
        defer { lock.unlock() }
        guard var e = entries[key] else { return (false, false) }
        if e.shed { shedAtHeaders += 1 }
        if let version, e.rawTargetEnd != 0, UInt(bitPattern: Int(bitPattern: version)) &- 1 != e.rawTargetEnd {
            e.pathHoldsNUL = true
        }
        // One request's facts; a keep-alive connection's next request brings its own.
        let answer = (e.shed, e.pathHoldsNUL)
        e.pathHoldsNUL = false
        e.rawTargetEnd = 0
        entries[key] = e
        return answer
    }

    /// The request is read: handling begins, unless the guard already answered the connection
    /// (false: close it).
    func beginHandling(_ connection: OpaquePointer) -> Bool {
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        lock.lock()
        defer { lock.unlock() }
        guard let e = entries[key] else { return true }
        if e.evicted { return false }
        entries[key]?.readingSince = nil
        return true
    }

    /// The answer is sent: the connection waits for its next request (a new reading phase).
    func requestDone(_ connection: OpaquePointer) {
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        lock.lock()
        if entries[key] != nil {
            entries[key]?.readingSince = .now
            entries[key]?.served += 1
            entries[key]?.requestBegun = false
        }
        lock.unlock()
    }

    // MARK: Internals (under the lock)

    /// The held connection that has been reading a request the longest (of `address`, when
    /// given); no allocation.
    private func oldestReader(address: String?) -> UInt? {
        var best: (key: UInt, since: ContinuousClock.Instant)?
        for (key, e) in entries where !e.evicted {
            guard let since = e.readingSince, address == nil || e.address == address else { continue }
            if best == nil || since < best!.since { best = (key, since) }
        }
        return best?.key
    }

    /// Answers `key`'s connection `status` and shuts it down — or, a kept connection idle between
    /// two requests (``Entry/idleKept``), shuts it down without an answer: its client may be
    /// writing its next request over it at this very moment, and an answer written now would be
    /// read as the answer to that request, which the server never read (an authorisation sent on
    /// a kept connection at its 10 s deadline got this 408 and was reported
    /// `onTransactionCommError`). A closed kept connection is what clients expect: libcurl notices
    /// it before reusing it, or sends the request again on a new one.
    private func evict(_ key: UInt, status: Int) {
        guard var e = entries[key], !e.evicted, e.fd >= 0 else { return }
        e.evicted = true
        entries[key] = e
        release(e)
        if e.idleKept {
            shutdown(e.fd, Int32(SHUT_RDWR))
            return
        }
        let response = status == 408
            ? HTTPResponse.jsonError(status: 408, code: "requestTimeout",
                                     message: "the request was not complete within \(configuration.requestTimeout)", requestId: "")
            : HTTPResponse.jsonError(status: 503, code: "serviceUnavailable",
                                     message: "the server is at its connection limit; try again", requestId: "")
        var text = "HTTP/1.1 \(status) \(HTTPStatus.reason(status))\r\nConnection: close\r\n"
        text += "Content-Type: application/json\r\nContent-Length: \(response.body.count)\r\n"
        if status == 503 { text += "Retry-After: \(configuration.retryAfterSeconds)\r\n" }
        text += "\r\n"
        let bytes = Array(text.utf8) + response.body
        _ = bytes.withUnsafeBytes { send(e.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        // The stream ends after the answer; libmicrohttpd's thread sees it and closes.
        shutdown(e.fd, Int32(SHUT_RDWR))
    }

    private func watch() {
        let timeout = configuration.requestTimeout
        let tick = min(Duration.milliseconds(250), max(Duration.milliseconds(10), timeout / 4))
        let tickSeconds = Double(tick.components.seconds) + Double(tick.components.attoseconds) / 1e18
        lock.lock()
        defer { lock.unlock() }
        while !stopping {
            let now = ContinuousClock.now
            for (key, e) in entries where !e.evicted {
                if let since = e.readingSince, now - since >= timeout {
                    evict(key, status: 408)
                    timedOut += 1
                }
            }
            _ = lock.wait(until: Date(timeIntervalSinceNow: tickSeconds))
        }
    }

    private static func address(_ sa: UnsafePointer<sockaddr>?) -> String {
        guard let sa else { return "?" }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(sa.pointee.sa_family) {
        case AF_INET:
            var a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count))
        case AF_INET6:
            var a = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            inet_ntop(AF_INET6, &a, &buffer, socklen_t(buffer.count))
        default:
            return "?"
        }
        return String(cString: buffer)
    }
}
