// tapemu-gateway-bench: durable authorisations per second and their latency, over HTTP (the
// gateway service and RemoteGateway on loopback) beside the embedded gateway and a raw durable
// SQLite commit loop (WAL, synchronous=FULL) in the same directory, in the same run.
// Run with `swift run -c release tapemu-gateway-bench [--dir DIR] [--count N] [--only embedded|http|auth|health]`
// (`--only` for profiling one path, e.g. under `perf record`; `auth`: both authorisation paths). The HTTP clients keep their
// connections (RemoteGateway's, one per process); `GET /health` is measured from keep-alive clients
// against the gateway's stack and against nginx (nginx-light, started on a private port with a
// private configuration, stopped after) and with wrk where installed (KeepAlive.swift); the last
// lines print issue 38's ratios (`--health-seconds N` per health run, 3 by default). The
// authorisation rows come in pairs, the embedded gateway then HTTP with the same clients, so
// each pair meets the same disk; `--rounds N` repeats the pairs and the ratios take the medians.
// With `--hostile [--seconds N] [--tapemu PATH]`: an honest client's latency and a `tapemu pay`
// while 300 slow-header and 300 idle connections are held (HostileClients.swift).
// With `--postgres URL`: 1, 2 and 4 `tapemu gateway serve` processes on one PostgreSQL ledger
// beside one on SQLite (build the tapemu product in the same configuration first).
// Prints figures; asserts nothing.
import BERTLV
import PaymentRules
import Foundation
import GatewayService
import HTTPClient
import HTTPServer
import PaymentGateway
import Synchronization

#if DEBUG
print("DEBUG BUILD: these figures mean little. Run  swift run -c release tapemu-gateway-bench")
#endif

var directory = FileManager.default.temporaryDirectory.path
var count = 2000
var only: String?
var postgres: String?
var hostile = false
var hostileSeconds = 20
var tapemuPath: String?
var hostileSlow = 300
var hostileIdle = 300
var healthSeconds = 3
var rounds = 1
var args = Array(CommandLine.arguments.dropFirst())
while !args.isEmpty {
    let a = args.removeFirst()
    switch a {
    case "--dir" where !args.isEmpty: directory = args.removeFirst()
    case "--only" where !args.isEmpty && ["embedded", "http", "auth", "health"].contains(args[0]): only = args.removeFirst()
    case "--postgres" where !args.isEmpty: postgres = args.removeFirst()
    case "--hostile": hostile = true
    case "--seconds" where !args.isEmpty: hostileSeconds = max(1, min(600, Int(args.removeFirst()) ?? 20))
    case "--health-seconds" where !args.isEmpty: healthSeconds = max(1, min(60, Int(args.removeFirst()) ?? 3))
    case "--rounds" where !args.isEmpty: rounds = max(1, min(20, Int(args.removeFirst()) ?? 1))
    case "--tapemu" where !args.isEmpty: tapemuPath = args.removeFirst()
    case "--slow" where !args.isEmpty: hostileSlow = max(0, min(2000, Int(args.removeFirst()) ?? 300))
    case "--idle" where !args.isEmpty: hostileIdle = max(0, min(2000, Int(args.removeFirst()) ?? 300))
    case "--count" where !args.isEmpty:
        guard let n = Int(args.removeFirst()), n >= 32 else {
            FileHandle.standardError.write(Data("tapemu-gateway-bench: --count takes 32 or more\n".utf8))
            exit(64)
        }
        count = n
    default:
        FileHandle.standardError.write(Data("usage: tapemu-gateway-bench [--dir DIR] [--count N] [--only embedded|http|auth|health] [--rounds N] [--health-seconds N] [--postgres postgres://USER@HOST:PORT/DB] [--hostile [--seconds N] [--slow N] [--idle N] [--tapemu PATH]]\n".utf8))
        exit(64)
    }
}

func ms(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}

struct Figures {
    var label: String
    var rate: Double
    var p50: Double
    var p99: Double
}

func figures(_ label: String, total: Duration, latencies: [Duration]) -> Figures {
    let sorted = latencies.sorted()
    func pct(_ p: Double) -> Double { ms(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) }
    return Figures(label: label, rate: Double(latencies.count) / (ms(total) / 1000), p50: pct(0.50), p99: pct(0.99))
}

func request(_ i: Int, run: String) -> AuthorisationRequest {
    AuthorisationRequest(orderId: "bench-\(run)-\(i)", amount: 1000, currency: "EUR",
                         card: CardData(pan: PAN("4012888888881881")!, expiry: "2812"))
}

/// `clients` tasks share `count` authorisations; each records its latencies.
func load(_ gateway: any Gateway, clients: Int, count: Int, run: String) async -> (Duration, [Duration], Int) {
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }
    let next = Counter()
    let clock = ContinuousClock()
    let start = clock.now
    let results = await withTaskGroup(of: ([Duration], Int).self) { group in
        for _ in 0..<clients {
            group.addTask {
                var lat: [Duration] = []
                var failures = 0
                while true {
                    let i = next.value.wrappingAdd(1, ordering: .relaxed).oldValue
                    if i >= count { break }
                    let t0 = clock.now
                    do {
                        _ = try await gateway.authorize(request(i, run: run))
                        lat.append(clock.now - t0)
                    } catch {
                        failures += 1
                    }
                }
                return (lat, failures)
            }
        }
        var all: [Duration] = []
        var failures = 0
        for await (l, f) in group {
            all += l
            failures += f
        }
        return (all, failures)
    }
    return (clock.now - start, results.0, results.1)
}

/// `GET path` through HTTPClient (the terminals' client: libcurl and its thread bridge), by
/// `clients` tasks for `seconds`: what the client itself costs a request, no ledger in the way.
func clientLoad(url: String, clients: Int, seconds: Int) async -> (rate: Double, p50: Double, p99: Double, errors: Int) {
    let client = HTTPClient()
    let clock = ContinuousClock()
    let start = clock.now, end = start + .seconds(seconds)
    let (lat, errors) = await withTaskGroup(of: ([Duration], Int).self) { group in
        for _ in 0..<clients {
            group.addTask {
                var lat: [Duration] = []
                var errors = 0
                while clock.now < end {
                    let t0 = clock.now
                    do {
                        let r = try await client.send(HTTPClientRequest(url: url, idempotent: true))
                        if r.status == 200 { lat.append(clock.now - t0) } else { errors += 1 }
                    } catch {
                        errors += 1
                    }
                }
                return (lat, errors)
            }
        }
        var all: [Duration] = [], errors = 0
        for await (l, e) in group { all += l; errors += e }
        return (all, errors)
    }
    let f = figures("client", total: clock.now - start, latencies: lat.isEmpty ? [.zero] : lat)
    return (lat.isEmpty ? 0 : f.rate, f.p50, f.p99, errors)
}

func fresh(in directory: String) -> String {
    let d = (directory as NSString).appendingPathComponent("tapemu-gwbench-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    return d
}

if hostile {
    do {
        try await HostileBench.run(tapemu: tapemuPath, seconds: hostileSeconds, slowCount: hostileSlow, idleCount: hostileIdle)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("tapemu-gateway-bench: \(error)\n".utf8))
        exit(1)
    }
}

if let postgres {
    do {
        try await SharedLedgerBench.run(postgres: postgres, directory: directory, count: count)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("tapemu-gateway-bench: \(error)\n".utf8))
        exit(1)
    }
}

print("tapemu-gateway-bench: \(count) durable authorisations per row, in \(directory)")
print("machine: \(ProcessInfo.processInfo.activeProcessorCount) core(s); figures vary with whatever else runs")
// The disk's fsync time moves with whatever else writes to it (here: other builds), by 20× in
// a minute; so every row is measured right after its own raw commit loop, and compared with it.
struct Row {
    var figures: Figures
    var raw: Figures
    /// The ledger's group commits (warm-up included): batches, sales, largest batch.
    var batches: (batches: Int, sales: Int, largest: Int)
}
var rows: [Row] = []
do {
    let rawDir = fresh(in: directory)
    defer { try? FileManager.default.removeItem(atPath: rawDir) }
    _ = try DurableCommitProbe.run(directory: rawDir, commits: 50) // warm-up
    let clock = ContinuousClock()
    func raw() throws -> Figures {
        let t0 = clock.now
        let lat = try DurableCommitProbe.run(directory: rawDir, commits: count / 2)
        return figures("raw", total: clock.now - t0, latencies: lat)
    }

    func embeddedRow(_ clients: Int) async throws -> Row {
        let dir = fresh(in: directory)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gw = try EmbeddedGateway(dataDirectory: dir)
        _ = await load(gw, clients: clients, count: 50, run: "warm")
        let reference = try raw()
        let (total, lat, failures) = await load(gw, clients: clients, count: count, run: "c\(clients)")
        if failures > 0 { print("  (embedded, \(clients) clients: \(failures) failed)") }
        return Row(figures: figures("embedded gateway, \(clients) client(s)", total: total, latencies: lat), raw: reference,
                   batches: gw.groupCommitStatistics)
    }
    func httpRow(_ clients: Int) async throws -> Row {
        let dir = fresh(in: directory)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let service = try GatewayService(dataDirectory: dir)
        let server = try HTTPServer(configuration: HTTPServerConfiguration(maxConnections: 512), handler: service.routes())
        let remote = RemoteGateway(baseURL: server.url,
                                   deviceToken: service.gateway.issueToken(accountId: service.accountId, pointOfSaleId: "bench"))
        _ = await load(remote, clients: clients, count: 50, run: "warm")
        let reference = try raw()
        let (total, lat, failures) = await load(remote, clients: clients, count: count, run: "c\(clients)")
        if failures > 0 { print("  (HTTP, \(clients) clients: \(failures) failed)") }
        await server.stop()
        return Row(figures: figures("HTTP (gateway serve + RemoteGateway, kept connections), \(clients) client(s)", total: total, latencies: lat),
                   raw: reference, batches: service.gateway.groupCommitStatistics)
    }
    for _ in 1...rounds {
        for clients in [1, 8, 32] {
            if only == nil || only == "embedded" || only == "auth" { rows.append(try await embeddedRow(clients)) }
            if only == nil || only == "http" || only == "auth" { rows.append(try await httpRow(clients)) }
        }
    }
    // The HTTP stack alone (no ledger, no JSON body) against nginx serving the same 15 bytes,
    // both from clients that keep their connection, interleaved.
    var health: [(label: String, gateway: Double, nginx: Double?)] = []
    if only == nil || only == "health" {
        let server = try HTTPServer(configuration: HTTPServerConfiguration(maxConnections: 512),
                                    handler: GatewayService(dataDirectory: fresh(in: directory)).routes())
        let nginx = NginxAnchor(body: #"{"status":"ok"}"#, in: directory)
        if nginx == nil {
            print("nginx: not installed (Debian nginx-light) or it did not start: no nginx anchor")
        }
        let duration = Duration.seconds(healthSeconds)
        for round in 1...2 {
            for clients in [1, 32] {
                let g = await KeepAliveLoad.run(port: server.port, path: "/health", clients: clients, duration: duration)
                var n: KeepAliveLoad.Result?
                if let nginx { n = await KeepAliveLoad.run(port: nginx.port, path: "/health", clients: clients, duration: duration) }
                print(String(format: "GET /health, %d keep-alive client(s), round %d: gateway %.0f/s (p50 %.3f ms, p99 %.3f ms, %d broken)",
                             clients, round, g.rate, g.p50, g.p99, g.errors)
                      + (n.map { String(format: "; nginx %.0f/s (p50 %.3f ms, p99 %.3f ms, %d broken)", $0.rate, $0.p50, $0.p99, $0.errors) } ?? ""))
                health.append(("bench client, \(clients) keep-alive", g.rate, n?.rate))
            }
            if Wrk.binary != nil {
                let g = Wrk.rate(url: server.url + "/health", connections: 32, seconds: healthSeconds)
                let n = nginx.flatMap { Wrk.rate(url: "http://127.0.0.1:\($0.port)/health", connections: 32, seconds: healthSeconds) }
                if let g {
                    print(String(format: "GET /health, wrk -t2 -c32 -d%ds, round %d: gateway %.0f/s", healthSeconds, round, g)
                          + (n.map { String(format: "; nginx %.0f/s", $0) } ?? ""))
                    health.append(("wrk, 32 keep-alive", g, n))
                }
            }
        }
        for clients in [1, 32] {
            let c = await clientLoad(url: server.url + "/health", clients: clients, seconds: healthSeconds)
            print(String(format: "GET /health through HTTPClient (the terminals' client), %d client(s): %.0f/s (p50 %.3f ms, p99 %.3f ms, %d failed)",
                         clients, c.rate, c.p50, c.p99, c.errors))
        }
        nginx?.stop()
        await server.stop()
    }
    print("")
    print("| what | authorisations/s | p50 ms | p99 ms | raw commits/s just before (p50 ms) | × raw | sales per commit (largest) |")
    print("|------|-----------------:|-------:|-------:|-----------------------------------:|------:|------:|")
    for r in rows {
        let f = r.figures
        print(String(format: "| %@ | %.0f | %.2f | %.2f | %.0f (%.2f) | %.2f | %.1f (%d) |", f.label, f.rate, f.p50, f.p99, r.raw.rate,
                     r.raw.p50, f.rate / r.raw.rate, Double(r.batches.sales) / Double(max(1, r.batches.batches)),
                     r.batches.largest))
    }
    // Issue 38's targets, from this run.
    print("")
    func mean(_ xs: [Double]) -> Double { xs.isEmpty ? 0 : xs.reduce(0, +) / Double(xs.count) }
    for label in ["bench client, 32 keep-alive", "wrk, 32 keep-alive"] {
        let pairs = health.filter { $0.label == label && $0.nginx != nil }
        guard !pairs.isEmpty else { continue }
        let ratio = mean(pairs.map(\.gateway)) / mean(pairs.compactMap(\.nginx))
        print(String(format: "ratio: GET /health vs nginx, %@ clients (%d rounds): %.2f× (target ≥ 0.8×: %@)",
                     label, pairs.count, ratio, ratio >= 0.8 ? "met" : "missed"))
    }
    /// The median rate and p99 of the rows of `prefix` with `clients` clients (one per round).
    func row(_ prefix: String, _ clients: Int) -> Figures? {
        let all = rows.map(\.figures).filter { $0.label.hasPrefix(prefix) && $0.label.hasSuffix(", \(clients) client(s)") }
        guard !all.isEmpty else { return nil }
        func median(_ xs: [Double]) -> Double {
            let s = xs.sorted()
            return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
        }
        return Figures(label: all[0].label, rate: median(all.map(\.rate)), p50: median(all.map(\.p50)), p99: median(all.map(\.p99)))
    }
    if rounds > 1 { print("(ratios below: medians of \(rounds) rounds)") }
    if let e32 = row("embedded", 32), let h32 = row("HTTP", 32) {
        let r = h32.rate / e32.rate
        print(String(format: "ratio: authorisations over HTTP vs embedded, 32 keep-alive clients: %.2f× (target ≥ 0.7×: %@)", r, r >= 0.7 ? "met" : "missed"))
        let p = h32.p99 / e32.p99
        print(String(format: "ratio: p99 over HTTP vs embedded, 32 clients: %.2f× (%.2f / %.2f ms; target ≤ 2×: %@)", p, h32.p99, e32.p99, p <= 2 ? "met" : "missed"))
    }
    if let e1 = row("embedded", 1), let h1 = row("HTTP", 1) {
        let r = h1.rate / e1.rate
        print(String(format: "ratio: authorisations over HTTP vs embedded, 1 keep-alive client: %.2f× (target ≥ 0.5×: %@)", r, r >= 0.5 ? "met" : "missed"))
    }
} catch {
    FileHandle.standardError.write(Data("tapemu-gateway-bench: \(error)\n".utf8))
    exit(1)
}
