import EMVKernel
import BenchTiming
import Foundation

/// The printed table, section by section, and the targets of issues 7 and 16 with what was measured.
struct Report {
    private var targets: [(name: String, measured: String, met: Bool, verdict: String?)] = []

    /// A target: its name, the figure measured, whether it is met; `verdict` overrides met/MISSED.
    private mutating func addTarget(_ t: (String, String, Bool), verdict: String? = nil) {
        targets.append((t.0, t.1, t.2, verdict))
    }
    private let width = 44

    func header() {
        var build = "release build"
        #if DEBUG
        build = "DEBUG build"
        #endif
        let cpu = Self.cpuModel().map { ", \($0)" } ?? ""
        print("tapemu-bench · \(build) · \(ProcessInfo.processInfo.activeProcessorCount) CPUs\(cpu) · \(Self.now())")
        print("Times are per call: the median (p50) of all timed samples, after a warm-up; p90/p99 where")
        print("every call was timed on its own. Figures only: nothing here is asserted.")
    }

    func section(_ title: String) {
        print("")
        print(title)
    }

    func note(_ text: String) {
        print("  " + text)
    }

    private func row(_ name: String, _ cells: [String], suffix: String = "") {
        let padded = name.count >= width ? name + " " : name + String(repeating: " ", count: width - name.count)
        let line = "  " + padded + cells.map { $0.count >= 10 ? $0 + " " : String(repeating: " ", count: 10 - $0.count) + $0 + " " }.joined()
        print((line + suffix).trimmingTrailingSpaces)
    }

    func micro(_ r: MicroBench.Row, note: String) {
        var cells = [BenchFigure.time(r.perCall.median), "best " + BenchFigure.time(r.perCall.best)]
        if let b = r.bytesPerCall, r.perCall.median > .zero {
            cells.append(String(format: "%.0f MB/s", Double(b) / r.perCall.median.inNanoseconds * 1e3))
        }
        row(r.name, cells)
        print("  " + String(repeating: " ", count: width) + "  (\(note))")
    }

    mutating func kernel(_ r: KernelBench.Result) {
        if r.profile == "visa-qvsdc" {
            row("", ["p50", "p90", "p99", "max", "reads/s"])
        }
        let perSecond = 1e9 / r.reads.p50.inNanoseconds
        row("\(r.profile) full read (\(r.exchangesPerRead) exchanges)",
            [BenchFigure.time(r.reads.p50), BenchFigure.time(r.reads.p90), BenchFigure.time(r.reads.p99), BenchFigure.time(r.reads.max),
             Figure.rate(perSecond)])
        row("  kernel alone (recorded answers)", [BenchFigure.time(r.kernelAlone.median)])
        row("  kernel alone, caches evicted each step", [BenchFigure.time(r.kernelCold.p50), BenchFigure.time(r.kernelCold.p90),
                                                       BenchFigure.time(r.kernelCold.p99)])
        row("  card alone (its \(r.exchangesPerRead) answers)", [BenchFigure.time(r.cardAlone.median)])
        row("  on the air it would need at least", [BenchFigure.time(r.airFloor)])
        if r.profile == "visa-qvsdc" {
            addTarget(("in-process Visa qVSDC read, median < 20 µs", BenchFigure.time(r.reads.p50),
                            r.reads.p50 < .microseconds(20)))
        }
    }

    mutating func replay(_ r: ReplayBench.Unpaced) {
        row("unpaced: \(r.exchanges) exchanges in \(r.rounds) rounds",
            [Figure.rate(r.exchangesPerSecond).replacingOccurrences(of: "/s", with: " exch/s"),
             BenchFigure.time(r.elapsed / max(1, r.exchanges)) + "/exch"])
        if !r.diverged.isEmpty {
            note("diverged from their recording: \(r.diverged.joined(separator: ", "))")
        }
        addTarget(("replay ≥ 100,000 exchanges/s unpaced",
                        String(format: "%.0f/s", r.exchangesPerSecond), r.exchangesPerSecond >= 100_000))
    }

    mutating func paced(_ r: ReplayBench.Paced) {
        row("", ["p50", "p90", "p99", "max"])
        row("paced, |replayed − recorded| per exchange",
            [BenchFigure.time(r.error.p50), BenchFigure.time(r.error.p90), BenchFigure.time(r.error.p99), BenchFigure.time(r.error.max)])
        note("\(r.exchanges) exchanges, \(BenchFigure.time(r.elapsed)) in all; worst: \(r.worst)")
        addTarget(("paced replay within 1 ms per exchange", "max " + BenchFigure.time(r.error.max),
                        r.error.max <= .milliseconds(1)))
    }

    mutating func pcsc(_ r: PCSCBench.Result) {
        note("\(r.reader): \(r.rounds) rounds of batches of \(r.exchanges / r.rounds), the paths in a random order each round")
        note("(the commands of one read in turn: PPSE, SELECT, GPO, READ RECORD)")
        row("", ["p50", "p90", "p99", "vs C p50"])
        func line(_ name: String, _ p: LatencyPercentiles, _ base: LatencyPercentiles?) {
            row(name, [BenchFigure.time(p.p50), BenchFigure.time(p.p90), BenchFigure.time(p.p99),
                       base.map { Figure.ratio(p.p50.inNanoseconds / $0.p50.inNanoseconds) } ?? ""])
        }
        note("all on the channel's connection and thread, taking turns: only tapemu's code differs")
        line("plain C SCardTransmit loop", r[.c], r[.c])
        line("the same C loop again (noise floor)", r[.c2], r[.c])
        line("bare SCardTransmit from Swift", r[.bare], r[.c])
        line("PCSCCardChannel.transmit", r[.channel], r[.c])
        line("CardSession.send (deadline, 61xx/6Cxx)", r[.session], r[.c])
        note("the same C loop elsewhere (a context of its own: pcscd serves it on another thread)")
        line("channel's connection, a thread of its own", r[.cSameConnectionOwnThread], r[.c])
        line("a context of its own, the channel's thread", r[.cOwnContext], r[.c])
        line("a context and a thread of its own", r[.cOwnThread], r[.c])
        note("what the channel adds to a bare transmit (p50 − p50): transmit \(BenchFigure.signed(r.channelOverhead)), "
             + "send \(BenchFigure.signed(r.sessionOverhead))")
        if let c = r.threadCPU[.c], let b = r.threadCPU[.bare], let t = r.threadCPU[.channel], let s = r.threadCPU[.session] {
            note("CPU of the channel's thread per exchange (mean): C loop \(BenchFigure.time(c)), bare \(BenchFigure.time(b)), "
                 + "transmit \(BenchFigure.time(t)) (\(BenchFigure.signed(t - c))), send \(BenchFigure.time(s)) (\(BenchFigure.signed(s - c)))")
        }
        let w = r.reads
        note("whole reads, taking turns with their commands sent without the kernel (same connection and thread):")
        row("full kernel read over PC/SC (\(w.read.count) reads)", [BenchFigure.time(w.read.p50), BenchFigure.time(w.read.p90),
                                                                      BenchFigure.time(w.read.p99), Figure.ratio(w.ratio)])
        row("  its commands by the plain C loop", [BenchFigure.time(w.c.p50), BenchFigure.time(w.c.p90),
                                                   BenchFigure.time(w.c.p99), Figure.ratio(1)])
        row("  its commands driven, no kernel", [BenchFigure.time(w.driven.p50), BenchFigure.time(w.driven.p90),
                                                 BenchFigure.time(w.driven.p99), Figure.ratio(w.drivenRatio)])
        note("what a read adds to its commands by the C loop (p50 − p50): \(BenchFigure.signed(w.read.p50 - w.c.p50)); "
             + "outside its exchanges (p50 of each gap): "
             + w.gaps.map { "\($0.after) \(BenchFigure.time($0.p50))" }.joined(separator: ", "))
        note("(the same read on a real contactless reader needs at least \(BenchFigure.time(r.readAirFloor)) on the air)")
        // Two identical C loops more than 5% apart: this run cannot tell 10%.
        let noisy = abs(r.nullRatio - 1) > 0.05
        addTarget(("PC/SC median per exchange within 10% of plain C",
                        "channel " + Figure.ratio(r.channelRatio) + ", session " + Figure.ratio(r.sessionRatio)
                            + " (noise floor " + Figure.ratio(r.nullRatio) + ")",
                        r.channelRatio <= 1.10 && r.sessionRatio <= 1.10),
                  verdict: noisy ? "INCONCLUSIVE (noise floor off by more than 5%)" : nil)
    }

    mutating func memory(_ r: MemoryBench.Result) {
        func mb(_ b: Int) -> String { String(format: "%.1f MB", Double(b) / 1_048_576) }
        row("resident set size before / half-way / after", [mb(r.before), mb(r.middle), mb(r.after)])
        row("growth over the second half", [String(format: "%+.2f B/read", r.bytesPerRead)])
        note("(\(BenchFigure.time(r.elapsed)) for \(r.reads) reads)")
        // Flat: less than 1 byte per read over the second half (allocator noise is pages, not reads).
        addTarget(("memory flat over \(r.reads) reads", String(format: "%+.2f B/read", r.bytesPerRead),
                        r.bytesPerRead < 1))
    }

    func air(_ rows: [AirFloorBench.Row]) {
        row("", ["exchanges", "bytes out", "bytes in", "floor"])
        for r in rows {
            row(r.profile, [String(r.exchanges), String(r.commandBytes), String(r.responseBytes), BenchFigure.time(r.floor)],
                suffix: r.ended.map { "  (ends: \($0))" } ?? "")
        }
    }

    func finish() {
        if !targets.isEmpty {
            print("")
            print("Targets (issues 7 and 16)")
            for t in targets {
                let name = t.name.count >= width ? t.name : t.name + String(repeating: " ", count: width - t.name.count)
                print("  \(name)  \(t.measured)  \(t.verdict ?? (t.met ? "met" : "MISSED"))")
            }
        }
        print("")
        print("checksum \(Sink.value)")
    }

    static func shortPath(_ p: String) -> String {
        let cwd = FileManager.default.currentDirectoryPath + "/"
        return p.hasPrefix(cwd) ? String(p.dropFirst(cwd.count)) : p
    }

    static func cpuModel() -> String? {
        guard let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return nil }
        for line in info.split(separator: "\n") where line.hasPrefix("model name") {
            return line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    static func now() -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: Date())
    }
}

extension String {
    var trimmingTrailingSpaces: String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
