// Keep-alive load and the anchors it is measured against (issue 38): `GET /health` from
// clients that each keep one connection, against `gateway serve`'s stack and against nginx
// (Debian's nginx-light, started here on a private port with a private configuration and
// temporary directories, stopped after), and wrk's figure for both where wrk is installed.
import Foundation
import Synchronization

/// `clients` threads, each with one kept TCP connection, sending `GET path` one after the
/// other (no pipelining) until the deadline. A plain blocking-socket client, so that the
/// client's cost is small and the same for every server it is pointed at.
enum KeepAliveLoad {
    struct Result {
        var requests: Int
        var seconds: Double
        var p50: Double
        var p99: Double
        /// Connections that ended under a request (the server closed them), and reconnects.
        var errors: Int
        var rate: Double { Double(requests) / seconds }
    }

    static func run(port: UInt16, path: String, clients: Int, duration: Duration) async -> Result {
        await withCheckedContinuation { (c: CheckedContinuation<Result, Never>) in
            let t = Thread { c.resume(returning: runBlocking(port: port, path: path, clients: clients, duration: duration)) }
            t.start()
        }
    }

    private final class Shared: @unchecked Sendable {
        let lock = NSLock()
        var latencies: [UInt64] = []
        var errors = 0
        let done = DispatchGroup()
    }

    private static func runBlocking(port: UInt16, path: String, clients: Int, duration: Duration) -> Result {
        let shared = Shared()
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + duration
        for _ in 0..<clients {
            shared.done.enter()
            let t = Thread {
                let (lat, errors) = client(port: port, path: path, until: deadline, clock: clock)
                shared.lock.lock()
                shared.latencies += lat
                shared.errors += errors
                shared.lock.unlock()
                shared.done.leave()
            }
            t.stackSize = 256 * 1024
            t.start()
        }
        shared.done.wait()
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let sorted = shared.latencies.sorted()
        func pct(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1e6
        }
        return Result(requests: sorted.count, seconds: seconds, p50: pct(0.5), p99: pct(0.99), errors: shared.errors)
    }

    private static func connectLoopback(_ port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        sin.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let r = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { close(fd); return -1 }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// One client's loop: its latencies (ns) and its broken connections.
    private static func client(port: UInt16, path: String, until deadline: ContinuousClock.Instant,
                               clock: ContinuousClock) -> ([UInt64], Int) {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUser-Agent: tapemu-gateway-bench\r\n\r\n".utf8)
        var latencies: [UInt64] = []
        latencies.reserveCapacity(1 << 16)
        var errors = 0
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var fd = connectLoopback(port)
        defer { if fd >= 0 { close(fd) } }
        while clock.now < deadline {
            if fd < 0 {
                fd = connectLoopback(port)
                if fd < 0 { errors += 1; continue }
            }
            let t0 = DispatchTime.now().uptimeNanoseconds
            let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent == request.count else { close(fd); fd = -1; errors += 1; continue }
            // Read one answer: the headers, then Content-Length bytes.
            var have = 0
            var answered = false
            var keep = true
            while true {
                if have == buffer.count { break }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + have, $0.count - have, 0) }
                if n <= 0 { break }
                have += n
                if let (headerEnd, length, closes) = parseHead(buffer, have) {
                    if have >= headerEnd + length {
                        answered = true
                        keep = !closes
                        break
                    }
                }
            }
            if answered {
                latencies.append(DispatchTime.now().uptimeNanoseconds - t0)
                if !keep { close(fd); fd = -1 }
            } else {
                close(fd)
                fd = -1
                errors += 1
            }
        }
        return (latencies, errors)
    }

    /// Where the head ends, the Content-Length, and whether the server closes after the answer.
    private static func parseHead(_ b: [UInt8], _ count: Int) -> (Int, Int, Bool)? {
        guard count >= 4 else { return nil }
        var end = -1
        for i in 3..<count where b[i] == 10 && b[i - 1] == 13 && b[i - 2] == 10 && b[i - 3] == 13 {
            end = i + 1
            break
        }
        guard end > 0 else { return nil }
        let head = String(decoding: b[0..<end], as: UTF8.self).lowercased()
        var length = 0
        if let r = head.range(of: "\r\ncontent-length:") {
            let digits = head[r.upperBound...].drop { $0 == " " }.prefix { $0.isNumber }
            length = Int(digits) ?? 0
        }
        return (end, length, head.contains("\r\nconnection: close"))
    }
}

/// nginx serving `body` at `GET /health` on a private port: its own configuration, pid file,
/// logs and temp paths in a temporary directory; two worker processes (one per core here).
final class NginxAnchor {
    let port: UInt16
    private let process: Process
    private let directory: String

    static var binary: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    init?(body: String, in parent: String) {
        guard let nginx = Self.binary, let free = Self.freePort() else { return nil }
        port = free
        directory = (parent as NSString).appendingPathComponent("tapemu-nginx-\(UUID().uuidString)")
        let www = directory + "/www"
        try? FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: www + "/health", contents: Data(body.utf8))
        let conf = """
        worker_processes 2;
        daemon off;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log warn;
        events { worker_connections 1024; }
        http {
            access_log off;
            keepalive_requests 1000000;
            client_body_temp_path \(directory)/body;
            proxy_temp_path \(directory)/proxy;
            fastcgi_temp_path \(directory)/fastcgi;
            uwsgi_temp_path \(directory)/uwsgi;
            scgi_temp_path \(directory)/scgi;
            server {
                listen 127.0.0.1:\(port);
                root \(www);
                location = /health { default_type application/json; }
            }
        }
        """
        FileManager.default.createFile(atPath: directory + "/nginx.conf", contents: Data(conf.utf8))
        process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", directory, "-e", directory + "/error.log", "-c", directory + "/nginx.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        // Ready when it accepts (or gone when it exited: a bad configuration).
        for _ in 0..<500 where process.isRunning {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = free.bigEndian
            sin.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            let r = withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(fd)
            if r == 0 { return }
            usleep(10_000)
        }
        stop()
        return nil
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func freePort() -> UInt16? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { return nil }
        var out = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &out) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return UInt16(bigEndian: out.sin_port)
    }
}

/// wrk (Debian's `wrk`), when installed: its requests/s against `url` with 2 threads and
/// `connections` kept connections.
enum Wrk {
    static var binary: String? {
        ["/usr/bin/wrk", "/usr/local/bin/wrk"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func rate(url: String, connections: Int, seconds: Int) -> Double? {
        guard let wrk = binary else { return nil }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: wrk)
        p.arguments = ["-t\(min(2, connections))", "-c\(connections)", "-d\(seconds)s", url]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return nil }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Requests/sec:") }) else { return nil }
        return Double(line.dropFirst("Requests/sec:".count).trimmingCharacters(in: .whitespaces))
    }
}
