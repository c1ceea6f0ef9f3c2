/// A type-erased monotonic `Clock<Duration>`: offsets from the moment it was made, and
/// sleeping until an offset. Every timing and timeout in tapemu goes through one, so tests
/// inject a ``ManualClock`` and never sleep for real.
public struct MonotonicClock: Sendable {
    private let nowOffset: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration) async throws -> Void
    /// The origin, when the wrapped clock is `ContinuousClock` (deadlines can then be kept by a
    /// plain timer rather than a sleeping task).
    private let continuousOrigin: ContinuousClock.Instant?

    /// Wraps any clock whose durations are `Duration` (`ContinuousClock`, `SuspendingClock`,
    /// ``ManualClock``).
    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        continuousOrigin = origin as? ContinuousClock.Instant
        nowOffset = { origin.duration(to: clock.now) }
        sleeper = { offset in try await clock.sleep(until: origin.advanced(by: offset), tolerance: nil) }
    }

    /// The wall-independent continuous clock.
    public static var continuous: MonotonicClock { MonotonicClock(ContinuousClock()) }

    /// Time since this clock value was made.
    public var now: Duration { nowOffset() }

    /// Sleeps until `deadline` (an offset like ``now``). Throws `CancellationError` when cancelled.
    public func sleep(until deadline: Duration) async throws {
        try await sleeper(deadline)
    }

    /// The `ContinuousClock` instant of `offset`, when this clock wraps `ContinuousClock`; nil
    /// for any other clock (a ``ManualClock`` in tests).
    public func continuousInstant(_ offset: Duration) -> ContinuousClock.Instant? {
        continuousOrigin.map { $0.advanced(by: offset) }
    }

    /// Sleeps for `duration`.
    public func sleep(for duration: Duration) async throws {
        try await sleeper(now + duration)
    }
}
