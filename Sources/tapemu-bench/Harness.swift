import EMVKernel
import Foundation
import BenchTiming

/// How each benchmark is timed (STYLE.md, "Tests and benchmarks"): with `ContinuousClock`, after
/// a warm-up, over several runs; every body returns a count that goes into ``Sink`` and is
/// printed at the end, so the optimiser cannot drop the work. Nothing here asserts a time.
enum Harness {
    static let clock = ContinuousClock()

    /// Times `body` in `runs` batches of `iterations` calls after `warmup` calls; the result is
    /// per call, from each batch (the median batch is the figure to quote).
    static func batches(warmup: Int, runs: Int, iterations: Int, _ body: () throws -> Int) rethrows -> PerCall {
        var sink = 0
        for _ in 0..<warmup { sink &+= try body() }
        var perCall: [Duration] = []
        perCall.reserveCapacity(runs)
        for _ in 0..<runs {
            let start = clock.now
            for _ in 0..<iterations { sink &+= try body() }
            perCall.append(start.duration(to: clock.now) / iterations)
        }
        Sink.add(sink)
        return PerCall(samples: perCall, iterations: iterations)
    }

    /// Times each call of an async `body` on its own after `warmup` calls: one sample per call.
    static func each(warmup: Int, count: Int, _ body: () async throws -> Int) async rethrows -> [Duration] {
        var sink = 0
        for _ in 0..<warmup { sink &+= try await body() }
        var samples: [Duration] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let start = clock.now
            sink &+= try await body()
            samples.append(start.duration(to: clock.now))
        }
        Sink.add(sink)
        return samples
    }
}

/// Per-call times from batches.
struct PerCall {
    var samples: [Duration]
    var iterations: Int
    var median: Duration { LatencyPercentiles(samples)?.p50 ?? .zero }
    var best: Duration { samples.min() ?? .zero }
}

/// Where every benchmark's returned count goes; printed once at the end.
enum Sink {
    nonisolated(unsafe) private static var total = 0
    static func add(_ n: Int) { total &+= n }
    static var value: Int { total }
}

/// Formatting of figures.
enum Figure {
    /// `1.23 M/s`, `456 k/s`.
    static func rate(_ perSecond: Double) -> String {
        if perSecond >= 1e6 { return String(format: "%.2f M/s", perSecond / 1e6) }
        if perSecond >= 1e3 { return String(format: "%.0f k/s", perSecond / 1e3) }
        return String(format: "%.0f /s", perSecond)
    }

    static func ratio(_ x: Double) -> String { String(format: "%.2f×", x) }
}
