import CardChannel
import EMVKernel
import ISO7816
import PCSC
import VPCD
import VirtualCard
import BenchTiming
import Glibc
import Synchronization

/// A PC/SC round trip through the real pcscd and vpcd: the same emulated card (visa-qvsdc, served
/// in process by ``VPCDCardServer``) read by a plain C `SCardTransmit` loop, by bare
/// `SCardTransmit` calls from Swift, and by tapemu's `PCSCCardChannel` (and `CardSession`, which
/// adds the per-APDU deadline and the 61xx/6Cxx handling), in interleaved batches within one run,
/// so the ratios are measured side by side.
///
/// The baseline is the C loop on the channel's own connection, run on the channel's own thread:
/// the same pcscd context, the same pcscd thread serving it, the same caller thread, so the only
/// difference left between the C loop and the channel is tapemu's code. pcscd serves each client
/// context on a thread of its own, and where the scheduler puts that thread decides an exchange's
/// time: on this project's 2-vCPU VM, the same C loop on two contexts came out 0.53–1.21× apart
/// with nothing else running, and 0.42–2.47× with the bench pinned to one CPU. A C loop on a
/// context (and a thread) of its own is still measured, for comparison, but it is not the
/// baseline. A second copy of the baseline loop is the noise floor (identical code, so any ratio
/// but 1.00× is the run's own noise); a run whose noise floor is off by more than 5% cannot tell
/// 10% and says so.
///
/// The paths take turns in a fresh random order every round. On a 2-CPU virtual machine the
/// path that runs right after another one is systematically faster or slower (where the
/// scheduler left pcscd, the card server and the caller): with a fixed rotation one path always
/// followed the same other path and the ratios carried that, ±20 %. Random order gives every
/// path the same mix of predecessors.
enum PCSCBench {
    enum Path: Hashable, CaseIterable {
        /// The plain C loop on the channel's connection and thread (the baseline).
        case c
        /// The same C loop again, same connection and thread: the noise floor.
        case c2
        /// The C loop with a PC/SC context of its own, on the channel's thread.
        case cOwnContext
        /// The C loop on the channel's connection, on a thread of its own.
        case cSameConnectionOwnThread
        /// The C loop with a PC/SC context and a thread of its own.
        case cOwnThread
        /// Bare `SCardTransmit` calls from Swift on the channel's connection and thread.
        case bare
        /// `PCSCCardChannel.transmit`.
        case channel
        /// `CardSession.send`.
        case session

        /// Whether the path runs on the channel's thread (its CPU time is counted there).
        var onChannelThread: Bool { self != .cOwnThread && self != .cSameConnectionOwnThread }
    }

    struct Result {
        var reader: String
        var exchanges: Int
        var rounds: Int
        var paths: [Path: LatencyPercentiles]
        /// CPU time of the channel's thread per exchange on each path run there
        /// (CLOCK_THREAD_CPUTIME_ID around each batch: user and kernel time, the syscalls
        /// included; no waiting). Less noisy than the wall times: what tapemu costs in CPU.
        var threadCPU: [Path: Duration]
        /// Whole reads over the PC/SC channel, beside the same commands without the kernel.
        var reads: Reads
        var readAirFloor: Duration

        subscript(_ path: Path) -> LatencyPercentiles { paths[path]! }
        /// `path`'s median over the baseline's (the C loop on the channel's connection).
        func ratio(_ path: Path) -> Double { self[path].p50.inNanoseconds / self[.c].p50.inNanoseconds }
        var nullRatio: Double { ratio(.c2) }
        var channelRatio: Double { ratio(.channel) }
        var sessionRatio: Double { ratio(.session) }
        /// What the channel adds to a bare transmit per exchange (medians, same thread).
        var channelOverhead: Duration { self[.channel].p50 - self[.bare].p50 }
        var sessionOverhead: Duration { self[.session].p50 - self[.bare].p50 }
    }

    /// A whole kernel read over the PC/SC channel, and the same read's commands sent without the
    /// kernel — by the C loop, and through ``CardSession/drive(from:_:)`` with a `next` that only
    /// hands over the following command — taking turns in a random order, on the channel's
    /// connection and thread: what the kernel's own work costs a read, on the caches its exchanges
    /// left (issue 16 compares a read with pyscard's bare transmits, across processes).
    struct Reads {
        /// The kernel read.
        var read: LatencyPercentiles
        /// Its commands by the plain C loop: the sum of their exchanges, the floor of a read.
        var c: LatencyPercentiles
        /// Its commands driven as a read is (one suspension for all), without the kernel.
        var driven: LatencyPercentiles
        /// Where a read's time outside its exchanges goes: the median gap before its first
        /// command, after each exchange, and after the last until the read returned.
        var gaps: [(after: String, p50: Duration)]

        var ratio: Double { read.p50.inNanoseconds / c.p50.inNanoseconds }
        var drivenRatio: Double { driven.p50.inNanoseconds / c.p50.inNanoseconds }
    }

    enum Outcome {
        case measured(Result)
        case skipped(String)
    }

    static func run(slot: Int, batch: Int, rounds: Int, reads: Int) async -> Outcome {
        let reader = VPCDEndpoint.readerName(slot: slot)
        // Is pcscd there, with an empty vpcd slot?
        let report: [ReaderReport]
        do {
            report = try await PCSC.readerReport()
        } catch {
            return .skipped("pcscd: \(error)")
        }
        guard report.contains(where: { $0.name == reader }) else {
            return .skipped("no reader '\(reader)' (is vsmartcard-vpcd installed and pcscd running?)")
        }
        // pcscd polls a vpcd slot about every 400 ms: a card that just left may still show.
        var busy = true
        for _ in 0..<10 {
            let state = (try? await PCSC.readerReport())?.first { $0.name == reader }
            busy = state?.state.flags.contains(.present) ?? true
            if !busy { break }
            try? await Task.sleep(for: .milliseconds(300))
        }
        if busy {
            return .skipped("'\(reader)' holds a card (another program serves that slot); try --slot")
        }
        guard let profile = CardProfiles.named("visa-qvsdc") else { return .skipped("no visa-qvsdc profile") }
        let server = VPCDCardServer(card: EmulatedCard(profile: profile), endpoint: VPCDEndpoint(slot: slot))
        let serving = Task { await server.run() }
        let outcome = await measure(reader: reader, batch: batch, rounds: rounds, reads: reads)
        serving.cancel()
        _ = await serving.value   // the slot is empty again
        return outcome
    }

    private static func measure(reader: String, batch: Int, rounds: Int, reads: Int) async -> Outcome {
        let channel: PCSCCardChannel
        do {
            // Not holding the card: the comparison loops reach it through connections of their
            // own, whose commands the channel's transaction would refuse.
            channel = try await PCSC.openChannel(reader: reader, wait: .seconds(10), holdingCard: false)
        } catch {
            return .skipped("could not open \(reader): \(error)")
        }
        defer { channel.close() }
        var loops: [Path: CTransmitLoop] = [:]
        func closeLoops() async {
            for loop in loops.values { await loop.close() }
        }
        do {
            loops[.c] = try await CTransmitLoop.attach(to: channel)
            loops[.c2] = try await CTransmitLoop.attach(to: channel)
            loops[.cSameConnectionOwnThread] = try await CTransmitLoop.attach(
                to: channel, on: DedicatedThread(name: "tapemu-bench C loop, the channel's connection"))
            loops[.cOwnContext] = try await CTransmitLoop.connect(reader: reader, on: ChannelThreadRunner(channel: channel))
            loops[.cOwnThread] = try await CTransmitLoop.connect(reader: reader)
        } catch {
            await closeLoops()
            return .skipped("plain C loop: \(error)")
        }

        do {
            // The commands of one read (PPSE, SELECT AID, GPO, READ RECORD): every path sends these.
            let sample = try await EMVReader().read(channel: channel, transaction: Transaction(amount: 1000))
            let commands = sample.exchanges.map(\.command)
            guard !commands.isEmpty else {
                await closeLoops()
                return .skipped("the sample read made no exchange")
            }
            let commandBytes = commands.map(\.bytes)
            let session = CardSession(channel: channel)

            // Warm-up of every path.
            for loop in loops.values {
                guard await loop.run(commandBytes, count: 50) != nil else {
                    await closeLoops()
                    return .skipped("SCardTransmit failed in warm-up")
                }
            }
            for i in 0..<50 { _ = try await channel.transmit(commands[i % commands.count]) }
            for i in 0..<50 { _ = try await session.send(commands[i % commands.count]) }
            _ = try await channel.bareTransmitTimes(commands, count: 50)

            let clock = ContinuousClock()
            /// One batch through `send`, each exchange timed, as a read uses the channel: on the
            /// executor it prefers (its PC/SC thread).
            func timedBatch(_ send: (CommandAPDU) async throws(CardChannelError) -> ResponseAPDU) async throws -> [Duration] {
                var s: [Duration] = []
                s.reserveCapacity(batch)
                try await session.run { () async throws(CardChannelError) in
                    for i in 0..<batch {
                        let start = clock.now
                        // The response is let go before the clock is read again, as the bare
                        // path's is (and a read's): its release is part of the exchange's cost.
                        let n = try await send(commands[i % commands.count]).data.count
                        s.append(start.duration(to: clock.now))
                        Sink.add(n)
                    }
                }
                return s
            }
            // Batches of every path in a fresh random order each round.
            var samples: [Path: [Duration]] = [:]
            var cpu: [Path: Duration] = [:]
            for _ in 0..<rounds {
                for path in Path.allCases.shuffled() {
                    let cpuBefore = path.onChannelThread ? await channel.onContextThread { threadCPUTime() } : .zero
                    switch path {
                    case .c, .c2, .cOwnContext, .cSameConnectionOwnThread, .cOwnThread:
                        guard let s = await loops[path]!.run(commandBytes, count: batch) else {
                            throw BenchFailure("SCardTransmit failed")
                        }
                        samples[path, default: []] += s
                    case .bare:
                        samples[path, default: []] += try await channel.bareTransmitTimes(commands, count: batch)
                    case .channel:
                        samples[path, default: []] += try await timedBatch { c throws(CardChannelError) in try await channel.transmit(c) }
                    case .session:
                        // A session per batch, as a read has one of its own (its log of
                        // exchanges stays the size of a read's).
                        let session = CardSession(channel: channel)
                        samples[path, default: []] += try await timedBatch { c throws(CardChannelError) in try await session.send(c) }
                    }
                    if path.onChannelThread {
                        // The thread's CPU clock, read on the thread after the batch.
                        cpu[path, default: .zero] += await channel.onContextThread { threadCPUTime() } - cpuBefore
                    }
                }
            }
            let whole = try await Self.reads(channel: channel, commands: commands, cLoop: loops[.c]!, count: reads)
            await closeLoops()
            return .measured(Result(
                reader: reader, exchanges: batch * rounds, rounds: rounds,
                paths: samples.mapValues { LatencyPercentiles($0)! },
                threadCPU: cpu.mapValues { $0 / (batch * rounds) },
                reads: whole, readAirFloor: ContactlessAirTime().read(sample.exchanges)))
        } catch {
            await closeLoops()
            return .skipped("exchange failed: \(error)")
        }
    }
}

extension PCSCBench {
    /// ``Reads``: `count` rounds after five of warm-up, each a kernel read, its commands by
    /// `cLoop` (on the channel's connection and thread) and its commands driven without the
    /// kernel, in a random order. Runs on the channel's thread, as `tapemu bench --reader` runs
    /// its reads: no hop to it and back inside a timed read.
    static func reads(channel: PCSCCardChannel, commands: [CommandAPDU], cLoop: CTransmitLoop,
                      count: Int) async throws -> Reads {
        enum Path: CaseIterable { case read, c, driven }
        let clock = ContinuousClock(), kernel = EMVReader(), warmup = 5
        let commandBytes = commands.map(\.bytes)
        var samples: [Path: [Duration]] = [:]
        var gaps: [[Duration]] = []
        try await withTaskExecutorPreference(channel.preferredExecutor) { () async throws in
            for round in 0..<(warmup + count) {
                for path in Path.allCases.shuffled() {
                    let start = clock.now
                    let time: Duration
                    switch path {
                    case .read:
                        let read = try await kernel.read(channel: channel, transaction: Transaction(amount: 1000))
                        time = start.duration(to: clock.now)
                        if round >= warmup { gaps.append(Self.gaps(read.exchanges, total: time)) }
                    case .c:
                        guard let times = await cLoop.run(commandBytes, count: commandBytes.count) else {
                            throw BenchFailure("SCardTransmit failed")
                        }
                        time = times.reduce(.zero, +)
                    case .driven:
                        let session = CardSession(channel: channel)
                        let sent = Mutex(0)
                        let end = await session.run {
                            await session.drive(from: commands[0]) { _ in
                                sent.withLock { n in
                                    n += 1
                                    return n < commands.count ? commands[n] : nil
                                }
                            }
                        }
                        if case .failed(let error) = end { throw error }
                        time = start.duration(to: clock.now)
                    }
                    if round >= warmup { samples[path, default: []].append(time) }
                }
            }
        }
        // "after GPO"; a kind the read sends more than once is numbered ("after SELECT 2").
        let kinds = commands.map { ExchangeKind($0) }
        let labels = ["before the first command"] + kinds.indices.map { k in
            let kind = kinds[k]
            guard kinds.count(where: { $0 == kind }) > 1 else { return "after \(kind)" }
            return "after \(kind) \(kinds[...k].count(where: { $0 == kind }))"
        }
        return Reads(read: LatencyPercentiles(samples[.read]!)!, c: LatencyPercentiles(samples[.c]!)!,
                     driven: LatencyPercentiles(samples[.driven]!)!,
                     gaps: labels.indices.map { k in (labels[k], LatencyPercentiles(gaps.map { $0[k] })!.p50) })
    }

    /// The gaps of one read outside its exchanges: before the first (from the session's start),
    /// between each two, and after the last until the read returned (`total` after its start).
    static func gaps(_ exchanges: [Exchange], total: Duration) -> [Duration] {
        var out: [Duration] = []
        var end = Duration.zero
        for e in exchanges {
            out.append(e.start - end)
            end = e.start + e.duration
        }
        out.append(total - end)
        return out
    }
}

/// The calling thread's CPU time (user and system), `CLOCK_THREAD_CPUTIME_ID`.
func threadCPUTime() -> Duration {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return .seconds(t.tv_sec) + .nanoseconds(t.tv_nsec)
}
