import Glibc
import Testing
@testable import Timing

/// A continuous ``MonotonicClock`` counts ``MonotonicClock/now`` and the PC/SC thread's deadlines
/// on ``BootClock`` and its sleeps and timers on `ContinuousClock`: the two must be one origin,
/// and the conversions between the clocks exact, or every deadline ends early.
@Suite("MonotonicClock on the continuous clock: now, its deadlines and its timers agree")
struct MonotonicClockTests {
    /// `CLOCK_BOOTTIME` in nanoseconds, read here independently of the code under test.
    private static func bootNanos() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_BOOTTIME, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }

    @Test("ContinuousClock reads CLOCK_BOOTTIME on Linux, counted from its systemEpoch")
    func continuousClockIsBootTime() {
        let epoch = ContinuousClock().systemEpoch
        for _ in 0..<1_000 {
            let before = Self.bootNanos()
            let instant = epoch.duration(to: ContinuousClock.now)
            let after = Self.bootNanos()
            let (s, atto) = instant.components
            let nanos = s * 1_000_000_000 + atto / 1_000_000_000
            #expect(before <= nanos && nanos <= after, "ContinuousClock at \(nanos), CLOCK_BOOTTIME \(before)…\(after)")
            if nanos < before || nanos > after { break }
        }
    }

    /// The PC/SC thread's watch arms the shared DeadlineWatchdog at `BootClock.instant(deadline)`:
    /// reading both clocks and subtracting put that instant early by the time between the two
    /// reads (a preempted thread: a time slice early).
    @Test("BootClock.instant and BootClock.nanoseconds(at:) are exact, and each other's inverse")
    func conversionsAreExact() {
        let now = Self.bootNanos()
        var wrong = 0
        for step in 0..<2_000 {
            let n = now + Int64(step) * 1_234_567 - 1_000_000_000
            let instant = BootClock.instant(n)
            if ContinuousClock().systemEpoch.duration(to: instant) != .nanoseconds(n) { wrong += 1 }
            if BootClock.nanoseconds(at: instant) != n { wrong += 1 }
        }
        #expect(wrong == 0, "\(wrong) conversions of 4000 were off")
    }

    @Test("now, mapped to the boot clock, is the moment it was read")
    func nowMapsToItsOwnMoment() {
        var off = 0
        for _ in 0..<20_000 {
            let clock = MonotonicClock.continuous
            let before = Self.bootNanos()
            let offset = clock.now
            let after = Self.bootNanos()
            let n = clock.bootNanoseconds(at: offset)!
            if n < before || n > after { off += 1 }
            #expect(offset >= .zero)
        }
        #expect(off == 0, "\(off) of 20000 mapped outside the read")
    }
}
