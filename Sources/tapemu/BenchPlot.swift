import EMVKernel
import Foundation
import BenchTiming

/// A histogram of read times as a small, self-contained SVG, with p50, p90 and p99 marked.
enum BenchPlot {
    static let width = 800.0, height = 420.0
    static let left = 64.0, right = 24.0, top = 48.0, bottom = 56.0
    static let bins = 40

    static func svg(samples: [Duration], report: ReadTimingReport, title: String) -> String {
        let p = report.total
        // The axis ends a little after p99 so a few outliers do not squash the body; anything
        // further goes into the last bin, which says so.
        let low = p.min.inNanoseconds
        let spread = max(p.p99.inNanoseconds - low, 1)
        let high = min(p.max.inNanoseconds, p.p99.inNanoseconds + spread * 0.25)
        let span = max(high - low, 1)
        var counts = [Int](repeating: 0, count: bins)
        var overflow = 0
        for s in samples {
            let v = s.inNanoseconds
            if v > high { overflow += 1 }
            let i = min(bins - 1, max(0, Int((v - low) / span * Double(bins))))
            counts[i] += 1
        }
        // A round count step (1, 2 or 5 × 10ⁿ) and an axis that ends on a tick.
        let step = niceStep(Double(max(counts.max() ?? 1, 1)) / 4)
        let tallest = Int((Double(max(counts.max() ?? 1, 1)) / Double(step)).rounded(.up)) * step
        let plotW = width - left - right, plotH = height - top - bottom
        func x(_ ns: Double) -> Double { left + (ns - low) / span * plotW }
        func y(_ n: Int) -> Double { top + plotH - Double(n) / Double(tallest) * plotH }
        func f(_ v: Double) -> String { String(format: "%.1f", v) }

        var s = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(f(width / 2))" y="22" text-anchor="middle" font-size="15">\(escape(title))</text>

            """
        // Bars.
        let barW = plotW / Double(bins)
        for (i, c) in counts.enumerated() where c > 0 {
            s += "<rect x=\"\(f(left + Double(i) * barW + 0.5))\" y=\"\(f(y(c)))\" width=\"\(f(max(barW - 1, 0.5)))\" "
                + "height=\"\(f(top + plotH - y(c)))\" fill=\"#4a7ab5\"><title>\(c)</title></rect>\n"
        }
        // Axes.
        s += "<line x1=\"\(f(left))\" y1=\"\(f(top + plotH))\" x2=\"\(f(left + plotW))\" y2=\"\(f(top + plotH))\" stroke=\"black\"/>\n"
        s += "<line x1=\"\(f(left))\" y1=\"\(f(top))\" x2=\"\(f(left))\" y2=\"\(f(top + plotH))\" stroke=\"black\"/>\n"
        for k in 0...5 {
            let ns = low + span * Double(k) / 5
            s += "<line x1=\"\(f(x(ns)))\" y1=\"\(f(top + plotH))\" x2=\"\(f(x(ns)))\" y2=\"\(f(top + plotH + 5))\" stroke=\"black\"/>\n"
            s += "<text x=\"\(f(x(ns)))\" y=\"\(f(top + plotH + 19))\" text-anchor=\"middle\">\(escape(BenchFigure.time(.nanoseconds(Int64(ns)))))</text>\n"
        }
        for n in stride(from: 0, through: tallest, by: step) {
            s += "<line x1=\"\(f(left - 5))\" y1=\"\(f(y(n)))\" x2=\"\(f(left))\" y2=\"\(f(y(n)))\" stroke=\"black\"/>\n"
            s += "<text x=\"\(f(left - 8))\" y=\"\(f(y(n) + 4))\" text-anchor=\"end\">\(n)</text>\n"
        }
        s += "<text x=\"\(f(left + plotW / 2))\" y=\"\(f(height - 12))\" text-anchor=\"middle\">time per read (\(p.count) reads\(overflow > 0 ? ", \(overflow) above the axis counted in the last bar" : ""))</text>\n"
        s += "<text x=\"16\" y=\"\(f(top + plotH / 2))\" text-anchor=\"middle\" transform=\"rotate(-90 16 \(f(top + plotH / 2)))\">reads</text>\n"
        // Percentiles.
        let marks: [(String, Duration, String)] = [("p50", p.p50, "#2a9d3a"), ("p90", p.p90, "#e08a00"), ("p99", p.p99, "#c0392b")]
        for (i, (name, d, colour)) in marks.enumerated() {
            let px = x(min(d.inNanoseconds, high))
            s += "<line x1=\"\(f(px))\" y1=\"\(f(top - 4))\" x2=\"\(f(px))\" y2=\"\(f(top + plotH))\" stroke=\"\(colour)\" stroke-width=\"2\" stroke-dasharray=\"5 3\"/>\n"
            s += "<text x=\"\(f(px + 4))\" y=\"\(f(top + 10 + Double(i) * 14))\" fill=\"\(colour)\">\(name) \(escape(BenchFigure.time(d)))</text>\n"
        }
        s += "</svg>\n"
        return s
    }

    /// The smallest of 1, 2, 5, 10, 20, 50, … that is at least `rough`.
    static func niceStep(_ rough: Double) -> Int {
        var magnitude = 1
        while true {
            for m in [1, 2, 5] where Double(m * magnitude) >= rough { return m * magnitude }
            magnitude *= 10
        }
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
