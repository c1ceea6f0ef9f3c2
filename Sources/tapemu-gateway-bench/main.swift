// tapemu-gateway-bench: durable authorisations per second and their latency, over HTTP (the
// gateway service and RemoteGateway on loopback) beside the embedded gateway and a raw durable
// SQLite commit loop (WAL, synchronous=FULL) in the same directory, in the same run.
// Run with `swift run -c release tapemu-gateway-bench [--dir DIR] [--count N] [--only embedded|http|health]`
// (`--only` for profiling one path, e.g. under `perf record`).
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
var args = Array(CommandLine.arguments.dropFirst())
while !args.isEmpty {
    let a = args.removeFirst()
    switch a {
    case "--dir" where !args.isEmpty: directory = args.removeFirst()
    case "--only" where !args.isEmpty && ["embedded", "http", "health"].contains(args[0]): only = args.removeFirst()
    case "--postgres" where !args.isEmpty: postgres = args.removeFirst()
    case "--hostile": hostile = true
    case "--seconds" where !args.isEmpty: hostileSeconds = max(1, min(600, Int(args.removeFirst()) ?? 20))
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
        FileHandle.standardError.write(Data("usage: tapemu-gateway-bench [--dir DIR] [--count N] [--only embedded|http|health] [--postgres postgres://USER@HOST:PORT/DB] [--hostile [--seconds N] [--slow N] [--idle N] [--tapemu PATH]]\n".utf8))
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

    for clients in [1, 8, 32] where only == nil || only == "embedded" {
        let dir = fresh(in: directory)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gw = try EmbeddedGateway(dataDirectory: dir)
        _ = await load(gw, clients: clients, count: 50, run: "warm")
        let reference = try raw()
        let (total, lat, failures) = await load(gw, clients: clients, count: count, run: "c\(clients)")
        if failures > 0 { print("  (embedded, \(clients) clients: \(failures) failed)") }
        rows.append(Row(figures: figures("embedded gateway, \(clients) client(s)", total: total, latencies: lat), raw: reference,
                        batches: gw.groupCommitStatistics))
    }
    for clients in [1, 8, 32] where only == nil || only == "http" {
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
        rows.append(Row(figures: figures("HTTP (gateway serve + RemoteGateway), \(clients) client(s)", total: total, latencies: lat),
                        raw: reference, batches: service.gateway.groupCommitStatistics))
        await server.stop()
    }
    // The HTTP stack alone (no ledger, no JSON body): its ceiling on this machine.
    var ceiling: [Figures] = []
    for clients in [1, 32] where only == nil || only == "health" {
        let server = try HTTPServer(configuration: HTTPServerConfiguration(maxConnections: 512),
                                    handler: GatewayService(dataDirectory: fresh(in: directory)).routes())
        struct Health: Gateway {
            let url: String
            func authorize(_ request: AuthorisationRequest, options: GatewayRequestOptions) async throws(GatewayError) -> AuthorisationResponse {
                do {
                    _ = try await HTTPClient().send(HTTPClientRequest(url: url + "/health"))
                } catch {
                    throw GatewayError(.connectionLost, error.reason)
                }
                throw GatewayError(.notFound, "not an authorisation")
            }
            func charges(orderId: String, options: GatewayRequestOptions) async throws(GatewayError) -> [Payment] { [] }
            func transactionList(_ filter: TransactionFilter, options: GatewayRequestOptions) async throws(GatewayError) -> [TransactionSummary] { [] }
            func reverse(uniqueRef: String, options: GatewayRequestOptions) async throws(GatewayError) -> ReversalResponse { throw GatewayError(.notFound, "") }
            func refund(uniqueRef: String, amount: Int?, options: GatewayRequestOptions) async throws(GatewayError) -> RefundResponse { throw GatewayError(.notFound, "") }
            func validateToken(_ token: String, options: GatewayRequestOptions) async throws(GatewayError) -> TokenValidation { .invalid(reason: "") }
            func checkSDKVersion(_ version: String, options: GatewayRequestOptions) async throws(GatewayError) {}
            func termsAccepted(accountId: String, options: GatewayRequestOptions) async throws(GatewayError) -> Bool { true }
            func setTermsAccepted(_ accepted: Bool, accountId: String, options: GatewayRequestOptions) async throws(GatewayError) {}
        }
        let clock = ContinuousClock()
        let t0 = clock.now
        let (_, _, _) = await load(Health(url: server.url), clients: clients, count: count, run: "health")
        let total = clock.now - t0
        ceiling.append(Figures(label: "GET /health (HTTP alone), \(clients) client(s)", rate: Double(count) / (ms(total) / 1000),
                               p50: 0, p99: 0))
        await server.stop()
    }
    print("")
    for c in ceiling { print(String(format: "%@: %.0f requests/s", c.label, c.rate)) }
    print("")
    print("| what | authorisations/s | p50 ms | p99 ms | raw commits/s just before (p50 ms) | × raw | sales per commit (largest) |")
    print("|------|-----------------:|-------:|-------:|-----------------------------------:|------:|------:|")
    for r in rows {
        let f = r.figures
        print(String(format: "| %@ | %.0f | %.2f | %.2f | %.0f (%.2f) | %.2f | %.1f (%d) |", f.label, f.rate, f.p50, f.p99, r.raw.rate,
                     r.raw.p50, f.rate / r.raw.rate, Double(r.batches.sales) / Double(max(1, r.batches.batches)),
                     r.batches.largest))
    }
    if let http32 = rows.last, only == nil || only == "http" {
        let ratio = http32.figures.rate / http32.raw.rate
        print("")
        print(String(format: "goal: HTTP at 32 clients ≥ 0.5 × the raw commit rate: %.2f × (%@)", ratio,
                     ratio >= 0.5 ? "met" : "missed"))
    }
} catch {
    FileHandle.standardError.write(Data("tapemu-gateway-bench: \(error)\n".utf8))
    exit(1)
}
