import CardChannel
import EMVKernel
import ISO7816
import Testing
import BenchTiming

@Suite struct PercentileTests {
    /// Nearest rank: ⌈p/100 · n⌉, at least 1, at most n.
    @Test(arguments: [
        (50.0, 1, 1), (99.0, 1, 1), (50.0, 2, 1), (50.0, 3, 2), (50.0, 4, 2), (90.0, 10, 9),
        (90.0, 11, 10), (99.0, 100, 99), (99.0, 101, 100), (99.0, 1000, 990), (100.0, 5, 5), (0.1, 5, 1),
    ])
    func rank(p: Double, count: Int, expected: Int) {
        #expect(LatencyPercentiles.rank(p, count: count) == expected)
    }

    @Test func oneToAHundredMicroseconds() throws {
        // Shuffled on purpose: the percentiles sort.
        var samples = (1...100).map { Duration.microseconds($0) }
        samples.reverse()
        samples.swapAt(3, 70)
        let p = try #require(LatencyPercentiles(samples))
        #expect(p.count == 100)
        #expect(p.min == .microseconds(1))
        #expect(p.p50 == .microseconds(50))
        #expect(p.p90 == .microseconds(90))
        #expect(p.p99 == .microseconds(99))
        #expect(p.max == .microseconds(100))
        #expect(p.mean == .nanoseconds(50_500))
    }

    @Test func everyFigureIsAMeasuredSample() throws {
        let samples: [Duration] = [.microseconds(10), .microseconds(30)]
        let p = try #require(LatencyPercentiles(samples))
        #expect(p.p50 == .microseconds(10))   // no interpolation to 20 µs
        #expect(p.p90 == .microseconds(30))
        #expect(p.p99 == .microseconds(30))
    }

    @Test func oneSample() throws {
        let p = try #require(LatencyPercentiles([.milliseconds(3)]))
        #expect([p.min, p.p50, p.p90, p.p99, p.max, p.mean] == Array(repeating: .milliseconds(3), count: 6))
    }

    @Test func noSamplesNoPercentiles() {
        #expect(LatencyPercentiles([]) == nil)
        #expect(LatencyPercentiles(sorted: []) == nil)
    }

    @Test func microsecondsOfADuration() {
        #expect(Duration.nanoseconds(12_345).inMicroseconds == 12.345)
        #expect(Duration.seconds(2).inMicroseconds == 2_000_000)
        #expect(Duration.nanoseconds(1_500).inNanoseconds == 1_500)
    }
}

@Suite struct AirTimeTests {
    let air = ContactlessAirTime()
    /// One frame of `n` bytes, worked out independently: 9 etu per byte plus 2 etu of start and
    /// end of frame, 128 carrier cycles per etu.
    func frame(_ n: Int) -> Int { (9 * n + 2) * 128 }
    let fdt = 1_172

    @Test func aByteIsNineETU() {
        // 9 · 128 / 13.56 MHz = 84.956 µs
        #expect(ContactlessAirTime.duration(cycles: 9 * 128) == .nanoseconds(84_956))
        // One etu: 128 / 13.56 MHz = 9.4395 µs
        #expect(ContactlessAirTime.duration(cycles: 128) == .nanoseconds(9_440))
        #expect(ContactlessAirTime.duration(cycles: 0) == .zero)
    }

    @Test func theFrameDelaysAreTheStandardsMinimum() {
        // (9 · 128 + 20) / fc, n = 9: ≈ 86.43 µs.
        #expect(ContactlessAirTime.frameDelayPCDToPICC == 9 * 128 + 20)
        #expect(ContactlessAirTime.frameDelayPICCToPCD == 1_172)
        #expect(ContactlessAirTime.duration(cycles: 1_172) == .nanoseconds(86_431))
    }

    @Test func selectPPSEAnsweredBySW() {
        // 20-byte command + PCB + CRC, the frame delay, then SW1 SW2 + PCB + CRC.
        let cycles = frame(23) + fdt + frame(5)
        #expect(cycles == 33_940)
        #expect(air.exchangeCycles(commandLength: 20, responseLength: 2) == cycles)
        #expect(air.exchange(commandLength: 20, responseLength: 2) == .nanoseconds(2_502_950))
    }

    @Test(arguments: [253, 254, 300, 506, 507, 1000])
    func aLongCommandIsChained(length: Int) {
        // Blocks of at most 253 APDU bytes; the card acknowledges each but the last with an R(ACK).
        var blocks: [Int] = []
        var left = length
        while left > 0 { blocks.append(min(253, left)); left -= 253 }
        var expected = 0
        for (i, inf) in blocks.enumerated() {
            expected += frame(inf + 3)
            if i < blocks.count - 1 { expected += fdt + frame(3) + fdt }   // R(ACK) from the card
        }
        expected += fdt + frame(2 + 3)                                      // the response
        #expect(air.exchangeCycles(commandLength: length, responseLength: 2) == expected)
    }

    @Test(arguments: [255, 256, 257, 600])
    func aLongResponseIsChained(length: Int) {
        var blocks: [Int] = []
        var left = length
        while left > 0 { blocks.append(min(253, left)); left -= 253 }
        var expected = frame(5 + 3) + fdt                                   // a 5-byte READ RECORD
        for (i, inf) in blocks.enumerated() {
            expected += frame(inf + 3)
            if i < blocks.count - 1 { expected += fdt + frame(3) + fdt }   // R(ACK) from the reader
        }
        #expect(air.exchangeCycles(commandLength: 5, responseLength: length) == expected)
    }

    @Test func aSmallerFrameSizeChainsSooner() {
        let small = ContactlessAirTime(frameSize: 32)
        #expect(small.maxINF == 29)
        #expect(small.exchangeCycles(commandLength: 30, responseLength: 2)
                == frame(32) + fdt + frame(3) + fdt + frame(4) + fdt + frame(5))
    }

    @Test func aReadAddsTheDelayBeforeEachFurtherCommand() {
        let exchanges = [
            Exchange(command: .selectPPSE, response: ResponseAPDU(data: Array(repeating: 0x6F, count: 48), sw1: 0x90, sw2: 0),
                     start: .zero, duration: .milliseconds(1)),
            Exchange(command: .readRecord(1, sfi: 1), response: ResponseAPDU(sw1: 0x6A, sw2: 0x83),
                     start: .milliseconds(1), duration: .milliseconds(1)),
        ]
        let expected = frame(20 + 3) + fdt + frame(50 + 3) + fdt + frame(5 + 3) + fdt + frame(2 + 3)
        #expect(air.read(exchanges) == ContactlessAirTime.duration(cycles: expected))
        #expect(air.read(lengths: [(20, 50), (5, 2)]) == ContactlessAirTime.duration(cycles: expected))
        #expect(air.read([]) == .zero)
    }

    @Test func aFailedExchangeCountsItsCommandOnly() {
        let torn = Exchange(command: .readRecord(1, sfi: 1), response: nil, failure: .cardRemoved,
                            start: .zero, duration: .milliseconds(2))
        #expect(air.exchange(torn) == ContactlessAirTime.duration(cycles: frame(5 + 3)))
    }
}

@Suite struct ReadTimingSplitTests {
    @Test(arguments: [
        (UInt8(0xA4), ExchangeKind.select), (0xA8, .getProcessingOptions), (0xB2, .readRecord),
        (0xAE, .generateAC), (0xC0, .getResponse), (0xCA, .other), (0x00, .other),
    ])
    func kindByInstruction(ins: UInt8, kind: ExchangeKind) {
        #expect(ExchangeKind(instruction: ins) == kind)
        #expect(ExchangeKind(CommandAPDU(cla: 0x80, ins: ins, p1: 0, p2: 0)) == kind)
    }

    @Test func kindNames() {
        #expect(ExchangeKind.allCases.map(\.description)
                == ["SELECT", "GPO", "READ RECORD", "GENERATE AC", "GET RESPONSE", "other"])
    }

    @Test func hostIsTheRest() {
        // In process: no radio, so the air floor is not taken out.
        let inProcess = ReadTiming(total: .microseconds(30), airFloor: .milliseconds(30), airInPath: false,
                                   card: .microseconds(5), exchanges: [])
        #expect(inProcess.host == .microseconds(25))
        // A real reader: the air time is part of the total.
        let reader = ReadTiming(total: .milliseconds(50), airFloor: .milliseconds(30), airInPath: true,
                                card: nil, exchanges: [])
        #expect(reader.host == .milliseconds(20))
        // A payment: the gateway's time is taken out too.
        let payment = ReadTiming(total: .milliseconds(10), airFloor: .milliseconds(30), airInPath: false,
                                 card: .milliseconds(1), other: .milliseconds(6), exchanges: [])
        #expect(payment.host == .milliseconds(3))
        // Never negative.
        let odd = ReadTiming(total: .milliseconds(10), airFloor: .milliseconds(30), airInPath: true, card: nil, exchanges: [])
        #expect(odd.host == .zero)
    }

    @Test func theReportTakesTheMedianReadsSplit() throws {
        func read(_ total: Int, card: Int) -> ReadTiming {
            ReadTiming(total: .microseconds(total), exchanges: [
                Exchange(command: .selectPPSE, response: ResponseAPDU(sw1: 0x90, sw2: 0), start: .zero,
                         duration: .microseconds(total / 2)),
                Exchange(command: .readRecord(1, sfi: 1), response: ResponseAPDU(sw1: 0x90, sw2: 0),
                         start: .microseconds(total / 2), duration: .microseconds(total / 2)),
            ], card: .microseconds(card), airInPath: false)
        }
        let report = try #require(ReadTimingReport([read(40, card: 4), read(10, card: 1), read(20, card: 2)]))
        #expect(report.reads == 3)
        #expect(report.total.p50 == .microseconds(20))
        #expect(report.total.max == .microseconds(40))
        #expect(report.medianRead.card == .microseconds(2))
        #expect(report.medianRead.host == .microseconds(18))
        #expect(report.byKind.map(\.kind) == [.select, .readRecord])
        #expect(report[.select]?.p50 == .microseconds(10))
        #expect(report[.generateAC] == nil)
        #expect(ReadTimingReport([]) == nil)
    }
}

/// The one format of benchmark times, shared by `tapemu bench` and `tapemu-bench`.
@Suite struct BenchFigureTests {
    @Test("three significant figures, the unit following the size", arguments: [
        (Duration.nanoseconds(850), "850 ns"), (.nanoseconds(12_400), "12.4 µs"), (.nanoseconds(312_000), "312 µs"),
        (.microseconds(3_210), "3.21 ms"), (.milliseconds(1_200), "1.20 s"),
    ])
    func time(_ d: Duration, _ text: String) {
        #expect(BenchFigure.time(d) == text)
    }
}
