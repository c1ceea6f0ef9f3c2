import CardChannel
import EMVKernel
import Foundation
import VirtualCard

/// Memory over many reads: resident set size before and after. Flat means no per-read growth.
enum MemoryBench {
    struct Result {
        var reads: Int
        var before: Int
        var middle: Int
        var after: Int
        var elapsed: Duration
        /// Growth per read over the second half (the first half may still fill caches).
        var bytesPerRead: Double { Double(after - middle) / Double(reads / 2) }
    }

    /// The resident set size (`VmRSS` of /proc/self/status), in bytes.
    static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kb = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            return kb * 1024
        }
        return 0
    }

    static func run(reads: Int, warmup: Int) async throws -> Result {
        guard let profile = CardProfiles.named("visa-qvsdc") else { throw BenchFailure("no visa-qvsdc profile") }
        let reader = EMVReader()
        let transaction = Transaction(amount: 1000)
        var card = EmulatedCard(profile: profile)
        var used = 0
        func one() async throws -> Int {
            used += 1
            if used == KernelBench.readsPerCard { card = EmulatedCard(profile: profile); used = 0 }
            return try await reader.read(channel: VirtualCardChannel(card: card, simulatesCardTime: false),
                                         transaction: transaction).exchanges.count
        }
        var n = 0
        for _ in 0..<warmup { n &+= try await one() }
        let before = residentBytes()
        let start = Harness.clock.now
        for _ in 0..<(reads / 2) { n &+= try await one() }
        let middle = residentBytes()
        for _ in 0..<(reads - reads / 2) { n &+= try await one() }
        let after = residentBytes()
        let elapsed = start.duration(to: Harness.clock.now)
        Sink.add(n)
        return Result(reads: reads, before: before, middle: middle, after: after, elapsed: elapsed)
    }
}
