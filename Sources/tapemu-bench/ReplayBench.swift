import CardChannel
import EMVKernel
import Timing
import APDUTrace
import BenchTiming

/// Replay of the whole `apdu-traces/` corpus through the kernel, as `tapemu replay` does it:
/// unpaced for throughput, paced (real clock) for how closely the recorded timing is reproduced.
enum ReplayBench {
    struct Unpaced {
        var traces: Int
        var rounds: Int
        var exchanges: Int
        var elapsed: Duration
        /// Traces whose replay diverged from the recording (mismatch or trace ended early).
        var diverged: [String]
        var exchangesPerSecond: Double { Double(exchanges) / elapsed.inNanoseconds * 1e9 }
    }

    struct Paced {
        var exchanges: Int
        /// |measured − recorded| per exchange.
        var error: LatencyPercentiles
        /// The exchange with the largest error.
        var worst: String
        var elapsed: Duration
    }

    private struct Prepared {
        var name: String
        var trace: APDUTrace
        var setup: TraceReplaySetup
        var reader: EMVReader
    }

    private static func prepare(_ corpus: Corpus) -> [Prepared] {
        corpus.entries.map { e in
            let setup = TraceReplaySetup(trace: e.trace)
            return Prepared(name: e.name, trace: e.trace, setup: setup, reader: EMVReader(configuration: setup.configuration, environment: setup.environment ?? .system))
        }
    }

    /// Plays one trace; returns the exchanges made and whether the replay diverged.
    private static func play(_ p: Prepared, paced: Bool, clock: MonotonicClock) async -> (exchanges: [Exchange], diverged: Bool) {
        let channel = TraceReplayChannel(trace: p.trace, matching: p.setup.matching, paced: paced, clock: clock)
        do {
            let read = try await p.reader.read(channel: channel, transaction: p.setup.transaction, clock: clock)
            return (read.exchanges, false)
        } catch {
            let code = error.channelError?.code
            return (error.partial?.exchanges ?? [], code == .traceMismatch || code == .traceEnded)
        }
    }

    static func unpaced(_ corpus: Corpus, rounds: Int, warmupRounds: Int) async -> Unpaced {
        let prepared = prepare(corpus)
        let clock = MonotonicClock.continuous
        var diverged = Set<String>()
        for _ in 0..<warmupRounds {
            for p in prepared { Sink.add(await play(p, paced: false, clock: clock).exchanges.count) }
        }
        var exchanges = 0
        let start = Harness.clock.now
        for _ in 0..<rounds {
            for p in prepared {
                let (x, bad) = await play(p, paced: false, clock: clock)
                exchanges += x.count
                if bad { diverged.insert(p.name) }
            }
        }
        let elapsed = start.duration(to: Harness.clock.now)
        Sink.add(exchanges)
        return Unpaced(traces: prepared.count, rounds: rounds, exchanges: exchanges, elapsed: elapsed,
                       diverged: diverged.sorted())
    }

    /// Each trace once, paced on the real clock: each exchange's measured time against the card
    /// time the trace recorded for it.
    static func paced(_ corpus: Corpus) async -> Paced? {
        let prepared = prepare(corpus)
        let clock = MonotonicClock.continuous
        var errors: [Duration] = []
        var worst = (error: Duration.zero, what: "")
        let start = Harness.clock.now
        for p in prepared {
            let recorded = p.trace.exchanges
            let (played, _) = await play(p, paced: true, clock: clock)
            for (i, x) in played.enumerated() where i < recorded.count {
                guard let expected = recorded[i].cardTime else { continue }
                let e = x.duration - expected
                let magnitude = e < .zero ? .zero - e : e
                errors.append(magnitude)
                if magnitude > worst.error {
                    worst = (magnitude, "\(p.name) exchange \(i + 1): recorded \(BenchFigure.time(expected)), replayed \(BenchFigure.time(x.duration))")
                }
            }
        }
        let elapsed = start.duration(to: Harness.clock.now)
        guard let stats = LatencyPercentiles(errors) else { return nil }
        Sink.add(errors.count)
        return Paced(exchanges: errors.count, error: stats, worst: worst.what, elapsed: elapsed)
    }
}
