public import Foundation

/// A plain TCP connection to a loopback port, for tests that play a client byte by byte: a slow
/// sender, an idle socket, a request line no HTTP library would send. Blocking calls, bounded.
public final class RawConnection: @unchecked Sendable {
    public let fd: Int32

    /// Connects to `127.0.0.1:port`.
    public init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawConnectionError("socket: \(String(cString: strerror(errno)))") }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        sin.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw RawConnectionError("connect: \(why)")
        }
    }

    deinit { close(fd) }

    /// Sends all of `bytes`; false when the peer has closed (or reset) the connection.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Whether something (bytes, the end of the stream, an error) can be read within `timeout`
    /// milliseconds: a wait for a real event, bounded.
    public func readable(within timeoutMs: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, timeoutMs) > 0
    }

    /// Everything until the peer closes, or until nothing arrives for `timeoutMs`; nil when the
    /// connection was reset before any byte.
    public func readAll(timeoutMs: Int32 = 5000, limit: Int = 1 << 20) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while out.count < limit, readable(within: timeoutMs) {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 { return out.isEmpty ? nil : out }
            if n == 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    /// One `Connection: close` request and its whole answer as text ("" when none came).
    public static func request(port: UInt16, _ head: String, body: [UInt8] = []) throws -> String {
        let c = try RawConnection(port: port)
        c.send(Array(head.utf8) + body)
        return String(decoding: c.readAll() ?? [], as: UTF8.self)
    }
}

public struct RawConnectionError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// What a hostile local user holds against a server: `slow` connections that send a request's
/// headers one byte per ``drip()``, and `idle` ones that send nothing. A closed connection is
/// opened again at the next ``drip()`` (so they stay held, as an attacker would keep them).
public final class HostileConnections: @unchecked Sendable {
    public let port: UInt16
    private var slow: [(RawConnection?, Int)] = []
    private var idle: [RawConnection?] = []
    /// How many times a connection the server closed was opened again.
    public private(set) var reopened = 0
    /// Answers the server wrote to held connections before closing them (their status lines).
    public private(set) var statusLines: [String] = []
    private static let header = Array("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: \(String(repeating: "a", count: 4000))\r\n\r\n".utf8)

    public init(port: UInt16, slow: Int, idle: Int) throws {
        self.port = port
        for _ in 0..<slow { self.slow.append((try RawConnection(port: port), 0)) }
        for _ in 0..<idle { self.idle.append(try RawConnection(port: port)) }
    }

    /// One tick: each slow connection sends its next header byte; a connection the server has
    /// closed (after an answer such as 408 or 503) is opened again.
    public func drip() {
        for k in slow.indices {
            if let c = slow[k].0, !c.readable(within: 0), c.send([Self.header[slow[k].1 % Self.header.count]]) {
                slow[k].1 += 1
                continue
            }
            record(slow[k].0)
            slow[k] = ((try? RawConnection(port: port)), 0)
            reopened += 1
        }
        for k in idle.indices where idle[k] == nil || idle[k]!.readable(within: 0) {
            record(idle[k])
            idle[k] = try? RawConnection(port: port)
            reopened += 1
        }
    }

    private func record(_ c: RawConnection?) {
        guard let c, let bytes = c.readAll(timeoutMs: 0, limit: 4096), !bytes.isEmpty else { return }
        let text = String(decoding: bytes, as: UTF8.self)
        statusLines.append(String(text.prefix { $0 != "\r" }) + (text.contains("Retry-After:") ? " (Retry-After)" : ""))
    }

    /// Closes every connection.
    public func close() {
        slow = []
        idle = []
    }
}
