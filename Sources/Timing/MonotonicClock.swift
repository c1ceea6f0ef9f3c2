import Foundation

/// The one clock type of tapemu: a type-erased monotonic `Clock<Duration>` — offsets from the
/// moment it was made, sleeping until an offset, and timers at an offset. Every timing and
/// timeout in every layer (card sessions, PC/SC waits, the payment flow, the gateway) goes
/// through one, so tests inject a ``ManualClock`` and never sleep for real.
public struct MonotonicClock: Sendable {
    private let nowOffset: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration) async throws -> Void
    /// The origin on ``BootClock``, when the wrapped clock is `ContinuousClock`: the very same
    /// moment as the wrapped clock's origin, converted (``BootClock/nanoseconds(at:)``), not the
    /// clock read a second time — ``now`` and ``bootNanoseconds(at:)`` count from here, sleeps
    /// from that origin, and any gap between two reads made every sleep and timer end that much
    /// early by ``now``. ``now`` then costs one vDSO call and integer arithmetic, and deadlines
    /// are kept by the shared ``DeadlineWatchdog`` rather than a sleeping task. An integer, not a
    /// `ContinuousClock.Instant`: with one of those stored, every copy of this clock and every
    /// ``now`` went through run-time metadata, twice per APDU (issue 16).
    private let bootOriginNanos: Int64?

    /// Wraps any clock whose durations are `Duration` (`ContinuousClock`, `SuspendingClock`,
    /// ``ManualClock``).
    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        bootOriginNanos = (origin as? ContinuousClock.Instant).map(BootClock.nanoseconds(at:))
        nowOffset = { origin.duration(to: clock.now) }
        sleeper = { offset in try await clock.sleep(until: origin.advanced(by: offset), tolerance: nil) }
    }

    /// The wall-independent continuous clock.
    public static var continuous: MonotonicClock { MonotonicClock(ContinuousClock()) }

    /// Time since this clock value was made.
    public var now: Duration {
        // The continuous clock without the call through the wrapped clock's closure (twice per
        // APDU in a card session).
        if let origin = bootOriginNanos { return .nanoseconds(BootClock.now &- origin) }
        return nowOffset()
    }

    /// The instant of `offset` in nanoseconds of ``BootClock`` (the clock `ContinuousClock` reads),
    /// when this clock wraps `ContinuousClock` (nil for any other clock): for code that keeps many
    /// deadlines of one clock in a watch of its own, compared as integers.
    public func bootNanoseconds(at offset: Duration) -> Int64? {
        guard let origin = bootOriginNanos else { return nil }
        return origin &+ BootClock.nanoseconds(in: offset)
    }

    /// Sleeps until `deadline` (an offset like ``now``). Throws `CancellationError` when cancelled.
    public func sleep(until deadline: Duration) async throws {
        try await sleeper(deadline)
    }

    /// Sleeps for `duration`.
    public func sleep(for duration: Duration) async throws {
        try await sleeper(now + duration)
    }

    /// A timer: calls `fire` (from a new task; keep it short) once `deadline` (an offset like
    /// ``now``) has come, unless the returned timer is cancelled first.
    ///
    /// On `ContinuousClock` this is an entry in the shared ``DeadlineWatchdog`` (no task, no
    /// thread wake-up per deadline); on any other clock a task sleeping until the deadline. The
    /// caller cannot tell which.
    public func schedule(at deadline: Duration, _ fire: @escaping @Sendable () -> Void) -> Timer {
        if let instant = bootNanoseconds(at: deadline) {
            let token = DeadlineWatchdog.shared.schedule(at: BootClock.instant(instant), fire)
            return Timer { DeadlineWatchdog.shared.cancel(token) }
        }
        let task = Task {
            do {
                try await sleep(until: deadline)
            } catch {
                return   // cancelled: the work finished first (or the caller was cancelled)
            }
            fire()
        }
        return Timer { task.cancel() }
    }

    /// A timer from ``schedule(at:_:)``.
    public struct Timer: Sendable {
        private let stop: @Sendable () -> Void
        fileprivate init(_ stop: @escaping @Sendable () -> Void) { self.stop = stop }
        /// Stops the timer; nothing happens when it has fired already.
        public func cancel() { stop() }
    }
}

extension Duration {
    /// For messages: `1 ns`, `250 µs`, `10 ms`, `2 s`, `1.5 s` (not Swift's `1e-09 seconds`).
    public var readable: String {
        let (s, atto) = components
        let ns = Double(s) * 1e9 + Double(atto) / 1e9
        func trim(_ v: Double) -> String {
            v == v.rounded() ? String(Int64(v)) : String(format: "%.3g", v)
        }
        switch abs(ns) {
        case ..<1_000: return "\(trim(ns)) ns"
        case ..<1_000_000: return "\(trim(ns / 1e3)) µs"
        case ..<1_000_000_000: return "\(trim(ns / 1e6)) ms"
        default: return "\(trim(ns / 1e9)) s"
        }
    }
}

/// `CLOCK_BOOTTIME` in nanoseconds: the clock `ContinuousClock` reads on Linux (the Swift
/// runtime's `swift_get_time`), read and compared as plain integers. `ContinuousClock.Instant`
/// is handled through run-time value witnesses outside the standard library, which showed up in
/// the profile of every PC/SC exchange (issue 16).
public enum BootClock {
    /// Now.
    public static var now: Int64 {
        var t = timespec()
        clock_gettime(CLOCK_BOOTTIME, &t)
        return Int64(t.tv_sec) &* 1_000_000_000 &+ Int64(t.tv_nsec)
    }

    /// Whole nanoseconds in `duration` (saturating far beyond any deadline: ±292 years).
    public static func nanoseconds(in duration: Duration) -> Int64 {
        // Up to ±9.2 s (every APDU deadline of a session's clock): a 64-bit division by a
        // constant, which compiles to a multiplication. `components` divides 128 bits at run time.
        if let small = Int64(exactly: duration.attoseconds) { return small / 1_000_000_000 }
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }

    /// The `ContinuousClock` instant of `nanoseconds` on this clock: exactly, counted from the
    /// clock's epoch (reading both clocks now and subtracting was off by the time between the
    /// two reads — early, so a deadline fired early: by microseconds, by a time slice when the
    /// thread was preempted between them).
    public static func instant(_ nanoseconds: Int64) -> ContinuousClock.Instant {
        ContinuousClock().systemEpoch.advanced(by: .nanoseconds(nanoseconds))
    }

    /// The nanoseconds on this clock of a `ContinuousClock` instant (``instant(_:)`` reversed).
    public static func nanoseconds(at instant: ContinuousClock.Instant) -> Int64 {
        nanoseconds(in: ContinuousClock().systemEpoch.duration(to: instant))
    }
}
