import Foundation
import GatewayService
import HTTPServer

/// `--hostile`: a gateway service with its default limits on loopback while 300 connections send
/// a request's headers one byte every 1.5 s and 300 more sit idle (each reopened when the server
/// closes it, as an attacker keeps them held), measured from an honest client: `GET /health`
/// latency over fresh connections, and `tapemu pay --gateway` (with `--tapemu PATH`). Loopback
/// only; every loop is bounded in count and time. Prints figures; asserts nothing.
enum HostileBench {
    static func connect(_ port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        sin.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if r != 0 { close(fd); return -1 }
        return fd
    }

    /// Closed by the server (readable: an answer or the end of the stream)?
    static func closedByServer(_ fd: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) > 0
    }

    static func run(tapemu: String?, seconds: Int, slowCount: Int = 300, idleCount: Int = 300) async throws {
        let dir = NSTemporaryDirectory() + "tapemu-hostile-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let service = try GatewayService(dataDirectory: dir + "/srv")
        let config = HTTPServerConfiguration()
        let server = try HTTPServer(configuration: config, handler: service.routes())
        let port = server.port
        print("hostile clients: \(slowCount) slow-header (1 byte / 1.5 s) + \(idleCount) idle, for \(seconds) s, against the default limits")
        print("(maxConnections \(config.maxConnections), per address \(config.maxConnectionsPerAddress), request deadline \(config.requestTimeout))")
        let header = Array("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: \(String(repeating: "a", count: 4000))\r\n\r\n".utf8)
        let opened = DispatchSemaphore(value: 0)
        let stop = DispatchSemaphore(value: 0)
        let reopened = ManagedCounter()
        // The hostile side on its own thread: one tick every 1.5 s, bounded by the run's length.
        let hostile = Thread {
            var slow = (0..<slowCount).map { _ in (connect(port), 0) }
            var idle = (0..<idleCount).map { _ in connect(port) }
            opened.signal()
            let ticks = Int(Double(seconds) / 1.5) + 2
            for _ in 0..<ticks {
                for k in slow.indices {
                    if slow[k].0 >= 0, !closedByServer(slow[k].0) {
                        var b = header[slow[k].1 % header.count]
                        if send(slow[k].0, &b, 1, Int32(MSG_NOSIGNAL)) == 1 { slow[k].1 += 1; continue }
                    }
                    if slow[k].0 >= 0 { close(slow[k].0) }
                    slow[k] = (connect(port), 0)
                    reopened.add()
                }
                for k in idle.indices where idle[k] < 0 || closedByServer(idle[k]) {
                    if idle[k] >= 0 { close(idle[k]) }
                    idle[k] = connect(port)
                    reopened.add()
                }
                if stop.wait(timeout: .now() + 1.5) == .success { break }
            }
            for (fd, _) in slow where fd >= 0 { close(fd) }
            for fd in idle where fd >= 0 { close(fd) }
        }
        hostile.start()
        opened.wait()

        // The honest client: a fresh connection per request, one every 50 ms.
        let clock = ContinuousClock()
        var latencies: [Duration] = []
        var failures = 0
        let end = clock.now + .seconds(seconds)
        var payLine = "not run (give --tapemu PATH)"
        var k = 0
        while clock.now < end && k < 100_000 {
            k += 1
            let t0 = clock.now
            let fd = connect(port)
            var ok = false
            if fd >= 0 {
                let req = Array("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
                _ = req.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                var buf = [UInt8](repeating: 0, count: 512)
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&p, 1, 5000) > 0 {
                    let n = recv(fd, &buf, buf.count, 0)
                    ok = n > 12 && String(decoding: buf[0..<12], as: UTF8.self) == "HTTP/1.1 200"
                }
                close(fd)
            }
            if ok { latencies.append(clock.now - t0) } else { failures += 1 }
            if k == 40, let tapemu {
                // Once the hostile side has been at it for 2 s: a real terminal payment.
                let p = Process()
                p.executableURL = URL(fileURLWithPath: tapemu)
                p.arguments = ["pay", "--amount", "1250", "--order-id", "hostile-pay", "--gateway", server.url,
                               "--data-dir", dir + "/dev", "--json"]
                let out = Pipe()
                p.standardOutput = out
                p.standardError = FileHandle.nullDevice
                let p0 = clock.now
                try p.run()
                let data = out.fileHandleForReading.readDataToEndOfFile()
                p.waitUntilExit()
                let status = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["status"] as? String ?? "?"
                payLine = "exit \(p.terminationStatus), status \(status), \(Int(ms(clock.now - p0))) ms"
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        stop.signal()
        let counts = server.connectionCounts
        await server.stop()
        let sorted = latencies.sorted()
        func pct(_ q: Double) -> Double { sorted.isEmpty ? .nan : ms(sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]) }
        print(String(format: "GET /health over a fresh connection: %d answered 200, %d not; p50 %.2f ms, p99 %.2f ms, max %.2f ms",
                     latencies.count, failures, pct(0.5), pct(0.99), sorted.last.map(ms) ?? .nan))
        print("tapemu pay --gateway: \(payLine)")
        print("server: \(counts.evictedForRoom) connections closed with 503 to make room, \(counts.timedOut) with 408 at the deadline, \(counts.shed) newcomers shed; hostile side reopened \(reopened.value)")
    }
}

final class ManagedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.lock(); n += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}
