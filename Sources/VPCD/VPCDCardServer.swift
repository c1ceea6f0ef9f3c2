public import CardChannel
import Dispatch
import Foundation
import Glibc
import Synchronization
import Timing

/// Where vpcd waits for a virtual card: `HOST:PORT`, one port per reader slot.
///
/// vsmartcard-vpcd's readers `Virtual PCD 00 00`, `Virtual PCD 00 01`, … listen on TCP 35963,
/// 35964, … (slot N is port 35963 + N).
public struct VPCDEndpoint: Sendable, Hashable, CustomStringConvertible {
    public static let defaultHost = "127.0.0.1"
    public static let defaultPort = 35963

    public var host: String
    public var port: Int

    public init(host: String = VPCDEndpoint.defaultHost, port: Int = VPCDEndpoint.defaultPort) {
        self.host = host
        self.port = port
    }

    /// The endpoint of reader slot `slot` on `host`.
    public init(host: String = VPCDEndpoint.defaultHost, slot: Int) {
        self.init(host: host, port: Self.defaultPort + slot)
    }

    /// The name pcscd gives the reader of slot `slot` of the first vpcd reader.
    public static func readerName(slot: Int) -> String {
        "Virtual PCD 00 " + (slot < 10 ? "0" : "") + String(slot)
    }

    /// Parses `HOST:PORT`, `HOST` (default port) or `:PORT` (default host); `[v6]:PORT` too.
    public static func parse(_ text: String) -> VPCDEndpoint? {
        var host = Substring(text)
        var port = defaultPort
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            let rest = host[host.index(after: close)...]
            let h = host[host.index(after: host.startIndex)..<close]
            if rest.isEmpty { return h.isEmpty ? nil : VPCDEndpoint(host: String(h), port: port) }
            guard rest.first == ":", let p = Int(rest.dropFirst()), (1...65535).contains(p) else { return nil }
            return h.isEmpty ? nil : VPCDEndpoint(host: String(h), port: p)
        }
        if let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon {
            guard let p = Int(host[host.index(after: colon)...]), (1...65535).contains(p) else { return nil }
            port = p
            host = host[..<colon]
        }
        return VPCDEndpoint(host: host.isEmpty ? defaultHost : String(host), port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Serves one virtual card into a vpcd reader slot, so any PC/SC program reads it through pcscd.
///
/// A TCP client of vsmartcard-vpcd. Both ways a message is a 2-byte big-endian length and a
/// payload. A 1-byte payload from vpcd is a control code — 0x00 power off, 0x01 power on, 0x02
/// reset, 0x04 "send the ATR" —, any longer one a command APDU, answered with one message
/// holding the response (data + SW1 SW2). TCP_NODELAY is set, and TCP_QUICKACK after every read:
/// without them each exchange waits ~40 ms for a delayed ACK.
///
/// The card's replies are honoured: a response after its card time (really waited: this is the
/// emulator), `.removed` resets the connection (RST, a tear), `.mute` never answers.
/// `removeAfter: n` tears the card away when the (n+1)th command arrives. When vpcd goes away
/// (pcscd restarts) the server reconnects with backoff. All socket work runs on a thread of
/// its own.
public final class VPCDCardServer: Sendable {
    /// What happened, for logs and tests. ATR requests (pcscd polls ~every 400 ms) are
    /// ``Event/atrRequested``.
    public enum Event: Sendable, Equatable {
        case connecting(VPCDEndpoint)
        case connected(VPCDEndpoint)
        /// Connecting failed; the next try is after `retryIn`.
        case connectFailed(reason: String, retryIn: Duration)
        /// vpcd closed the connection (pcscd stopped or restarted); the server reconnects.
        case disconnected(reason: String)
        case powerOn
        case powerOff
        case reset
        case atrRequested
        /// vpcd took the connection but asked nothing for this long after it: it is serving
        /// another program's card on this slot and holds this one in its queue (reported once
        /// per connection; the server goes on waiting).
        case unanswered(after: Duration)
        case exchange(command: [UInt8], response: [UInt8], cardTime: Duration)
        /// The card does not answer this command.
        case mute(command: [UInt8])
        /// The card left the field (connection reset) after `exchanges` answered commands.
        case removed(exchanges: Int)
    }

    /// Why ``run()`` returned.
    public enum Outcome: Sendable, Equatable {
        /// The task was cancelled.
        case stopped
        /// The card tore away (its reply was `.removed`, or `removeAfter` was reached).
        case cardRemoved(exchanges: Int)
    }

    public let card: any CardResponder
    public let endpoint: VPCDEndpoint
    /// Tear the card away when command number `removeAfter + 1` arrives; nil: never.
    public let removeAfter: Int?
    public let initialBackoff: Duration
    public let maximumBackoff: Duration
    /// TCP_NODELAY and TCP_QUICKACK (the default). Off only to measure what they save.
    public let lowLatency: Bool
    /// How long vpcd may stay silent after taking the connection before ``Event/unanswered(after:)``
    /// (pcscd asks a served slot for its ATR about every 400 ms).
    public let silenceLimit: Duration
    private let onEvent: @Sendable (Event) -> Void

    public init(card: any CardResponder, endpoint: VPCDEndpoint = VPCDEndpoint(), removeAfter: Int? = nil,
                initialBackoff: Duration = .milliseconds(100), maximumBackoff: Duration = .seconds(2),
                lowLatency: Bool = true, silenceLimit: Duration = .seconds(3),
                onEvent: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.card = card
        self.endpoint = endpoint
        self.removeAfter = removeAfter
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.lowLatency = lowLatency
        self.silenceLimit = silenceLimit
        self.onEvent = onEvent
    }

    /// Serves the card until the task is cancelled (returns ``Outcome/stopped``, closing the
    /// connection so the slot empties) or the card tears away (``Outcome/cardRemoved(exchanges:)``).
    /// Run one at a time per server.
    public func run() async -> Outcome {
        let control = RunControl()
        return await withTaskCancellationHandler {
            // The serving loop blocks its thread (connect, read, the backoff's waits) until it is
            // stopped: Timing's one bridge runs it off the cooperative pool.
            await withBlockingCall { self.serve(control) }
        } onCancel: {
            control.cancel()
        }
    }

    // MARK: - The serving thread

    private enum SessionEnd {
        case stopped
        case torn(Int)
        case closedByVPCD(String)
    }

    private func serve(_ control: RunControl) -> Outcome {
        var backoff = initialBackoff
        var exchanges = 0
        while !control.isCancelled {
            onEvent(.connecting(endpoint))
            let fd: Int32
            switch Socket.connect(host: endpoint.host, port: endpoint.port) {
            case .failure(let failure):
                onEvent(.connectFailed(reason: failure.reason, retryIn: backoff))
                if control.sleep(backoff) { return .stopped }
                backoff = min(backoff * 2, maximumBackoff)
                continue
            case .success(let socket):
                fd = socket
            }
            guard control.register(fd) else { close(fd); return .stopped }
            backoff = initialBackoff
            if lowLatency { Socket.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1) }
            onEvent(.connected(endpoint))
            let end = session(fd, control, &exchanges)
            switch end {
            case .stopped:
                control.closeRegistered(fd, reset: false)
                return .stopped
            case .torn(let n):
                control.closeRegistered(fd, reset: true)
                onEvent(.removed(exchanges: n))
                return .cardRemoved(exchanges: n)
            case .closedByVPCD(let reason):
                control.closeRegistered(fd, reset: false)
                if control.isCancelled { return .stopped }
                onEvent(.disconnected(reason: reason))
                if control.sleep(backoff) { return .stopped }
            }
        }
        return .stopped
    }

    private func session(_ fd: Int32, _ control: RunControl, _ exchanges: inout Int) -> SessionEnd {
        // A connection vpcd queues behind another program's is accepted by the kernel all the
        // same: only its silence tells. Said once; the wait goes on (the slot may free up).
        if !Socket.waitReadable(fd, timeout: silenceLimit), !control.isCancelled {
            onEvent(.unanswered(after: silenceLimit))
        }
        while true {
            guard let header = Socket.receive(fd, count: 2, quickAck: lowLatency) else {
                return control.isCancelled ? .stopped : .closedByVPCD(Socket.lastError())
            }
            let length = Int(header[0]) << 8 | Int(header[1])
            guard let payload = Socket.receive(fd, count: length, quickAck: lowLatency) else {
                return control.isCancelled ? .stopped : .closedByVPCD(Socket.lastError())
            }
            if payload.count == 1 {
                switch payload[0] {
                case 0x00:
                    card.powerOff()
                    onEvent(.powerOff)
                case 0x01:
                    card.powerOn()
                    onEvent(.powerOn)
                case 0x02:
                    card.powerOn()
                    onEvent(.reset)
                case 0x04:
                    onEvent(.atrRequested)
                    guard Socket.send(fd, frame(card.atr)) else {
                        return control.isCancelled ? .stopped : .closedByVPCD(Socket.lastError())
                    }
                default:
                    break   // an unknown control code: nothing to do
                }
                continue
            }
            guard !payload.isEmpty else { continue }
            if let limit = removeAfter, exchanges >= limit { return .torn(exchanges) }
            switch card.process(payload) {
            case .response(let bytes, let cardTime):
                if cardTime > .zero, control.sleep(cardTime) { return .stopped }
                guard Socket.send(fd, frame(bytes)) else {
                    return control.isCancelled ? .stopped : .closedByVPCD(Socket.lastError())
                }
                exchanges += 1
                onEvent(.exchange(command: payload, response: bytes, cardTime: cardTime))
            case .removed, .failure:
                // vpcd cannot carry an error: a failing card side leaves the field.
                return .torn(exchanges)
            case .mute:
                onEvent(.mute(command: payload))
            }
        }
    }

    private func frame(_ payload: [UInt8]) -> [UInt8] {
        let n = min(payload.count, 0xFFFF)
        return [UInt8(n >> 8), UInt8(n & 0xFF)] + payload.prefix(n)
    }
}

/// Cancellation of a running server: a flag, the socket to shut down, and a wake-up for waits.
private final class RunControl: Sendable {
    private let state = Mutex<(cancelled: Bool, fd: Int32?)>((false, nil))
    private let wake = DispatchSemaphore(value: 0)

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func cancel() {
        state.withLock { s in
            s.cancelled = true
            // Unblocks a recv on the serving thread; under the lock so the fd cannot be reused.
            if let fd = s.fd { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
        wake.signal()
    }

    /// Makes `fd` the socket to shut down on cancel; false when already cancelled.
    func register(_ fd: Int32) -> Bool {
        state.withLock { s in
            if s.cancelled { return false }
            s.fd = fd
            return true
        }
    }

    /// Closes the registered socket; `reset`: abruptly (RST, SO_LINGER 0), as a torn card.
    func closeRegistered(_ fd: Int32, reset: Bool) {
        state.withLock { s in
            if reset { Socket.setLingerZero(fd) }
            close(fd)
            s.fd = nil
        }
    }

    /// Waits `duration`; true when cancelled meanwhile (or before).
    func sleep(_ duration: Duration) -> Bool {
        if isCancelled { return true }
        let (s, atto) = duration.components
        let nanos = max(0, s) * 1_000_000_000 + atto / 1_000_000_000
        _ = wake.wait(timeout: .now() + .nanoseconds(Int(clamping: nanos)))
        return isCancelled
    }
}

/// The few POSIX socket calls the server needs, blocking.
enum Socket {
    struct Failure: Error { var reason: String }

    static func connect(host: String, port: Int) -> Result<Int32, Failure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let rv = getaddrinfo(host, String(port), &hints, &list)
        guard rv == 0, let first = list else {
            return .failure(Failure(reason: "cannot resolve \(host): \(String(cString: gai_strerror(rv)))"))
        }
        defer { freeaddrinfo(first) }
        var reason = "no address for \(host)"
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let ai = next {
            next = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family, ai.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), ai.pointee.ai_protocol)
            guard fd >= 0 else { reason = lastError(); continue }
            if Glibc.connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0 { return .success(fd) }
            reason = "cannot connect to \(host):\(port): \(lastError())"
            close(fd)
        }
        return .failure(Failure(reason: reason))
    }

    /// Exactly `count` bytes, or nil at end of stream or on error. Re-arms TCP_QUICKACK after
    /// every read (Linux clears it again after a while).
    /// Whether `fd` has something to read (or an error or hang-up to report) within `timeout`.
    static func waitReadable(_ fd: Int32, timeout: Duration) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let (s, atto) = timeout.components
        let ms = Int32(clamping: s * 1000 + atto / 1_000_000_000_000_000)
        while true {
            let n = poll(&p, 1, ms)
            if n < 0 && errno == EINTR { continue }
            return n != 0
        }
    }

    static func receive(_ fd: Int32, count: Int, quickAck: Bool) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out.withUnsafeMutableBytes { buf in
                recv(fd, buf.baseAddress! + got, count - got, 0)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                if n == 0 { errno = 0 }
                return nil
            }
            got += n
            if quickAck { setOption(fd, Int32(IPPROTO_TCP), TCP_QUICKACK, 1) }
        }
        return out
    }

    static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { buf in
                Glibc.send(fd, buf.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        _ = setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    static func setLingerZero(_ fd: Int32) {
        var l = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
    }

    static func lastError() -> String {
        errno == 0 ? "connection closed" : String(cString: strerror(errno))
    }
}
