import Testing
import Timing

/// ``BootClock`` stands in for `ContinuousClock` on the PC/SC exchange path: the two must be the
/// same clock, and its conversions exact.
@Suite("Boot clock")
struct BootClockTests {
    @Test("whole nanoseconds of a duration, negative and sub-nanosecond included; saturating far out")
    func nanosecondsOfADuration() {
        #expect(BootClock.nanoseconds(in: .zero) == 0)
        #expect(BootClock.nanoseconds(in: .seconds(2)) == 2_000_000_000)
        #expect(BootClock.nanoseconds(in: .milliseconds(1500)) == 1_500_000_000)
        #expect(BootClock.nanoseconds(in: .nanoseconds(7)) == 7)
        #expect(BootClock.nanoseconds(in: .nanoseconds(-7)) == -7)
        #expect(BootClock.nanoseconds(in: .seconds(-3) + .nanoseconds(1)) == -2_999_999_999)
        // Below a nanosecond: truncated toward zero.
        #expect(BootClock.nanoseconds(in: Duration(secondsComponent: 0, attosecondsComponent: 999_999_999)) == 0)
        // Either side of the ±9.2 s (2^63 attoseconds) where the arithmetic changes.
        #expect(BootClock.nanoseconds(in: .nanoseconds(9_223_372_036)) == 9_223_372_036)
        #expect(BootClock.nanoseconds(in: .nanoseconds(9_223_372_037)) == 9_223_372_037)
        #expect(BootClock.nanoseconds(in: .nanoseconds(-9_223_372_037)) == -9_223_372_037)
        #expect(BootClock.nanoseconds(in: .seconds(3600) + .nanoseconds(5)) == 3_600_000_000_005)
        #expect(BootClock.nanoseconds(in: .seconds(Int64.max)) == .max)
        #expect(BootClock.nanoseconds(in: .seconds(Int64.min)) == .min)
    }

    @Test("reads the clock ContinuousClock reads: an instant made from it lands where ContinuousClock says")
    func sameClockAsContinuous() {
        // Both read within microseconds of each other; a clock of another epoch (CLOCK_REALTIME,
        // a process clock) would put the instant elsewhere by far more than 50 ms. (One that
        // stops during a suspend cannot be told apart on a machine that never slept.)
        let before = ContinuousClock.now
        let instant = BootClock.instant(BootClock.now + 1_000_000_000)
        let after = ContinuousClock.now
        #expect(instant >= before + .seconds(1) - .milliseconds(50))
        #expect(instant <= after + .seconds(1) + .milliseconds(50))
    }

    @Test("a continuous MonotonicClock's offsets map onto the boot clock; any other clock has none")
    func monotonicClockMapping() {
        let clock = MonotonicClock.continuous
        let offset = clock.now + .seconds(5)
        let mapped = clock.bootNanoseconds(at: offset)
        let expected = BootClock.now + 5_000_000_000
        #expect(mapped.map { abs($0 - expected) < 50_000_000 } == true)
        #expect(MonotonicClock(ManualClock()).bootNanoseconds(at: .seconds(1)) == nil)
    }
}
