import Foundation

/// Percentiles of a set of timings, by the nearest-rank method: the p-th percentile of n sorted
/// samples is the sample at rank ⌈p/100 · n⌉ (1-based), so every reported figure is a time that
/// was really measured. p50 of 1…100 is 50, p90 is 90, p99 is 99.
public struct LatencyPercentiles: Hashable, Sendable {
    public var count: Int
    public var min: Duration
    public var p50: Duration
    public var p90: Duration
    public var p99: Duration
    public var max: Duration
    /// The arithmetic mean (to the attosecond, truncated).
    public var mean: Duration

    /// The percentiles of `samples`; nil when there are none.
    public init?(_ samples: [Duration]) {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        self.init(sorted: sorted)
    }

    /// The percentiles of samples already in ascending order (not checked); nil when empty.
    public init?(sorted: [Duration]) {
        guard let first = sorted.first, let last = sorted.last else { return nil }
        count = sorted.count
        min = first
        max = last
        p50 = Self.percentile(50, ofSorted: sorted)
        p90 = Self.percentile(90, ofSorted: sorted)
        p99 = Self.percentile(99, ofSorted: sorted)
        mean = sorted.reduce(Duration.zero, +) / sorted.count
    }

    /// The nearest-rank `p`-th percentile (0 < p ≤ 100) of a non-empty ascending array.
    public static func percentile<T>(_ p: Double, ofSorted sorted: [T]) -> T {
        precondition(!sorted.isEmpty, "the percentile of nothing")
        precondition(p > 0 && p <= 100, "a percentile is in (0, 100]")
        return sorted[rank(p, count: sorted.count) - 1]
    }

    /// The 1-based nearest rank of the `p`-th percentile among `count` samples: ⌈p/100 · count⌉,
    /// at least 1.
    public static func rank(_ p: Double, count: Int) -> Int {
        // p · count / 100 in integers where possible, so 90 % of 10 is exactly rank 9.
        let scaled = p * Double(count)
        let exact = (scaled / 100).rounded(.up)
        // Guard against 90 · 10 / 100 landing on 9.000000000001.
        let nearest = (scaled / 100).rounded()
        let r = abs(scaled / 100 - nearest) < 1e-9 ? nearest : exact
        return Swift.max(1, Swift.min(count, Int(r)))
    }
}

extension Duration {
    /// This duration in microseconds, as a floating-point number (for printing and JSON).
    public var inMicroseconds: Double {
        let (s, atto) = components
        return Double(s) * 1e6 + Double(atto) / 1e12
    }

    /// This duration in nanoseconds, as a floating-point number.
    public var inNanoseconds: Double {
        let (s, atto) = components
        return Double(s) * 1e9 + Double(atto) / 1e9
    }
}

/// How benchmark figures are written for people: the one format of `tapemu bench` and
/// `tapemu-bench`.
public enum BenchFigure {
    /// `850 ns`, `12.4 µs`, `312 µs`, `3.21 ms`, `1.20 s`.
    public static func time(_ d: Duration) -> String {
        let ns = d.inNanoseconds
        if ns < 1_000 { return String(format: "%.0f ns", ns) }
        if ns < 100_000 { return String(format: "%.1f µs", ns / 1e3) }
        if ns < 1_000_000 { return String(format: "%.0f µs", ns / 1e3) }
        if ns < 1_000_000_000 { return String(format: "%.2f ms", ns / 1e6) }
        return String(format: "%.2f s", ns / 1e9)
    }

    /// A difference of times with its sign: `+4.1 µs`, `−2.0 µs`.
    public static func signed(_ d: Duration) -> String {
        d < .zero ? "−" + time(.zero - d) : "+" + time(d)
    }
}
