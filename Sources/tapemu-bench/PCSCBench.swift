import CardChannel
import EMVKernel
import ISO7816
import PCSC
import VirtualCard
import BenchTiming

/// A PC/SC round trip through the real pcscd and vpcd: the same emulated card (visa-qvsdc, served
/// in process by ``VPCDCardServer``) read by a plain C `SCardTransmit` loop, by bare
/// `SCardTransmit` calls on the channel's own thread and connection, and by tapemu's
/// `PCSCCardChannel` (and `CardSession`, which adds the per-APDU deadline and the 61xx/6Cxx
/// handling), in interleaved batches within one run, so the ratios are measured side by side.
///
/// The plain C loop runs twice: on a thread of its own (which sleeps while the other paths run)
/// and on the channel's own thread (which also runs the bench's task and the other paths). The
/// same C code measured 1.12–1.19× slower on the second on this project's 2-vCPU machine: the
/// scheduler wakes a mostly idle thread faster than a busy one. The second is the like-for-like
/// baseline for what tapemu adds; both are printed.
///
/// The paths take turns in a fresh random order every round. On a 2-CPU virtual machine the
/// path that runs right after another one is systematically faster or slower (where the
/// scheduler left pcscd, the card server and the caller; how long an idle vCPU polls before it
/// halts): with a fixed rotation one path always followed the same other path and the ratios
/// carried that, ±20 %. Random order gives every path the same mix of predecessors.
enum PCSCBench {
    struct Result {
        var reader: String
        var exchanges: Int
        var rounds: Int
        var c: LatencyPercentiles
        /// The same C loop (its own PC/SC context) run on the channel's thread.
        var cShared: LatencyPercentiles
        /// Bare `SCardTransmit` calls on the channel's thread and connection (no task, no deadline).
        var bare: LatencyPercentiles
        var channel: LatencyPercentiles
        var session: LatencyPercentiles
        /// A full kernel read over the PC/SC channel.
        var read: LatencyPercentiles
        var readAirFloor: Duration
        var channelRatio: Double { channel.p50.inNanoseconds / c.p50.inNanoseconds }
        var sessionRatio: Double { session.p50.inNanoseconds / c.p50.inNanoseconds }
        /// Against the same C loop on the channel's own thread (like for like: one thread).
        var channelRatioShared: Double { channel.p50.inNanoseconds / cShared.p50.inNanoseconds }
        var sessionRatioShared: Double { session.p50.inNanoseconds / cShared.p50.inNanoseconds }
        var bareRatio: Double { bare.p50.inNanoseconds / c.p50.inNanoseconds }
        /// What the channel adds to a bare transmit per exchange (medians).
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
        let c: CTransmitLoop, cShared: CTransmitLoop
        do {
            c = try await CTransmitLoop.connect(reader: reader)
            cShared = try await CTransmitLoop.connect(reader: reader, on: ChannelThreadRunner(channel: channel))
        } catch {
            return .skipped("plain C loop: \(error)")
        }

        do {
            // The commands of one read (PPSE, SELECT AID, GPO, READ RECORD): both sides send these.
            let sample = try await EMVReader().read(channel: channel, transaction: Transaction(amount: 1000))
            let commands = sample.exchanges.map(\.command)
            let commandBytes = commands.map(\.bytes)
            let session = CardSession(channel: channel)

            // Warm-up of every path.
            guard await c.run(commandBytes, count: 50) != nil, await cShared.run(commandBytes, count: 50) != nil else {
                return .skipped("SCardTransmit failed in warm-up")
            }
            for i in 0..<50 { _ = try await channel.transmit(commands[i % commands.count]) }
            for i in 0..<50 { _ = try await session.send(commands[i % commands.count]) }
            _ = try await channel.bareTransmitTimes(commands, count: 50)

            var cSamples: [Duration] = [], cSharedSamples: [Duration] = [], bareSamples: [Duration] = []
            var channelSamples: [Duration] = [], sessionSamples: [Duration] = []
            let clock = ContinuousClock()
            for _ in 0..<rounds {
                for path in [0, 1, 2, 3, 4].shuffled() {
                    switch path {
                    case 4:
                        guard let s = await cShared.run(commandBytes, count: batch) else { return .skipped("SCardTransmit failed") }
                        cSharedSamples += s
                    case 0:
                        guard let s = await c.run(commandBytes, count: batch) else { return .skipped("SCardTransmit failed") }
                        cSamples += s
                    case 1:
                        bareSamples += try await channel.bareTransmitTimes(commands, count: batch)
                    case 2:
                        // As a read uses the channel: on the executor it prefers (its PC/SC thread).
                        try await session.run { () async throws(CardChannelError) in
                            for i in 0..<batch {
                                let start = clock.now
                                let r = try await channel.transmit(commands[i % commands.count])
                                channelSamples.append(start.duration(to: clock.now))
                                Sink.add(r.data.count)
                            }
                        }
                    default:
                        try await session.run { () async throws(CardChannelError) in
                            for i in 0..<batch {
                                let start = clock.now
                                let r = try await session.send(commands[i % commands.count])
                                sessionSamples.append(start.duration(to: clock.now))
                                Sink.add(r.data.count)
                            }
                        }
                    }
                }
            }
            // Whole reads over PC/SC.
            let kernel = EMVReader()
            let readSamples = try await Harness.each(warmup: 5, count: reads) { () async throws -> Int in
                try await kernel.read(channel: channel, transaction: Transaction(amount: 1000)).exchanges.count
            }
            await c.close()
            await cShared.close()
            return .measured(Result(reader: reader, exchanges: batch * rounds, rounds: rounds,
                                    c: LatencyPercentiles(cSamples)!, cShared: LatencyPercentiles(cSharedSamples)!, bare: LatencyPercentiles(bareSamples)!, channel: LatencyPercentiles(channelSamples)!,
                                    session: LatencyPercentiles(sessionSamples)!, read: LatencyPercentiles(readSamples)!,
                                    readAirFloor: ContactlessAirTime().read(sample.exchanges)))
        } catch {
            await c.close()
            await cShared.close()
            return .skipped("exchange failed: \(error)")
        }
    }
}
