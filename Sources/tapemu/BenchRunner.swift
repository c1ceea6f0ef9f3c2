import CardChannel
import EMVKernel
import DeviceStore
import Foundation
import ISO7816
import PCSC
import PaymentGateway
import Synchronization
import PaymentFlow
import TapToPay
import Timing
import APDUTrace
import BenchTiming
import VirtualCard

/// Runs `tapemu bench`'s reads or payments and times each one, split into on-air floor, card
/// time and host overhead (``ReadTiming``).
struct BenchRunner: Sendable, CustomStringConvertible {
    enum Kind: String, Sendable {
        case virtualCard
        case trace
        case reader
    }

    let command: BenchCommand
    let kind: Kind
    let name: String
    private let makeSource: @Sendable () throws -> any CardSource

    /// A virtual card serves at most this many reads before a fresh one takes over: its 2-byte
    /// ATC would run out at 65 535, after which a card refuses every transaction.
    static let readsPerVirtualCard = 50_000

    init(command: BenchCommand) throws {
        self.command = command
        let options = command.source
        let paced = !command.unpaced
        let first = try options.makeSource(paced: paced)
        name = first.name
        switch options.source {
        case .virtualCard: kind = .virtualCard
        case .trace: kind = .trace
        case .reader: kind = .reader
        }
        makeSource = { try options.makeSource(paced: paced) }
    }

    /// `visa-qvsdc (virtual card, in process)`, `trace visa.apdu (paced)`, `reader Virtual PCD 00 00`.
    var description: String {
        switch kind {
        case .virtualCard: "\(name) (virtual card, in process)"
        case .trace: "trace \(name) (\(command.unpaced ? "unpaced" : "paced"))"
        case .reader: "reader \(name)"
        }
    }

    /// Whether ISO 14443 radio is between tapemu and the card: a real contactless reader, not
    /// vpcd's virtual one.
    static func airInPath(_ channel: any CardChannel) -> Bool {
        guard let pcsc = channel as? PCSCCardChannel else { return false }
        return !pcsc.reader.hasPrefix("Virtual PCD")
    }

    /// The card's own time spent during the read that just ended on `channel`; nil when unknown.
    static func cardTime(of channel: any CardChannel, before: Duration) -> Duration? {
        if let virtual = channel as? VirtualCardChannel {
            return virtual.simulatesCardTime ? virtual.cardTime - before : .zero
        }
        if let replay = channel as? TraceReplayChannel {
            return replay.paced ? TraceReplaySetup.recordedCardTime(of: replay.trace, played: replay.progress.played) : .zero
        }
        return nil
    }

    /// What the PC/SC channel adds per exchange, measured: ``CardSession/send(_:)`` (the task on
    /// the channel's thread, the APDU deadline, 61xx/6Cxx) against bare `SCardTransmit` calls on
    /// the same connection and thread, the same commands, in batches that take turns in a random
    /// order; and what a whole read adds to its commands sent bare, taking turns with them.
    struct ChannelOverhead: Sendable {
        var bare: LatencyPercentiles
        var send: LatencyPercentiles
        /// Whole kernel reads, and the same reads' commands as bare transmits (the sum of their
        /// exchanges), interleaved with each other: what a read costs over its exchanges.
        var read: LatencyPercentiles
        var bareRead: LatencyPercentiles
        /// The median send minus the median bare transmit.
        var perExchange: Duration { send.p50 - bare.p50 }
        /// The median read minus the median of its commands as bare transmits: the kernel's work
        /// between exchanges and the channel's per-exchange cost, per read.
        var perRead: Duration { read.p50 - bareRead.p50 }
    }

    /// Batches and their size for ``ChannelOverhead``; reads and bare reads per round.
    static let overheadRounds = 25, overheadBatch = 20, overheadReads = 2

    func run(count: Int, warmup: Int, onEach: @Sendable () -> Void) async throws -> (timings: [ReadTiming], overhead: ChannelOverhead?) {
        command.pay ? (try await payments(count: count, warmup: warmup, onEach: onEach), nil)
            : try await reads(count: count, warmup: warmup, onEach: onEach)
    }

    /// ``ChannelOverhead`` on `channel`, with the commands of one read; `read` is one whole read.
    /// Runs on the channel's preferred executor (its PC/SC thread), as the reads do: no hop to it
    /// inside a timed read. Throws the channel's error, or the read's (`KernelError`).
    static func channelOverhead(_ channel: PCSCCardChannel, commands: [CommandAPDU], apduTimeout: Duration,
                                read: @escaping () async throws(KernelError) -> Void) async throws -> ChannelOverhead? {
        guard !commands.isEmpty else { return nil }
        return try await withTaskExecutorPreference(channel.preferredExecutor) { () async throws -> ChannelOverhead? in
            let session = CardSession(channel: channel, apduTimeout: apduTimeout)
            let clock = ContinuousClock()
            var bare: [Duration] = [], send: [Duration] = [], reads: [Duration] = [], bareReads: [Duration] = []
            enum Path { case bare, send, read, bareRead }
            for _ in 0..<overheadRounds {
                for path in [Path.bare, .send, .read, .bareRead].shuffled() {
                    switch path {
                    case .bare:
                        bare += try await channel.bareTransmitTimes(commands, count: overheadBatch)
                    case .send:
                        try await session.run { () async throws(CardChannelError) in
                            for i in 0..<overheadBatch {
                                let start = clock.now
                                _ = try await session.send(commands[i % commands.count])
                                send.append(start.duration(to: clock.now))
                            }
                        }
                    case .read:
                        for _ in 0..<overheadReads {
                            let start = clock.now
                            try await read()
                            reads.append(start.duration(to: clock.now))
                        }
                    case .bareRead:
                        for _ in 0..<overheadReads {
                            let times = try await channel.bareTransmitTimes(commands, count: commands.count)
                            bareReads.append(times.reduce(.zero, +))
                        }
                    }
                }
            }
            guard let b = LatencyPercentiles(bare), let s = LatencyPercentiles(send),
                  let r = LatencyPercentiles(reads), let br = LatencyPercentiles(bareReads) else { return nil }
            return ChannelOverhead(bare: b, send: s, read: r, bareRead: br)
        }
    }

    // MARK: Reads

    private func reads(count: Int, warmup: Int, onEach: @Sendable () -> Void) async throws -> ([ReadTiming], ChannelOverhead?) {
        let clock = MonotonicClock.continuous
        let transaction = Transaction(amount: command.amount)
        var source = try makeSource()
        var reader = EMVReader()
        if kind == .trace, let trace = (source as? TraceCardSource)?.trace {
            // Run the kernel as the recorded reader did, so the commands match.
            let setup = TraceReplaySetup(trace: trace)
            reader = EMVReader(configuration: setup.configuration, environment: setup.environment ?? .system)
        }
        let traceTransaction = (source as? TraceCardSource).map { TraceReplaySetup(trace: $0.trace).transaction }
        var kept: (any CardChannel)?
        defer { (kept as? PCSCCardChannel)?.close() }
        var timings: [ReadTiming] = []
        timings.reserveCapacity(count)
        var lastCommands: [CommandAPDU] = []
        func readOnce(_ i: Int) async throws {
            if kind == .virtualCard, i > 0, i % Self.readsPerVirtualCard == 0 { source = try makeSource() }
            let channel: any CardChannel
            if let kept {
                channel = kept
            } else {
                do {
                    channel = try await source.waitForCard(timeout: command.wait, clock: clock)
                } catch {
                    throw CommandFailure(error, "\(source.name): \(error)")
                }
                // A PC/SC connection serves every read; virtual cards and traces start afresh.
                if kind == .reader { kept = channel }
            }
            let cardBefore = (channel as? VirtualCardChannel)?.cardTime ?? .zero
            let start = ContinuousClock.now
            let read: CardRead
            do {
                read = try await reader.read(channel: channel, transaction: traceTransaction ?? transaction,
                                             apduTimeout: command.apduTimeout, clock: clock)
            } catch {
                throw Self.failure(error, run: i, warmup: warmup)
            }
            let total = start.duration(to: .now)
            lastCommands = read.exchanges.map(\.command)
            if i >= warmup {
                timings.append(ReadTiming(total: total, exchanges: read.exchanges,
                                          card: Self.cardTime(of: channel, before: cardBefore),
                                          airInPath: Self.airInPath(channel)))
            }
            onEach()
        }
        try await readOnce(0)
        // The reads after the first on the executor the channel prefers (a reader's: its PC/SC
        // thread), as one read runs there: the loop does not hop off and back between reads.
        try await withTaskExecutorPreference(kept?.preferredExecutor) { () async throws in
            for i in 1..<(warmup + count) { try await readOnce(i) }
        }
        var overhead: ChannelOverhead?
        if let pcsc = kept as? PCSCCardChannel {
            let transaction = traceTransaction ?? transaction, apduTimeout = command.apduTimeout, reader = reader
            do {
                overhead = try await Self.channelOverhead(pcsc, commands: lastCommands, apduTimeout: apduTimeout) {
                    () async throws(KernelError) in
                    _ = try await reader.read(channel: pcsc, transaction: transaction, apduTimeout: apduTimeout, clock: clock)
                }
            } catch let error as CardChannelError {
                throw CommandFailure(error, "measuring the channel's overhead failed: \(error)")
            } catch let error as KernelError {
                throw CommandFailure(exitCode: ExitCode.of(error, offlineDecline: ExitCode.failure), "measuring the channel's overhead, a read failed: \(error)")
            }
        }
        return (timings, overhead)
    }

    static func failure(_ error: KernelError, run: Int, warmup: Int) -> CommandFailure {
        let which = run < warmup ? "warm-up read \(run + 1)" : "read \(run - warmup + 1)"
        return CommandFailure(exitCode: ExitCode.of(error, offlineDecline: ExitCode.failure), "\(which) failed: \(error)")
    }

    // MARK: Payments

    private func payments(count: Int, warmup: Int, onEach: @Sendable () -> Void) async throws -> [ReadTiming] {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("tapemu-bench-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gateway: EmbeddedGateway
        let store: PendingPaymentStore
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            gateway = try EmbeddedGateway(dataDirectory: directory)
            store = try PendingPaymentStore(dataDirectory: directory)
        } catch {
            throw CommandFailure.ioError("cannot set up the embedded gateway in \(directory): \(error)")
        }
        let probe = BenchCardSource(base: try makeSource())
        let events = BenchPaymentEvents()
        let pin = PIN("1234").map { ScriptedPINProvider(.pin($0)) } ?? ScriptedPINProvider(.cancel)
        let configuration = TapToPay.Configuration(
            cardSource: probe, gateway: gateway, pendingStore: store, pin: pin,
            timeouts: PaymentTimeouts(cardPresentation: command.wait, apdu: command.apduTimeout),
            onEvent: { events.record($0) })
        let tapToPay = TapToPay(configuration: configuration)
        do {
            try await tapToPay.prepare(token: gateway.issueToken(accountId: "acct_tapemu_bench"))
        } catch {
            throw CommandFailure.failure("prepare failed: \(error.code): \(error)")
        }
        let run = UUID().uuidString.prefix(8).lowercased()
        var timings: [ReadTiming] = []
        timings.reserveCapacity(count)
        for i in 0..<(warmup + count) {
            if kind == .virtualCard, i > 0, i % Self.readsPerVirtualCard == 0 { probe.replace(try makeSource()) }
            probe.reset()
            events.reset()
            let start = ContinuousClock.now
            let which = i < warmup ? "warm-up payment \(i + 1)" : "payment \(i - warmup + 1)"
            do {
                let result = try await tapToPay.acceptPayment(amount: Int(command.amount), orderId: "bench-\(run)-\(i)")
                // A declined payment is no timing of a payment: the issuer stopped it (a trace's
                // cryptogram, made for another unpredictable number, never verifies).
                guard result.status == .approved else {
                    throw CommandFailure.failure("\(which) was declined (\(result.statusMessage ?? "declined")): a benchmark times approved payments only")
                }
            } catch let failure as CommandFailure {
                throw failure
            } catch {
                throw CommandFailure.failure("\(which) failed: \(error)")
            }
            let total = start.duration(to: .now)
            if i >= warmup {
                let (exchanges, card, airInPath) = probe.observed
                timings.append(ReadTiming(total: total, exchanges: exchanges, card: card, airInPath: airInPath,
                                          other: events.gatewayTime))
            }
            onEach()
        }
        return timings
    }
}

/// A card source that times every exchange of the channels it hands out (payments do not return
/// their exchanges) and remembers the channel, for its card time.
final class BenchCardSource: CardSource {
    private struct State {
        var base: any CardSource
        var channel: (any CardChannel)?
        var cardBefore: Duration = .zero
        var exchanges: [Exchange] = []
    }
    private let state: Mutex<State>

    init(base: any CardSource) { state = Mutex(State(base: base)) }

    var name: String { state.withLock { $0.base.name } }

    func replace(_ base: any CardSource) { state.withLock { $0.base = base } }

    func reset() { state.withLock { $0.exchanges = [] } }

    /// The exchanges since ``reset()``, the card's time, and whether radio is in the path.
    var observed: (exchanges: [Exchange], card: Duration?, airInPath: Bool) {
        state.withLock { s in
            guard let channel = s.channel else { return (s.exchanges, nil, false) }
            return (s.exchanges, BenchRunner.cardTime(of: channel, before: s.cardBefore), BenchRunner.airInPath(channel))
        }
    }

    func record(_ exchange: Exchange) { state.withLock { $0.exchanges.append(exchange) } }

    func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        let base = state.withLock { $0.base }
        let channel = try await base.waitForCard(timeout: timeout, clock: clock)
        state.withLock {
            $0.channel = channel
            $0.cardBefore = (channel as? VirtualCardChannel)?.cardTime ?? .zero
        }
        return BenchTimingChannel(base: channel, source: self)
    }
}

/// Passes every exchange through and times it for ``BenchCardSource``.
struct BenchTimingChannel: ObservingChannel {
    let base: any CardChannel
    let source: BenchCardSource

    var observed: any CardChannel { base }

    /// Runs `exchange` (`command` on the base channel) and records it with its time
    /// (``ObservingChannel``: both transmits come here).
    nonisolated(nonsending) func observe(
        _ command: CommandAPDU, _ exchange: nonisolated(nonsending) () async throws(CardChannelError) -> ResponseAPDU
    ) async throws(CardChannelError) -> ResponseAPDU {
        let start = ContinuousClock.now
        do {
            let response = try await exchange()
            source.record(Exchange(command: command, response: response, start: .zero, duration: start.duration(to: .now)))
            return response
        } catch {
            source.record(Exchange(command: command, response: nil, failure: error.code, start: .zero,
                                   duration: start.duration(to: .now)))
            throw error
        }
    }
}

/// The gateway's share of a payment: from the authorisation request leaving to its answer.
final class BenchPaymentEvents: Sendable {
    private let state = Mutex<(sent: ContinuousClock.Instant?, time: Duration)>((nil, .zero))

    func reset() { state.withLock { $0 = (nil, .zero) } }

    func record(_ event: PaymentEvent) {
        let now = ContinuousClock.now
        state.withLock { s in
            switch event {
            case .authorising: s.sent = now
            case .answered: if let sent = s.sent { s.time += sent.duration(to: now); s.sent = nil }
            default: break
            }
        }
    }

    var gatewayTime: Duration { state.withLock { $0.time } }
}
