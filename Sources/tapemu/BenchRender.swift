import EMVKernel
import Foundation
import BenchTiming

/// `tapemu bench`'s output: a table for people, one JSON document for tooling.
enum BenchRender {
    private static func pad(_ s: String, _ n: Int, right: Bool = true) -> String {
        s.count >= n ? s : right ? String(repeating: " ", count: n - s.count) + s : s + String(repeating: " ", count: n - s.count)
    }

    static func text(_ report: ReadTimingReport, runner: BenchRunner, warmup: Int, pay: Bool, plot: String?,
                     overhead: BenchRunner.ChannelOverhead? = nil) -> String {
        func what(_ n: Int) -> String { (pay ? "payment" : "read") + (n == 1 ? "" : "s") }
        var s = "tapemu bench: \(report.reads) \(what(report.reads)) of \(runner.description), after \(warmup) warm-up \(what(warmup))\n\n"
        let first = 14
        s += pad("", first, right: false) + ["p50", "p90", "p99", "max"].map { pad($0, 11) }.joined() + "\n"
        func row(_ name: String, _ p: LatencyPercentiles, _ extra: String = "") {
            s += pad(name, first, right: false) + [p.p50, p.p90, p.p99, p.max].map { pad(BenchFigure.time($0), 11) }.joined()
                + extra + "\n"
        }
        row(pay ? "payment" : "read", report.total)
        for (kind, p) in report.byKind {
            let perRead = Double(p.count) / Double(report.reads)
            row(kind.description, p, String(format: "   (%@ per %@)", perRead == perRead.rounded() ? String(Int(perRead)) : String(format: "%.1f", perRead), pay ? "payment" : "read"))
        }
        let m = report.medianRead
        let exchanges = m.exchanges.count
        s += "\nWhere the median \(pay ? "payment" : "read")'s \(BenchFigure.time(m.total)) goes (\(exchanges) exchange\(exchanges == 1 ? "" : "s")):\n"
        var lines: [(String, String, String)] = []
        lines.append(("on-air floor", BenchFigure.time(m.airFloor), m.airInPath
            ? "ISO 14443-A at 106 kbit/s for these bytes (radio in the path)"
            : "what ISO 14443-A at 106 kbit/s would need for these bytes; no radio in this path, not spent"))
        switch m.card {
        case let card?:
            lines.append(("card", BenchFigure.time(card), runner.kind == .trace ? "the card time the trace recorded" : "the virtual card's own time"))
        case nil:
            lines.append(("card", "unknown", "a real card's own time is not known apart: it is in the rest"))
        }
        if pay {
            lines.append(("gateway", BenchFigure.time(m.other), "authorisation request out to answer in (embedded gateway, durable ledger)"))
        }
        let rest: String
        switch runner.kind {
        case .virtualCard, .trace: rest = "the rest: tapemu's kernel, session and channel\(pay ? ", payment flow" : "")"
        case .reader: rest = "the rest: tapemu, pcscd, the reader\(m.card == nil ? " and the card" : "")\(pay ? ", payment flow" : "")"
        }
        lines.append(("host", BenchFigure.time(m.host), rest))
        for (name, value, note) in lines {
            s += "  " + pad(name, 13, right: false) + pad(value, 10) + "   " + note + "\n"
        }
        if let o = overhead {
            s += "\nThe PC/SC channel's own cost: \(BenchFigure.signed(o.perExchange)) per exchange — tapemu's send (deadline, 61xx/6Cxx) "
                + "p50 \(BenchFigure.time(o.send.p50)) vs a bare SCardTransmit p50 \(BenchFigure.time(o.bare.p50)) on the same "
                + "connection, \(o.send.count) exchanges each, interleaved. Subtract it per exchange to get pcscd's, the "
                + "reader's and the card's share.\n"
            s += "A read's own cost: \(BenchFigure.signed(o.perRead)) per read — a whole kernel read p50 \(BenchFigure.time(o.read.p50)) vs "
                + "its \(exchanges) commands as bare SCardTransmits p50 \(BenchFigure.time(o.bareRead.p50)), \(o.read.count) of each, "
                + "interleaved: the kernel's work between the exchanges and the channel's, on the caches the exchanges left.\n"
        }
        if let plot { s += "\nHistogram written to \(plot)\n" }
        return s
    }

    static func micros(_ d: Duration) -> JSONValue { .double((d.inMicroseconds * 1000).rounded() / 1000) }

    static func percentiles(_ p: LatencyPercentiles) -> JSONValue {
        .object([
            "count": .int(p.count), "minMicros": micros(p.min), "p50Micros": micros(p.p50), "p90Micros": micros(p.p90),
            "p99Micros": micros(p.p99), "maxMicros": micros(p.max), "meanMicros": micros(p.mean),
        ])
    }

    static func json(_ report: ReadTimingReport, runner: BenchRunner, warmup: Int, pay: Bool, plot: String?,
                     overhead: BenchRunner.ChannelOverhead? = nil) -> JSONValue {
        let m = report.medianRead
        var median: [String: JSONValue] = [
            "totalMicros": micros(m.total), "airFloorMicros": micros(m.airFloor),
            "cardMicros": m.card.map(micros) ?? .null, "hostMicros": micros(m.host),
            "airInPath": .bool(m.airInPath), "exchanges": .int(m.exchanges.count),
        ]
        if pay { median["gatewayMicros"] = micros(m.other) }
        var kinds: [String: JSONValue] = [:]
        for (kind, p) in report.byKind { kinds[kind.description] = percentiles(p) }
        return .object([
            "source": .string(runner.name), "sourceKind": .string(runner.kind.rawValue),
            "mode": .string(pay ? "payment" : "read"), "reads": .int(report.reads), "warmup": .int(warmup),
            "total": percentiles(report.total), "exchanges": .object(kinds), "median": .object(median),
            "plot": plot.map(JSONValue.string) ?? .null,
            "channelOverhead": overhead.map { o in
                .object([
                    "exchanges": .int(o.send.count), "bareTransmitP50Micros": micros(o.bare.p50),
                    "sendP50Micros": micros(o.send.p50), "perExchangeMicros": micros(o.perExchange),
                    "reads": .int(o.read.count), "readP50Micros": micros(o.read.p50),
                    "bareReadP50Micros": micros(o.bareRead.p50), "perReadMicros": micros(o.perRead),
                ])
            } ?? .null,
        ])
    }
}
