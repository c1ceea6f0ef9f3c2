import Testing
import Synchronization
import BERTLV
import PaymentRules
import ISO7816
@testable import CardChannel
import Timing
@testable import APDUTrace
import TestSupport

@Suite("Recording and redaction")
struct TraceRecordingTests {
    typealias S = TraceSamples

    /// The sample's card as a scripted channel.
    static func card(clock: MonotonicClock = .continuous) -> ScriptedChannel {
        ScriptedChannel(S.visa.exchanges.compactMap { x -> ScriptedChannel.Step? in
            guard case .response(let r)? = x.reply else { return nil }
            return .respondAfter(x.cardTime ?? .zero, r.bytes)
        } + [.fail(CardChannelError(.cardRemoved, "torn", detail: "SCARD_W_REMOVED_CARD"))], clock: clock)
    }

    @Test func recordsExchangesTimesAndTheTear() async throws {
        let manual = ManualClock()
        let clock = MonotonicClock(manual)
        let recorder = RecordingChannel(wrapping: Self.card(clock: clock), headers: [.init("title", "rec")],
                                        redact: false, clock: clock)
        let commands = S.visa.exchanges.compactMap(\.commandAPDU)
        for (i, c) in commands.enumerated() {
            let task = Task { try await recorder.transmit(c) }
            let cardTime = S.visa.exchanges[i].cardTime ?? .zero
            if cardTime > .zero {
                await manual.waitForSleepers(1)
                manual.advance(by: cardTime)
            }
            _ = try await task.value
            manual.advance(by: .milliseconds(1))   // the terminal's own time between commands
        }
        do {
            _ = try await recorder.transmit(S.readRecord1)
            Issue.record("no tear")
        } catch {
            #expect(error.code == .cardRemoved)
        }
        let t = recorder.trace
        #expect(t.title == "rec")
        #expect(t.atr == [0x3B, 0x80, 0x80, 0x01, 0x01])
        #expect(t.recorded != nil)
        #expect(!t.isRedacted)
        #expect(t.exchanges.map(\.command) == commands.map(\.bytes) + [S.readRecord1.bytes])
        #expect(t.exchanges.map(\.reply).dropLast() == S.visa.exchanges.map(\.reply))
        #expect(t.exchanges.last?.reply == .event(.cardRemoved))
        #expect(t.exchanges.map(\.cardTime) == S.visa.exchanges.map(\.cardTime) + [.zero])
        #expect(t.exchanges[1].commandTime == .microseconds(4100) + .milliseconds(1))
        // Written and read back, it replays.
        let replay = TraceReplayChannel(trace: try APDUTrace(parsing: t.text), matching: TraceMatching(mode: .strict))
        for c in commands { _ = try await replay.transmit(c) }
    }

    /// A channel that keeps deadlines itself (as the PC/SC channel does): answers with 9000,
    /// or, told to, times out through the caller's `onTimeout`; counts which transmit was used.
    final class DeadlineKeepingChannel: CardChannel, Sendable {
        let timesOut: Bool
        let plain = Mutex(0), withDeadline = Mutex(0)
        init(timesOut: Bool) { self.timesOut = timesOut }
        var atr: [UInt8] { [0x3B, 0x00] }
        func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
            plain.withLock { $0 += 1 }
            return ResponseAPDU(data: [], statusWord: .success)
        }
        func transmit(_ command: CommandAPDU, deadline: Duration, on clock: MonotonicClock,
                      onTimeout: @escaping @Sendable () -> CardChannelError) async throws(CardChannelError) -> ResponseAPDU {
            withDeadline.withLock { $0 += 1 }
            if timesOut { throw onTimeout() }
            return ResponseAPDU(data: [0x01], statusWord: .success)
        }
    }

    @Test("the recorder passes a session's deadline to the recorded channel's own deadline transmit, and records its timeout")
    func recorderKeepsTheChannelsDeadline() async throws {
        for timesOut in [false, true] {
            let base = DeadlineKeepingChannel(timesOut: timesOut)
            let recorder = RecordingChannel(wrapping: base, headers: [], redact: false, clock: .continuous)
            let session = CardSession(channel: recorder, apduTimeout: .seconds(2))
            do {
                let r = try await session.send(S.readRecord1)
                #expect(!timesOut)
                #expect(r.data == [0x01])
            } catch {
                #expect(timesOut)
                #expect(error.code == .timeout)
            }
            #expect(base.withDeadline.withLock { $0 } == 1)
            #expect(base.plain.withLock { $0 } == 0)   // not the default: a task and a timer raced
            let t = recorder.trace
            #expect(t.exchanges.map(\.command) == [S.readRecord1.bytes])
            #expect(t.exchanges.first?.reply == (timesOut ? .event(.timeout) : .response(ResponseAPDU(data: [0x01], statusWord: .success))))
        }
    }

    /// Answers 9000 and notes, per exchange, whether its deadline transmit ran isolated to the
    /// main actor (it inherits its caller's isolation: nonisolated(nonsending)).
    final class IsolationProbeChannel: CardChannel, Sendable {
        let onMainActor = Mutex<[Bool]>([])
        var atr: [UInt8] { [0x3B, 0x00] }
        func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
            ResponseAPDU(data: [], statusWord: .success)
        }
        nonisolated(nonsending) func transmit(_ command: CommandAPDU, deadline: Duration, on clock: MonotonicClock,
                                              onTimeout: @escaping @Sendable () -> CardChannelError) async throws(CardChannelError) -> ResponseAPDU {
            let isolation = #isolation
            onMainActor.withLock { $0.append(isolation === MainActor.shared) }
            return ResponseAPDU(data: [], statusWord: .success)
        }
    }

    @Test("the recorder keeps its caller's executor: the recorded channel's deadline transmit runs where the session's send does (no switch per exchange)")
    @MainActor func recorderKeepsTheCallersExecutor() async throws {
        let base = IsolationProbeChannel()
        _ = try await CardSession(channel: base).send(S.readRecord1)   // the session alone: on the main actor
        _ = try await CardSession(channel: RecordingChannel(wrapping: base, redact: false)).send(S.readRecord1)
        #expect(base.onMainActor.withLock { $0 } == [true, true])
    }

    /// A card that never answers.
    struct MuteCard: CardResponder {
        var atr: [UInt8] { [0x3B, 0x00] }
        func powerOn() {}
        func process(_ command: [UInt8]) -> CardReply { .mute }
    }

    @Test("a mute in-process card under the recorder: the session's deadline ends the wait and the timeout is recorded by the time send returns")
    func recorderMuteCardTimeout() async throws {
        let manual = ManualClock()
        let clock = MonotonicClock(manual)
        let recorder = RecordingChannel(wrapping: ResponderChannel(responder: MuteCard(), clock: clock, paced: false),
                                        redact: false, clock: clock)
        let session = CardSession(channel: recorder, apduTimeout: .milliseconds(500), clock: clock)
        let task = Task { try await session.send(S.readRecord1) }
        await manual.waitForSleepers(2)   // the deadline and the mute card's wait
        manual.advance(by: .milliseconds(499))
        #expect(recorder.trace.exchanges.isEmpty)
        manual.advance(by: .milliseconds(1))
        let result = await task.result
        #expect((result.error as? CardChannelError)?.code == .timeout)
        let t = recorder.trace
        #expect(t.exchanges.map(\.command) == [S.readRecord1.bytes])
        #expect(t.exchanges.first?.reply == .event(.timeout))
        #expect(session.exchanges.map(\.failure) == [.timeout])
    }

    static let failures: [(CardChannelError, TraceEvent)] = [
        (CardChannelError(.cardRemoved, "x"), .cardRemoved),
        (CardChannelError(.timeout, "x"), .timeout),
        (CardChannelError(.cancelled, "x"), .timeout),
        (CardChannelError(.readerRemoved, "x"), .readerRemoved),
        (CardChannelError(.transmitFailed, "x", detail: "SCARD_E_NOT_TRANSACTED"), .transmitError("SCARD_E_NOT_TRANSACTED")),
        (CardChannelError(.malformedResponse, "x"), .transmitError("malformedResponse")),
    ]

    @Test(arguments: failures)
    func failuresAreRecordedAsEventsThatReplay(_ failure: CardChannelError, _ event: TraceEvent) async throws {
        let recorder = RecordingChannel(wrapping: ScriptedChannel([.fail(failure)]), redact: false)
        await #expect(throws: CardChannelError.self) { try await recorder.transmit(S.selectPPSE) }
        let t = try APDUTrace(parsing: recorder.trace.text)
        #expect(t.exchanges.first?.reply == .event(event))
        let replay = TraceReplayChannel(trace: t)
        do {
            _ = try await replay.transmit(S.selectPPSE)
            Issue.record("no event")
        } catch {
            #expect(error.code == (failure.code == .cancelled ? .timeout : failure.code))
        }
    }

    @Test func redactionDefaultsByKindOfSource() {
        #expect(RecordingChannel(wrapping: ScriptedChannel([])).redacts)          // stands in for a reader
        #expect(!RecordingChannel(wrapping: TraceReplayChannel(trace: S.visa)).redacts)
        #expect(!RecordingChannel(wrapping: ScriptedChannel([]), redact: false).redacts)
    }

    // MARK: Redaction

    /// Every way the PAN could show in a trace file: hex of its BCD at either nibble offset, its
    /// ASCII digits, the hex of its ASCII.
    static func leaks(_ pan: String, in text: String) -> [String] {
        var found: [String] = []
        let upper = text.uppercased()
        if upper.contains(pan) { found.append("digits / BCD hex") }
        let asciiHex = Hex.encode(Array(pan.utf8))
        if upper.contains(asciiHex) { found.append("hex of ASCII") }
        return found
    }

    @Test func redactionReplacesThePANEverywhereConsistently() throws {
        let original = S.visa
        #expect(!Self.leaks(S.pan, in: original.text).isEmpty)   // the test can see a leak
        let result = TraceRedactor.redact(original)
        let red = result.trace
        #expect(result.panCount == 1)
        #expect(result.nameCount == 1)
        #expect(red.isRedacted)
        #expect(red.text.contains("@redacted yes"))
        #expect(Self.leaks(S.pan, in: red.text) == [])
        #expect(!red.text.contains("SMITH"))
        #expect(!Hex.encode(Array("SMITH/JOHN".utf8)).isEmpty && !red.text.contains(Hex.encode(Array("SMITH/JOHN".utf8))))
        for e in red.entries {
            let bytes: [UInt8]
            switch e.kind {
            case .command(let b): bytes = b
            case .response(let r): bytes = r.bytes
            case .event: continue
            }
            #expect(!bytes.contains(subsequence: try Hex.decode(S.pan)))
            #expect(!bytes.contains(subsequence: Array(S.pan.utf8)))
        }

        // The same test PAN in 5A, track 2 (57) and track 1 (56); Luhn-valid, same length, Visa.
        let gpo = try BERTLV.parse(try #require(Self.response(red, 3)).data)
        let record = try BERTLV.parse(try #require(Self.response(red, 4)).data)
        let t2 = try Track2(bytes: try #require(gpo.find(.track2EquivalentData)).value)
        let pan5A = try PAN(bcd: try #require(record.find(.pan)).value)
        #expect(t2.pan == pan5A)
        #expect(pan5A.isLuhnValid)
        #expect(pan5A.digits.count == S.pan.count)
        #expect(pan5A.digits.first == "4")
        #expect(pan5A.digits != S.pan)
        #expect(t2.expiry == "2512")
        let track1 = String(decoding: try #require(record.find(0x56)).value, as: UTF8.self)
        #expect(track1 == "B\(pan5A.digits)^CARDHOLDER^2512201")
        let name = String(decoding: try #require(gpo.find(.cardholderName)).value, as: UTF8.self)
        #expect(name == "CARDHOLDER")
        // Lengths are kept: every TLV still parses, every response keeps its status word.
        #expect(red.exchanges.map { $0.reply.map(Self.sw) } == original.exchanges.map { $0.reply.map(Self.sw) })
        #expect(red.exchanges.map { Self.length($0.reply) } == original.exchanges.map { Self.length($0.reply) })
    }

    @Test("a redacted trace masks every card number in its text — another card's in a comment, a title, an event — and keeps its ATR and format")
    func anotherCardsNumberInTheTextIsMasked() throws {
        let text = """
            @format tapemu-apdu-trace/1
            @title Visa, then 5413330089010434 by hand
            @atr 3B8F8001804F0CA0000003060300030000000068
            # the customer's other card: 5413330089010434
            0 > 00A404000E325041592E5359532E444446303100
            0.1 ! transmit-error reader said 5413330089010434
            """
        let red = try APDUTrace(parsing: text).redacted()
        #expect(!red.text.contains("5413330089010434"))
        #expect(red.text.contains("541333******0434"))
        #expect(red.headers.first { $0.key == "atr" }?.value == "3B8F8001804F0CA0000003060300030000000068")
        #expect(try APDUTrace(parsing: red.text).isRedacted)
    }

    @Test func aRedactedTraceStillReplays() async throws {
        let red = try APDUTrace(parsing: S.visa.redacted().text)
        let channel = TraceReplayChannel(trace: red)
        for c in TraceReplayTests.session() { _ = try await channel.transmit(c) }
    }

    @Test func theRecorderRedactsWhatItWrites() async throws {
        let recorder = RecordingChannel(wrapping: Self.card(), redact: true)
        for c in S.visa.exchanges.compactMap(\.commandAPDU) { _ = try await recorder.transmit(c) }
        #expect(recorder.trace.isRedacted)
        #expect(Self.leaks(S.pan, in: recorder.trace.text) == [])
        #expect(!Self.leaks(S.pan, in: recorder.unredactedTrace.text).isEmpty)
    }

    @Test func thePANIsFoundInATruncatedResponseAndAtOddNibbles() throws {
        // A GPO response cut short by a capture (no longer parses as TLV), and the PAN again,
        // shifted by one nibble, inside a proprietary object.
        let text = """
            @format tapemu-apdu-trace/1
            0 > 80A8000002830000
            0.1 < 77309F10010057134761739001010119D2512201000000
            0.4 > 00B2020C00
            0.5 < 700C9F7F0904761739001010119F9000
            """
        let t = try APDUTrace(parsing: text)
        let red = t.redacted()
        #expect(Self.leaks(S.pan, in: red.text) == [])
        // The proprietary object that held the whole PAN at an odd nibble was rewritten too.
        #expect(!red.text.contains("04761739001010119F"))
    }

    /// A card may hand a long answer out in several pieces (61xx, GET RESPONSE, 61xx again):
    /// a PAN cut between two pieces is in no single response, yet the trace holds it whole.
    /// The GPO answer of `chained-61xx-6cxx.apdu` is split inside its track 2, the way such a
    /// card answers; redacted, no chain of pieces put back together may hold the card's PAN.
    @Test("a PAN split between two GET RESPONSE pieces of one answer is replaced, consistently with 5A")
    func thePANSplitAcrossAResponseChainIsReplaced() throws {
        let original = try APDUTrace(contentsOfFile: S.corpus + "/chained-61xx-6cxx.apdu")
        let pan = "4761739001010010"
        var t = original
        let gpo = try #require(t.entries.firstIndex { e in
            if case .response(let r) = e.kind { return r.data.first == 0x77 }
            return false
        })
        guard case .response(let whole) = t.entries[gpo].kind else { return }
        // Cut after the tag, the length and the first four bytes (8 digits) of the track 2.
        let cut = try #require(whole.data.firstRange(of: [0x57, 0x13] as [UInt8]) ?? whole.data.firstRange(of: [0x57, 0x11] as [UInt8])).lowerBound + 6
        let first = Array(whole.data[..<cut]), rest = Array(whole.data[cut...])
        t.entries[gpo].kind = .response(ResponseAPDU(data: first, statusWord: StatusWord(sw1: 0x61, sw2: UInt8(rest.count))))
        t.entries.insert(contentsOf: [
            .command(try CommandAPDU(bytes: [0x00, 0xC0, 0x00, 0x00, UInt8(rest.count)]), at: t.entries[gpo].time),
            .response(ResponseAPDU(data: rest, statusWord: whole.statusWord), at: t.entries[gpo].time),
        ], at: gpo + 1)
        #expect(Self.leaks(pan, in: Hex.encode(first + rest)) != [])   // the pieces hold it together
        #expect(Self.leaks(pan, in: Hex.encode(first)) == [] && Self.leaks(pan, in: Hex.encode(rest)) == [])   // no piece alone

        let red = try APDUTrace(parsing: t.redacted().text)
        guard case .response(let a) = red.entries[gpo].kind, case .response(let b) = red.entries[gpo + 2].kind else {
            Issue.record("the pieces are gone"); return
        }
        #expect(Self.leaks(pan, in: Hex.encode(a.data + b.data)) == [])
        #expect(a.statusWord == StatusWord(sw1: 0x61, sw2: UInt8(rest.count)) && b.statusWord == .success)
        // The track 2 put back together holds the same test PAN as the record's 5A.
        let track2 = try Track2(bytes: try #require(BERTLV.parse(a.data + b.data).find(.track2EquivalentData)).value)
        let record = try #require(red.exchanges.last?.reply)
        guard case .response(let r) = record else { Issue.record("no record"); return }
        let pan5A = try PAN(bcd: try #require(BERTLV.parse(r.data).find(.pan)).value)
        #expect(track2.pan == pan5A)
        #expect(pan5A.digits != pan)
    }

    /// Found by fuzzing: header keys were not redacted, and a key is letters and digits.
    @Test func thePANIsReplacedInHeaderKeysToo() throws {
        let text = """
            @format tapemu-apdu-trace/1
            @note-4761739001010119 seen
            0 > 00B2010C00
            0.1 < 700A5A0847617390010101199000
            """
        let red = try APDUTrace(parsing: text).redacted()
        #expect(Self.leaks(S.pan, in: red.text) == [])
        #expect(red.headers.first?.key.hasPrefix("note-") == true)
        #expect(try APDUTrace(parsing: red.text) == red)
    }

    @Test func distinctPANsGetDistinctReplacements() throws {
        let text = """
            @format tapemu-apdu-trace/1
            0 > 00B2010C00
            0.1 < 700A5A0847617390010101199000
            0.2 > 00B2020C00
            0.3 < 700A5A0841111111111111119000
            """
        let red = try APDUTrace(parsing: text).redacted()
        let pans = try red.exchanges.map { x -> String in
            guard case .response(let r)? = x.reply else { return "" }
            return try PAN(bcd: try #require(BERTLV.parse(r.data).find(.pan)).value).digits
        }
        #expect(pans.count == 2)
        #expect(pans[0] != pans[1])
        #expect(pans.allSatisfy { Luhn.isValid($0) && $0.count == 16 && $0.first == "4" })
        #expect(!pans.contains("4761739001010119") && !pans.contains("4111111111111111"))
    }

    @Test(arguments: ["4761739001010119", "5413330089000011", "374245455400001", "6011000990139424",
                      "2223000048400011", "4111111111111111", "9999999999999999999", "123456789012"])
    func testPANsAreLuhnValidOfTheSameShape(_ original: String) {
        for variant in 0..<3 {
            let p = TraceRedactor.testPAN(replacing: original, variant: variant)
            #expect(p.count == original.count)
            #expect(Luhn.isValid(p))
            #expect(p != original)
            #expect(p.first == original.first)
        }
    }

    static func response(_ t: APDUTrace, _ number: Int) -> ResponseAPDU? {
        guard case .response(let r)? = t.exchanges.first(where: { $0.number == number })?.reply else { return nil }
        return r
    }
    static func sw(_ reply: TraceExchange.Reply) -> String {
        if case .response(let r) = reply { return r.statusWord.hex }
        return "event"
    }
    static func length(_ reply: TraceExchange.Reply?) -> Int {
        if case .response(let r)? = reply { return r.data.count }
        return -1
    }
}
