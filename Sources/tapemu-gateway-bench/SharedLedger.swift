import Foundation
import GatewayService
import PaymentGateway
import PostgresClient

/// `--postgres URL`: authorisations/s over HTTP with 1, 2 and 4 `tapemu gateway serve`
/// processes on one PostgreSQL ledger, beside one server on the embedded SQLite ledger, in the
/// same run (32 clients spread over the servers). Each configuration gets a new database.
enum SharedLedgerBench {
    /// A `tapemu gateway serve` child process (the binary next to this one).
    final class Server: @unchecked Sendable {
        let process = Process()
        let url: String

        init(_ arguments: [String]) throws {
            let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            process.executableURL = me.deletingLastPathComponent().appendingPathComponent("tapemu")
            process.arguments = ["gateway", "serve", "--listen", "127.0.0.1:0"] + arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Its first line: "tapemu gateway listening on URL" (blocking read: this is a script).
            var text = ""
            let prefix = "tapemu gateway listening on "
            while !text.contains("\n") {
                let data = pipe.fileHandleForReading.availableData
                guard !data.isEmpty else { break }
                text += String(decoding: data, as: UTF8.self)
            }
            guard let line = text.split(separator: "\n").first, line.hasPrefix(prefix) else {
                struct NoURL: Error, CustomStringConvertible { var description: String }
                throw NoURL(description: "tapemu gateway serve did not start (build it: swift build -c release --product tapemu)")
            }
            url = String(line.dropFirst(prefix.count))
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Spreads `count` authorisations from `clients` tasks over `gateways`.
    struct Spread: Gateway {
        let gateways: [RemoteGateway]
        func pick(_ r: AuthorisationRequest) -> RemoteGateway {
            gateways[Int(r.orderId.split(separator: "-").last.flatMap { Int($0) } ?? 0) % gateways.count]
        }
        func authorize(_ request: AuthorisationRequest, options: GatewayRequestOptions) async throws(GatewayError) -> AuthorisationResponse {
            try await pick(request).authorize(request, options: options)
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

    /// A new database in the server `url` names; its URL.
    static func freshDatabase(_ url: String) throws -> String {
        let admin = try PostgresConnection(url: url)
        let name = "tapemu_bench_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        try admin.query("CREATE DATABASE \(name)")
        let afterScheme = url.range(of: "://")!.upperBound
        var base = url, query = ""
        if let q = url.firstIndex(of: "?") { query = String(url[q...]); base = String(url[..<q]) }
        if let slash = base[afterScheme...].firstIndex(of: "/") { base = String(base[..<slash]) }
        return base + "/" + name + query
    }

    static func run(postgres url: String, directory: String, count: Int) async throws {
        print("tapemu-gateway-bench --postgres: \(count) authorisations per row over HTTP, 32 clients spread over the servers")
        print("machine: \(ProcessInfo.processInfo.activeProcessorCount) core(s); PostgreSQL at \(PostgresURL.redacted(url)); figures vary with whatever else runs")
        var table: [(String, Figures, Int)] = []
        func measure(_ label: String, _ arguments: [[String]]) async throws {
            let servers = try arguments.map { try Server($0) }
            defer { servers.forEach { $0.stop() } }
            let spread = Spread(gateways: servers.map { RemoteGateway(baseURL: $0.url) })
            _ = await load(spread, clients: 32, count: 64, run: "warm")
            let (total, lat, failures) = await load(spread, clients: 32, count: count, run: "run")
            table.append((label, figures(label, total: total, latencies: lat), failures))
        }
        let sqliteDir = fresh(in: directory)
        defer { try? FileManager.default.removeItem(atPath: sqliteDir) }
        try await measure("1 server, SQLite (--data-dir)", [["--data-dir", sqliteDir]])
        for n in [1, 2, 4] {
            let db = try freshDatabase(url)
            try await measure("\(n) server\(n == 1 ? "" : "s"), PostgreSQL (--ledger)",
                              Array(repeating: ["--ledger", db], count: n))
        }
        print("")
        print("| servers | authorisations/s | p50 ms | p99 ms | failed |")
        print("|---------|-----------------:|-------:|-------:|-------:|")
        for (label, f, failed) in table {
            print(String(format: "| %@ | %.0f | %.2f | %.2f | %d |", label, f.rate, f.p50, f.p99, failed))
        }
    }
}
