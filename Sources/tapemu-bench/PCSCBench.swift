import CardChannel
import EMVKernel
import ISO7816
import PCSC
import VirtualCard
import BenchTiming
import Glibc

/// A PC/SC round trip through the real pcscd and vpcd: the same emulated card (visa-qvsdc, served
/// in process by ``VPCDCardServer``) read by a plain C `SCardTransmit` loop, by bare
/// `SCardTransmit` calls on the channel's own thread and connection, and by tapemu's
/// `PCSCCardChannel` (and `CardSession`, which adds the per-APDU deadline and the 61xx/6Cxx
/// handling), in interleaved batches within one run, so the ratios are measured side by side.
///
/// Each of tapemu's paths is compared with the C loop in a pair of its own: the two take turns, so
/// each of the two threads does the same share of the work. A third pair is the noise floor: the
/// same C loop on two threads of its own. On this project's 2-vCPU VM with nothing else running,
/// those two identical loops came out 0.53–1.21× apart (an idle vCPU polls briefly, then halts;
/// where the scheduler wakes each thread decides its latency, batch by batch); with another
/// process keeping one core busy, 1.00×. A run whose noise floor is off 1.00× by more than 5%
/// cannot tell 10%, and says so. What tapemu adds to a bare transmit is measured apart, every
/// path on the channel's own thread, in wall time and in the CPU time of that thread.
///
/// The paths take turns in a fresh random order every round. On a 2-CPU virtual machine the
/// path that runs right after another one is systematically faster or slower (where the
/// scheduler left pcscd, the card server and the caller; how long an idle vCPU polls before it
/// halts): with a fixed rotation one path always followed the same other path and the ratios
/// carried that, ±20 %. Random order gives every path the same mix of predecessors.
enum PCSCBench {
    enum Path: Hashable {
        case c, c2, cShared, bare, channel, session
    }

    struct Result {
        var reader: String
        var exchanges: Int
        var rounds: Int
        /// The C loop and the same loop on a second thread of its own, taking turns: the noise
        /// floor of a pair (identical code, so any ratio but 1.00× is the machine's).
        var nullPair: (c: LatencyPercentiles, c2: LatencyPercentiles)
        /// The C loop on a thread of its own and `PCSCCardChannel.transmit`, taking turns.
        var pairChannel: (c: LatencyPercentiles, path: LatencyPercentiles)
        /// The C loop on a thread of its own and `CardSession.send`, taking turns.
        var pairSession: (c: LatencyPercentiles, path: LatencyPercentiles)
        /// On the channel's thread, taking turns: the same C loop (its own PC/SC context), bare
        /// `SCardTransmit` calls on the channel's connection, the channel, the session.
        var cShared: LatencyPercentiles
        var bare: LatencyPercentiles
        var channel: LatencyPercentiles
        var session: LatencyPercentiles
        /// CPU time of the channel's thread per exchange on each path of the shared interleaving
        /// (CLOCK_THREAD_CPUTIME_ID around each batch: user and kernel time, the syscalls
        /// included; no waiting). Less noisy than the wall times: what tapemu costs in CPU.
        var threadCPU: [Path: Duration]
        /// A full kernel read over the PC/SC channel.
        var read: LatencyPercentiles
        var readAirFloor: Duration
        var nullRatio: Double { nullPair.c2.p50.inNanoseconds / nullPair.c.p50.inNanoseconds }
        var channelRatio: Double { pairChannel.path.p50.inNanoseconds / pairChannel.c.p50.inNanoseconds }
        var sessionRatio: Double { pairSession.path.p50.inNanoseconds / pairSession.c.p50.inNanoseconds }
        /// What the channel adds to a bare transmit per exchange (medians, same thread).
        var channelOverhead: Duration { channel.p50 - bare.p50 }
        var sessionOverhead: Duration { session.p50 - bare.p50 }
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
            channel = try await PCSC.openChannel(reader: reader, wait: .seconds(10))
        } catch {
            return .skipped("could not open \(reader): \(error)")
        }
        defer { channel.close() }
        let c: CTransmitLoop, c2: CTransmitLoop, cShared: CTransmitLoop
        do {
            c = try await CTransmitLoop.connect(reader: reader)
        } catch {
            return .skipped("plain C loop: \(error)")
        }
        do {
            c2 = try await CTransmitLoop.connect(reader: reader)
        } catch {
            await c.close()
            return .skipped("second plain C loop: \(error)")
        }
        do {
            cShared = try await CTransmitLoop.connect(reader: reader, on: ChannelThreadRunner(channel: channel))
        } catch {
            await c.close()
            await c2.close()
            return .skipped("plain C loop on the channel's thread: \(error)")
        }
        func closeLoops() async {
            await c.close()
            await c2.close()
            await cShared.close()
        }

        do {
            // The commands of one read (PPSE, SELECT AID, GPO, READ RECORD): both sides send these.
            let sample = try await EMVReader().read(channel: channel, transaction: Transaction(amount: 1000))
            let commands = sample.exchanges.map(\.command)
            guard !commands.isEmpty else {
                await closeLoops()
                return .skipped("the sample read made no exchange")
            }
            let commandBytes = commands.map(\.bytes)
            let session = CardSession(channel: channel)

            // Warm-up of every path.
            guard await c.run(commandBytes, count: 50) != nil, await c2.run(commandBytes, count: 50) != nil,
                  await cShared.run(commandBytes, count: 50) != nil else {
                await closeLoops()
                return .skipped("SCardTransmit failed in warm-up")
            }
            for i in 0..<50 { _ = try await channel.transmit(commands[i % commands.count]) }
            for i in 0..<50 { _ = try await session.send(commands[i % commands.count]) }
            _ = try await channel.bareTransmitTimes(commands, count: 50)

            let clock = ContinuousClock()
            /// One batch through `send`, each exchange timed, as a read uses the channel: on the
            /// executor it prefers (its PC/SC thread).
            func timedBatch(_ send: (CommandAPDU) async throws(CardChannelError) -> ResponseAPDU) async throws -> [Duration] {
                var s: [Duration] = []
                try await session.run { () async throws(CardChannelError) in
                    for i in 0..<batch {
                        let start = clock.now
                        let r = try await send(commands[i % commands.count])
                        s.append(start.duration(to: clock.now))
                        Sink.add(r.data.count)
                    }
                }
                return s
            }
            /// Batches of the given paths in a fresh random order each round; the samples of each.
            var cpu: [Path: Duration] = [:]
            func interleave(_ paths: [Path], countCPU: Bool = false) async throws -> [Path: [Duration]] {
                var samples: [Path: [Duration]] = [:]
                for _ in 0..<rounds {
                    for path in paths.shuffled() {
                        let cpuBefore = countCPU ? await channel.onContextThread { threadCPUTime() } : .zero
                        switch path {
                        case .c:
                            guard let s = await c.run(commandBytes, count: batch) else { throw BenchFailure("SCardTransmit failed") }
                            samples[path, default: []] += s
                        case .c2:
                            guard let s = await c2.run(commandBytes, count: batch) else { throw BenchFailure("SCardTransmit failed") }
                            samples[path, default: []] += s
                        case .cShared:
                            guard let s = await cShared.run(commandBytes, count: batch) else { throw BenchFailure("SCardTransmit failed") }
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
                        if countCPU {
                            // The thread's CPU clock, read on the thread after the batch.
                            cpu[path, default: .zero] += await channel.onContextThread { threadCPUTime() } - cpuBefore
                        }
                    }
                }
                return samples
            }
            // Each of tapemu's paths against the C loop in pairs: two threads with the same share
            // of the work. Then every path on the channel's own thread, for what tapemu adds.
            // The noise floor of a pair: the same C loop on two threads of its own.
            let nullPair = try await interleave([.c, .c2])
            let pairChannel = try await interleave([.c, .channel])
            let pairSession = try await interleave([.c, .session])
            let shared = try await interleave([.cShared, .bare, .channel, .session], countCPU: true)
            func p(_ samples: [Path: [Duration]], _ path: Path) -> LatencyPercentiles { LatencyPercentiles(samples[path] ?? [])! }
            // Whole reads over PC/SC.
            let kernel = EMVReader()
            let readSamples = try await Harness.each(warmup: 5, count: reads) { () async throws -> Int in
                try await kernel.read(channel: channel, transaction: Transaction(amount: 1000)).exchanges.count
            }
            await closeLoops()
            return .measured(Result(
                reader: reader, exchanges: batch * rounds, rounds: rounds,
                nullPair: (p(nullPair, .c), p(nullPair, .c2)),
                pairChannel: (p(pairChannel, .c), p(pairChannel, .channel)),
                pairSession: (p(pairSession, .c), p(pairSession, .session)),
                cShared: p(shared, .cShared), bare: p(shared, .bare), channel: p(shared, .channel), session: p(shared, .session),
                threadCPU: cpu.mapValues { $0 / (batch * rounds) },
                read: LatencyPercentiles(readSamples)!, readAirFloor: ContactlessAirTime().read(sample.exchanges)))
        } catch {
            await closeLoops()
            return .skipped("exchange failed: \(error)")
        }
    }
}

/// The calling thread's CPU time (user and system), `CLOCK_THREAD_CPUTIME_ID`.
func threadCPUTime() -> Duration {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return .seconds(t.tv_sec) + .nanoseconds(t.tv_nsec)
}
