// tapemu-bench: read-latency benchmarks. Run with `swift run -c release tapemu-bench`.
//
// Every figure is timed with ContinuousClock after a warm-up, over several runs; every benchmark
// returns a count that is printed at the end (so nothing is optimised away). Figures are
// printed, never asserted: the targets of issue 7 are shown next to them as met or missed.
import EMVKernel
import Foundation

#if DEBUG
let banner = """
    ################################################################################
    #  DEBUG BUILD: these figures mean nothing. Run                                #
    #      swift run -c release tapemu-bench                                       #
    ################################################################################
    """
print(banner)
#endif

struct Options {
    var sections: Set<String> = Options.all
    var quick = false
    var slot = 1
    var corpus = Corpus.defaultDirectory()
    var reads = 20_000

    static let all: Set<String> = ["tlv", "apdu", "kernel", "replay", "pcsc", "memory", "air"]
    static let usage = """
        usage: tapemu-bench [--quick] [--only tlv,apdu,kernel,replay,pcsc,memory,air] [--slot N]
                            [--corpus DIR] [--reads N]
          --quick     fewer iterations (a smoke run; quote the full run)
          --only      run these sections only
          --slot N    the vpcd slot for the PC/SC benchmark (default 1: 'Virtual PCD 00 01')
          --corpus    the trace directory (default: the package's apdu-traces/)
          --reads N   in-process reads per card profile (default 20000)
        """

    init(_ args: [String]) throws {
        var i = 0
        func value() throws -> String {
            i += 1
            guard i < args.count else { throw BenchFailure("\(args[i - 1]) needs a value\n\(Options.usage)") }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--quick": quick = true
            case "--only":
                sections = Set(try value().split(separator: ",").map(String.init))
                guard sections.isSubset(of: Options.all) else { throw BenchFailure("unknown section\n\(Options.usage)") }
            case "--slot":
                guard let n = Int(try value()), (0...15).contains(n) else { throw BenchFailure("--slot takes 0...15") }
                slot = n
            case "--corpus": corpus = try value()
            case "--reads":
                guard let n = Int(try value()), n > 0 else { throw BenchFailure("--reads takes a positive number") }
                reads = n
            case "-h", "--help":
                print(Options.usage)
                exit(0)
            default: throw BenchFailure("unknown argument \(args[i])\n\(Options.usage)")
            }
            i += 1
        }
        if quick && reads == 20_000 { reads = 2_000 }
    }
}

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("tapemu-bench: \(error)\n".utf8))
    exit(64)
}

var report = Report()
report.header()

do {
    if options.sections.contains("tlv") || options.sections.contains("apdu") {
        report.section("Bytes")
        if options.sections.contains("tlv") {
            let corpus = Corpus.load(options.corpus) { report.note("skipped trace \($0)") }
            var records = corpus.responseData(instruction: 0xB2)
            var what = "READ RECORD answers"
            if records.isEmpty {
                records = corpus.responseData(instruction: 0xA4) + corpus.responseData(instruction: 0xA8)
                what = "FCIs and GPO answers"
            }
            if let row = MicroBench.tlv(records: records, quick: options.quick) {
                report.micro(row, note: "\(records.count) \(what) of \(corpus.entries.count) traces, \(row.bytesPerCall ?? 0) B avg")
            } else {
                report.note("TLV parse: no records in \(options.corpus)")
            }
        }
        if options.sections.contains("apdu") {
            for row in MicroBench.apdu(quick: options.quick) { report.micro(row, note: row.note) }
        }
    }

    if options.sections.contains("kernel") {
        report.section("Kernel read, in process (no card time), \(options.reads) reads each")
        for profile in ["visa-qvsdc", "mastercard-mchip"] {
            let r = try await KernelBench.run(profile: profile, reads: options.reads, warmup: max(200, options.reads / 10),
                                              quick: options.quick)
            report.kernel(r)
        }
    }

    if options.sections.contains("replay") {
        let corpus = Corpus.load(options.corpus) { report.note("skipped trace \($0)") }
        report.section("Replay of \(corpus.entries.count) traces in \(Report.shortPath(options.corpus))")
        if corpus.entries.isEmpty {
            report.note("no traces")
        } else {
            let unpaced = await ReplayBench.unpaced(corpus, rounds: options.quick ? 20 : 200, warmupRounds: options.quick ? 2 : 10)
            report.replay(unpaced)
            if let paced = await ReplayBench.paced(corpus) { report.paced(paced) }
        }
    }

    if options.sections.contains("pcsc") {
        report.section("PC/SC round trip through pcscd + vpcd (visa-qvsdc served in process)")
        // Small batches, many rounds: the paths take turns often, so a change in machine load
        // weighs on all three alike.
        let outcome = await PCSCBench.run(slot: options.slot, batch: 20, rounds: options.quick ? 20 : 150,
                                          reads: options.quick ? 50 : 300)
        switch outcome {
        case .measured(let r): report.pcsc(r)
        case .skipped(let why): report.note("skipped: \(why)")
        }
    }

    if options.sections.contains("memory") {
        let reads = options.quick ? 10_000 : 100_000
        report.section("Memory over \(reads) in-process reads (visa-qvsdc)")
        report.memory(try await MemoryBench.run(reads: reads, warmup: 2_000))
    }
    if options.sections.contains("air") {
        report.section("On-air floor of one read of each built-in profile (ISO 14443-A, 106 kbit/s, FSC = FSD = 256)")
        report.air(await AirFloorBench.run())
    }
} catch {
    report.note("failed: \(error)")
    report.finish()
    exit(1)
}

report.finish()
