import CardChannel
import EMVKernel
import Foundation
import PCSC
#if canImport(Glibc)
import Glibc
import BenchTiming
import BERTLV
import PaymentRules
#endif

/// `tapemu bench`: N full reads (or payments) of one card, and where each read's time goes.
struct BenchCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Time N full reads (or payments) of a card: percentiles, per exchange kind, and where the time goes.",
        arguments: CardSourceOptions.arguments + [Self.count, Self.warmup, Self.pay, Self.unpaced, Self.amount, Self.wait,
                                                   Self.apduTimeout, Self.plot] + OutputOptions.arguments,
        discussion: """
            Runs the EMV kernel N times on the card (after a warm-up that is not counted) and \
            prints p50, p90, p99 and max of the whole read and of each exchange kind (SELECT, GPO, \
            READ RECORD, GENERATE AC, GET RESPONSE). With --pay each run is a whole payment through \
            the MONEI-style API and an embedded gateway in a temporary directory, a fresh order id \
            each time.
            The median read's time is split three ways. The on-air floor is the least time ISO \
            14443-A at 106 kbit/s needs for the read's bytes: 9 etu of 128/13.56 MHz per byte \
            (84.96 µs), 3 bytes of ISO-DEP framing per block (PCB, CRC_A), 2 etu of start and end \
            of frame, chaining above 253 bytes (FSC = FSD = 256) with an R(ACK) per extra block, \
            and a frame delay of at least 1172/fc (86.4 µs) each way; it is spent only on a real \
            contactless reader (in process and behind vpcd it is shown for comparison). The card's \
            own time is known for a virtual card (its profile's card time) and a paced trace (the \
            recorded time); on a real card it is part of the rest. Host overhead is the rest: \
            tapemu's code, PC/SC, the reader.
            A progress bar goes to stderr when it is a terminal. Traces replay paced (their recorded \
            timing) unless --unpaced. Figures only: nothing is asserted.
            """,
        exitCodes: [
            (ExitCode.failure, "a read or payment failed"),
            (ExitCode.dataError, "the card broke the protocol, or the trace diverged; or the --trace or --card file is not valid"),
            (ExitCode.noInput, "the --trace or --card file does not exist"),
            (ExitCode.unavailable, "no reader, or the PC/SC service is not running"),
            (ExitCode.ioError, "the plot could not be written, or the --trace or --card file cannot be read"),
            (ExitCode.temporaryFailure, "no card came, the card was removed, or it did not answer in time"),
        ])

    static let count = Option<Int>.integer(
        "-n", "--count", value: "<reads>", help: "How many reads (or payments) to time (default 1000; 100 with --reader or --pay).",
        in: 1...10_000_000)
    static let warmup = Option<Int>.integer(
        "--warmup", value: "<reads>", help: "Reads before timing starts, not counted (default 10% of N, at most 100).",
        in: 0...1_000_000)
    static let pay = Flag("--pay", help: "Time whole payments instead of reads (embedded gateway, temporary ledger).")
    static let unpaced = Flag("--unpaced", help: "With --trace: replay as fast as possible (no card time).")
    static let amount = Option<Int>.integer(
        "--amount", value: "<cents>", help: "The amount the card sees (default 1000 = 10.00 EUR).", in: 1...Int(EMVAmount.maximum))
    static let wait = CardSourceOptions.wait
    static let apduTimeout = CardSourceOptions.apduTimeout
    static let plot = Option<String>(
        "--plot", value: "<file.svg>", help: "Write an SVG histogram of the read times with p50, p90 and p99 marked.")

    var source: CardSourceOptions
    var count: Int?
    var warmup: Int?
    var pay: Bool
    var unpaced: Bool
    var amount: UInt64
    var wait: Duration
    var apduTimeout: Duration
    var plot: String?
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        source = try CardSourceOptions(arguments: &arguments)
        pay = arguments.isSet(Self.pay)
        unpaced = arguments.isSet(Self.unpaced)
        count = try arguments.value(Self.count)
        warmup = try arguments.value(Self.warmup)
        amount = UInt64(try arguments.value(Self.amount, default: 1000))
        wait = try arguments.value(Self.wait, default: .seconds(30))
        apduTimeout = try arguments.value(Self.apduTimeout, default: .seconds(2))
        plot = try arguments.value(Self.plot)
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        if unpaced {
            guard case .trace = source.source else { throw UsageError("--unpaced only goes with --trace") }
        }
    }

    /// N and the warm-up after the defaults.
    var runs: (count: Int, warmup: Int) {
        let slow: Bool
        if case .reader = source.source { slow = true } else { slow = pay }
        let n = count ?? (slow ? 100 : 1000)
        return (n, warmup ?? min(100, max(1, n / 10)))
    }

    func run(_ console: Console) async throws -> Int32 {
        let (n, warm) = runs
        let runner = try BenchRunner(command: self)
        let progress = BenchProgress(total: warm + n, label: pay ? "payments" : "reads")
        let timings: [ReadTiming]
        let overhead: BenchRunner.ChannelOverhead?
        do {
            (timings, overhead) = try await runner.run(count: n, warmup: warm) { progress.advance() }
        } catch {
            progress.finish()
            throw error
        }
        progress.finish()
        guard let report = ReadTimingReport(timings) else {
            throw CommandFailure.failure("nothing was timed")
        }
        if let plot {
            let svg = BenchPlot.svg(samples: timings.map(\.total), report: report,
                                    title: "\(runner.description): \(n) \(pay ? "payments" : "reads")")
            do {
                try svg.write(toFile: plot, atomically: true, encoding: .utf8)
            } catch {
                throw CommandFailure.ioError("cannot write the plot to \(plot): \(Console.ReadError.describing(error))")
            }
        }
        try output.print(json: BenchRender.json(report, runner: runner, warmup: warm, pay: pay, plot: plot, overhead: overhead),
                         text: BenchRender.text(report, runner: runner, warmup: warm, pay: pay, plot: plot, overhead: overhead),
                         to: console)
        return ExitCode.success
    }
}
