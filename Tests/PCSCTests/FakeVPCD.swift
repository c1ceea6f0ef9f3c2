import Foundation
import Glibc

/// The reader side of vpcd's wire protocol in the test process, to check ``VPCDCardServer``
/// message by message without pcscd: a loopback listener that accepts the card's connection
/// and exchanges length-prefixed frames. Blocking socket calls run on threads of their own.
final class FakeVPCD: Sendable {
    let port: Int
    private let listener: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FakeVPCDError("socket: \(String(cString: strerror(errno)))") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 4) == 0 else {
            close(fd)
            throw FakeVPCDError("bind/listen: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    deinit { close(listener) }

    /// Waits for the card to connect.
    func accept() async throws -> Connection {
        let listener = self.listener
        let fd = await onThread { Glibc.accept(listener, nil, nil) }
        guard fd >= 0 else { throw FakeVPCDError("accept: \(String(cString: strerror(errno)))") }
        return Connection(fd: fd)
    }

    final class Connection: Sendable {
        let fd: Int32
        init(fd: Int32) { self.fd = fd }
        deinit { close(fd) }

        /// Sends one frame: 2-byte big-endian length, then `payload`.
        func send(_ payload: [UInt8]) {
            let frame = [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
            _ = frame.withUnsafeBytes { Glibc.send(fd, $0.baseAddress!, frame.count, Int32(MSG_NOSIGNAL)) }
        }

        /// One frame from the card, or how the stream ended.
        func receive() async -> Received {
            let fd = self.fd
            return await onThread {
                func exactly(_ n: Int) -> Result<[UInt8], Received> {
                    var out = [UInt8](repeating: 0, count: n)
                    var got = 0
                    while got < n {
                        let r = out.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, n - got, 0) }
                        if r == 0 { return .failure(.closed) }
                        if r < 0 { return .failure(errno == ECONNRESET ? .reset : .closed) }
                        got += r
                    }
                    return .success(out)
                }
                switch exactly(2) {
                case .failure(let end): return end
                case .success(let h):
                    switch exactly(Int(h[0]) << 8 | Int(h[1])) {
                    case .failure(let end): return end
                    case .success(let payload): return .frame(payload)
                    }
                }
            }
        }

        /// Sends a command and returns the card's answer.
        func exchange(_ payload: [UInt8]) async -> Received {
            send(payload)
            return await receive()
        }

        /// Closes gracefully, as vpcd does when pcscd stops.
        func shutdown() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }

    enum Received: Error, Equatable {
        case frame([UInt8])
        /// The card reset the connection (a tear).
        case closed
        case reset
    }
}

struct FakeVPCDError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Runs a blocking call on a new thread and returns its result.
func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { c in
        Thread { c.resume(returning: body()) }.start()
    }
}
