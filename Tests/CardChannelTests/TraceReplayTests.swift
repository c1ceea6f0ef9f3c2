import Testing
import BERTLV
import ISO7816
@testable import CardChannel
import Timing
import TestSupport
@testable import APDUTrace

@Suite("Trace replay: matching modes, events, pacing")
struct TraceReplayTests {
    typealias S = TraceSamples

    /// The kernel-shaped session the sample records, with this run's own volatile data.
    static func session(_ gpo: CommandAPDU = S.gpo(un: "99887766", date: "270101"),
                        _ gac: CommandAPDU = S.generateAC(un: "0BADF00D", date: "270101", time: "235959"))
        -> [CommandAPDU] {
        [S.selectPPSE, S.selectVisa, gpo, S.readRecord1, S.readRecord2, gac]
    }

    @Test func strictReplayPlaysTheRecordedCard() async throws {
        let t = S.visa
        let channel = TraceReplayChannel(trace: t, matching: TraceMatching(mode: .strict))
        #expect(channel.atr == t.atr)
        for x in t.exchanges.dropLast(0) {
            guard case .response(let r)? = x.reply else { continue }
            let got = try await channel.transmit(try #require(x.commandAPDU))
            #expect(got == r)
        }
        #expect(channel.progress == (6, 6))
        // Then the recorded tear, which stays.
        for _ in 0..<2 {
            await #expect(throws: CardChannelError.self) { try await channel.transmit(S.readRecord1) }
            do { _ = try await channel.transmit(S.readRecord1) } catch { #expect(error.code == .cardRemoved) }
        }
        #expect(channel.isFinished)
    }

    @Test func maskedReplayIgnoresUnpredictableNumberDateAndTime() async throws {
        let channel = TraceReplayChannel(trace: S.visa)   // masked is the default
        #expect(channel.matching.mode == .masked)
        for c in Self.session() { _ = try await channel.transmit(c) }
        #expect(channel.progress.played == 6)
    }

    @Test func maskedRangesComeFromThePDOLAndCDOL() {
        let r = TraceResponder(trace: S.visa)
        // GPO: 80A80000 15 83 13 | 9F66(4) 9F02(6) 9F37(4) 5F2A(2) 9A(3): UN at 7+4+6, date at 7+16+2.
        #expect(r.maskedRanges(ofCommand: 3) == [17..<21, 23..<26])
        // GENERATE AC: 80AE8000 10 | 9F02(6) 9F37(4) 9A(3) 9F21(3).
        #expect(r.maskedRanges(ofCommand: 6) == [11..<15, 15..<18, 18..<21])
        #expect(r.maskedRanges(ofCommand: 1) == [])
        let withAmount = TraceResponder(trace: S.visa, matching: TraceMatching(mode: .masked, overridesAmount: true))
        #expect(withAmount.maskedRanges(ofCommand: 3) == [11..<17, 17..<21, 21..<23, 23..<26])
    }

    @Test func maskedReplayRejectsAnotherAmountUnlessOverridden() async throws {
        let other = Self.session(S.gpo(amount: "000000009999", un: "01020304"))
        let channel = TraceReplayChannel(trace: S.visa)
        _ = try await channel.transmit(other[0])
        _ = try await channel.transmit(other[1])
        let error = await expectThrows(CardChannelError.self, .traceMismatch, "a different amount matched") {
            _ = try await channel.transmit(other[2])
        }
        #expect(error?.reason.contains("exchange 3, line 11") == true)
        #expect(error?.reason.contains("first difference at byte 15") == true)
        // Both commands are shown; the recorded one with its ignored bytes as dots.
        #expect(error?.reason.contains("recorded: 80A8000015831336000000000000000100........0978......00") == true)
        #expect(error?.reason.contains("received: \(other[2].description)") == true)
        let overriding = TraceReplayChannel(trace: S.visa, matching: TraceMatching(mode: .masked, overridesAmount: true))
        for c in Self.session(S.gpo(amount: "000000009999", currency: "0840")) { _ = try await overriding.transmit(c) }
    }

    @Test func strictReplayRejectsANewUnpredictableNumber() async throws {
        let channel = TraceReplayChannel(trace: S.visa, matching: TraceMatching(mode: .strict))
        let run = Self.session()
        _ = try await channel.transmit(run[0])
        _ = try await channel.transmit(run[1])
        let error = await expectThrows(CardChannelError.self, .traceMismatch, "strict matched a new UN") {
            _ = try await channel.transmit(run[2])
        }
        #expect(error?.reason.contains("strict matching: first difference at byte 17") == true)
        // A mismatch does not move the trace: the recorded command still matches.
        let recorded = try #require(S.visa.exchanges[2].commandAPDU)
        _ = try await channel.transmit(recorded)
    }

    @Test func structuralReplayIgnoresTerminalDataButNotTheInstruction() async throws {
        let foreign = Self.session(S.gpo(ttq: "B6C04000", amount: "000000004200", currency: "0826"),
                                   S.generateAC(amount: "000000004200"))
        let channel = TraceReplayChannel(trace: S.visa, matching: TraceMatching(mode: .structural))
        for c in foreign { _ = try await channel.transmit(c) }

        let other = TraceReplayChannel(trace: S.visa, matching: TraceMatching(mode: .structural))
        let instruction = await expectThrows(CardChannelError.self, .traceMismatch, "structural matched another instruction") {
            _ = try await other.transmit(S.readRecord1)
        }
        #expect(instruction?.reason.contains("CLA INS P1 P2 differ") == true)
        let length = await expectThrows(CardChannelError.self, .traceMismatch, "structural matched another length") {
            _ = try await other.transmit(CommandAPDU.select(name: Array("2PAY.SYS.DDF0".utf8)))
        }
        #expect(length?.reason.contains("data length 13 instead of 14") == true)
    }

    @Test func theEndOfTheTraceIsAnError() async throws {
        let t = try APDUTrace(parsing: "@format tapemu-apdu-trace/1\n0 > 00A404000E325041592E5359532E444446303100\n0.1 < 6A82\n")
        let channel = TraceReplayChannel(trace: t)
        #expect(try await channel.transmit(S.selectPPSE).statusWord == .fileNotFound)
        await expectThrows(CardChannelError.self, .traceEnded, "played past the end") { _ = try await channel.transmit(S.selectVisa) }
    }

    static let events: [(String, CardChannelError.Code, String?)] = [
        ("card-removed", .cardRemoved, nil),
        ("timeout", .timeout, nil),
        ("reader-removed", .readerRemoved, nil),
        ("transmit-error SCARD_E_NOT_TRANSACTED", .transmitFailed, "SCARD_E_NOT_TRANSACTED"),
        ("transmit-error malformedResponse", .malformedResponse, nil),
    ]

    @Test(arguments: events)
    func recordedEventsReplayAtTheirPoint(_ event: String, _ code: CardChannelError.Code, _ detail: String?) async throws {
        let t = try APDUTrace(parsing: """
            @format tapemu-apdu-trace/1
            0 > 00A404000E325041592E5359532E444446303100
            0.01 < 9000
            0.02 > 00A4040007A000000003101000
            0.03 ! \(event)
            0.04 > 00B2010C00
            0.05 < 9000
            """)
        let channel = TraceReplayChannel(trace: t)
        _ = try await channel.transmit(S.selectPPSE)
        let error = await expectThrows(CardChannelError.self, code, "no event") { _ = try await channel.transmit(S.selectVisa) }
        if let detail { #expect(error?.detail == detail) }
        #expect(error?.reason.contains("trace line 4") == true)
        // The trace goes on after the event.
        #expect(try await channel.transmit(S.readRecord1).statusWord == .success)
    }

    @Test func aTearBeforeAnyCommandFiresOnTheFirstOne() async throws {
        let t = try APDUTrace(parsing: "@format tapemu-apdu-trace/1\n0 ! card-removed\n")
        let channel = TraceReplayChannel(trace: t)
        for _ in 0..<3 {
            await expectThrows(CardChannelError.self, .cardRemoved, "answered") { _ = try await channel.transmit(S.selectPPSE) }
        }
    }

    @Test func pacedReplayWaitsTheRecordedCardTime() async throws {
        let manual = ManualClock()
        let clock = MonotonicClock(manual)
        let channel = TraceReplayChannel(trace: S.visa, matching: TraceMatching(mode: .strict), paced: true, clock: clock)
        let task = Task { try await channel.transmit(S.selectPPSE) }
        await manual.waitForSleepers(1)
        // Recorded: command at 0.000000, response at 0.004100.
        manual.advance(by: .microseconds(4099))
        #expect(manual.sleeperCount == 1)
        manual.advance(by: .microseconds(1))
        let r = try await task.value
        #expect(r.statusWord == .success)
        #expect(clock.now == .microseconds(4100))
    }

    @Test func pacedReplayCanBeCancelled() async throws {
        let manual = ManualClock()
        let channel = TraceReplayChannel(trace: S.visa, matching: TraceMatching(mode: .strict), paced: true,
                                         clock: MonotonicClock(manual))
        let task = Task { try await channel.transmit(S.selectPPSE) }
        await manual.waitForSleepers(1)
        task.cancel()
        await expectThrows(CardChannelError.self, .cancelled, "answered after cancel") { _ = try await task.value }
    }

    @Test func unpacedReplayDoesNotTouchTheClock() async throws {
        let manual = ManualClock()
        let channel = TraceReplayChannel(trace: S.visa, clock: MonotonicClock(manual))
        for c in Self.session() { _ = try await channel.transmit(c) }
        #expect(manual.now.offset == .zero)
    }

    @Test func aCardSessionOverAReplayFetchesGetResponse() async throws {
        // The card answered 61xx; the session's GET RESPONSE is in the trace too.
        let t = try APDUTrace(parsing: """
            @format tapemu-apdu-trace/1
            0 > 00A404000E325041592E5359532E444446303100
            0.01 < 6104
            0.02 > 00C0000004
            0.03 < 0102030490 00
            """)
        let session = CardSession(channel: TraceReplayChannel(trace: t))
        let r = try await session.send(S.selectPPSE)
        #expect(r.data == [1, 2, 3, 4])
        #expect(session.exchanges.count == 2)
    }

    @Test func theResponderIsReusableAfterReset() {
        var r = TraceResponder(trace: S.visa, matching: TraceMatching(mode: .strict))
        guard case .response = r.respond(to: S.selectPPSE.bytes) else { Issue.record("no response"); return }
        guard case .mismatch = r.respond(to: S.selectPPSE.bytes) else { Issue.record("no mismatch"); return }
        r.reset()
        guard case .response = r.respond(to: S.selectPPSE.bytes) else { Issue.record("no response after reset"); return }
        #expect(r.commandsPlayed == 1)
    }

    @Test func thePDOLIsFoundInAResponseFetchedWithGetResponse() {
        // A T=0 card: the SELECT answer (with the PDOL) comes through 61xx and GET RESPONSE.
        let t = try! APDUTrace(parsing: """
            @format tapemu-apdu-trace/1
            0 > 00A4040007A000000003101000
            0 < 612B
            0 > 00C000002B
            0 < 6F298407A0000000031010A51E500B56495341204352454449549F380E9F66049F02069F37045F2A029A039000
            0 > 80A800001583133600000000000000010012345678097826113000
            0 < 6985
            """)
        #expect(TraceResponder(trace: t).maskedRanges(ofCommand: 3) == [17..<21, 23..<26])
        #expect(t.terminalData[.amountAuthorised] == [0, 0, 0, 0, 1, 0])
    }

    @Test func recordedTerminalDataComesFromPDOLAndCDOL() {
        let data = S.visa.terminalData
        #expect(data[.terminalTransactionQualifiers] == [0x36, 0, 0, 0])
        #expect(data[.amountAuthorised] == [0, 0, 0, 0, 1, 0])
        #expect(data[.transactionCurrencyCode] == [0x09, 0x78])
        #expect(data[.unpredictableNumber] == [0x12, 0x34, 0x56, 0x78])   // the GPO's, first wins
        #expect(data[.transactionTime] == [0x10, 0x15, 0x00])              // from the CDOL1 data
    }

    @Test func aTraceDeclaresItsMatching() async throws {
        var t = S.visa
        t[header: "match"] = "structural"
        let channel = TraceReplayChannel(trace: t)
        #expect(channel.matching.mode == .structural)
        let foreign = Self.session(S.gpo(ttq: "B6C04000"))
        for c in foreign { _ = try await channel.transmit(c) }
        // An explicit matching wins over the header.
        #expect(TraceReplayChannel(trace: t, matching: TraceMatching(mode: .strict)).matching.mode == .strict)
        #expect(TraceMatching.declared(by: S.visa).mode == .masked)
    }
}
