import CardChannel
import EMVKernel
import Foundation
import ISO7816
import PCSC
import VPCD
import Synchronization
import Testing
import VirtualCard
import Timing
import APDUTrace
import TestSupport

/// Virtual cards served into vsmartcard-vpcd's reader slot 0 (`Virtual PCD 00 00`) and read
/// through the real pcscd with the PC/SC channel. Serialized: the tests share the slot; nothing
/// else may use it while they run.
@Suite("PC/SC through pcscd and vpcd", .serialized, .timeLimit(.minutes(5)))
struct PCSCIntegrationTests {
    @Test("the virtual readers are listed; a served card shows present with its ATR")
    func readers() async throws {
        guard let context = await RealPCSC.context() else { return }
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        try await RealPCSC.serving(card, context: context) { reader in
            let state = try await context.waitForCard(in: reader, timeout: RealPCSC.patience)
            #expect(state.atr == card.atr)
            let report = try await PCSC.readerReport()
            let entry = try #require(report.first { $0.name == reader })
            #expect(entry.state.hasCard)
            #expect(entry.state.atr == card.atr)
            #expect(entry.readerATR?.kind == .iso14443_4)
            #expect(report.map(\.index) == Array(report.indices))
        }
    }

    @Test("every virtual card reads the same through pcscd as in process",
          arguments: CardProfiles.all.map(\.name))
    func sameAsInProcess(profileName: String) async throws {
        guard let context = await RealPCSC.context() else { return }
        let profile = try #require(CardProfiles.named(profileName))
        // A mute card is only found out by the APDU deadline: keep it short for that one.
        let apduTimeout: Duration = profile.behaviour.muteAtExchange == nil ? .seconds(10) : .seconds(1)
        let inProcess = await ReadSummary.read(
            VirtualCardChannel(card: EmulatedCard(profile: profile), simulatesCardTime: false), apduTimeout: apduTimeout)
        let served = EmulatedCard(profile: profile)
        let throughPCSC = try await RealPCSC.servingChannel(served, context: context) { channel in
            #expect(channel.atr == served.atr)
            return await ReadSummary.read(channel, apduTimeout: apduTimeout)
        }
        #expect(throughPCSC == inProcess, "through pcscd: \(throughPCSC); in process: \(inProcess)")
        #expect(!inProcess.steps.isEmpty)
    }

    @Test("a card torn mid-read (--remove-after) is a removed card, and stays removed")
    func tearMidRead() async throws {
        guard let context = await RealPCSC.context() else { return }
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        try await RealPCSC.servingSession(card, removeAfter: 2, context: context, apduTimeout: .seconds(10)) { session in
            _ = try await session.send(.selectPPSE)
            _ = try await session.send(.selectPPSE)
            for _ in 0..<2 {
                await expectThrows(CardChannelError.self, .cardRemoved) { _ = try await session.send(.selectPPSE) }
            }
        }
    }

    @Test("a kernel read torn by the card (.removed) fails with cardRemoved")
    func tornKernelRead() async throws {
        guard let context = await RealPCSC.context() else { return }
        let card = EmulatedCard(profile: try #require(CardProfiles.named("torn")))
        let summary = try await RealPCSC.servingChannel(card, context: context) { channel in
            return await ReadSummary.read(channel)
        }
        #expect(summary.error == .channelFailed)
        #expect(summary.channelError == .cardRemoved)
    }

    /// How a wait for a card on an empty slot ends: its deadline comes (on an injected clock),
    /// or the waiting task is cancelled (and the clock never moves).
    enum EmptySlotWaitEnd: String, CaseIterable, Sendable {
        case deadline, cancelled
        var code: CardChannelError.Code { self == .deadline ? .noCard : .cancelled }
    }

    @Test("no card: the wait ends with noCard at the deadline (on an injected clock), with cancelled at once when cancelled",
          arguments: EmptySlotWaitEnd.allCases)
    func emptySlotWait(_ end: EmptySlotWaitEnd) async throws {
        guard let context = await RealPCSC.context() else { return }
        let reader = VPCDEndpoint.readerName(slot: 0)
        _ = try await context.waitForEmpty(reader, timeout: RealPCSC.patience)
        let clock = ManualClock()
        let wait = Task { () async throws(CardChannelError) -> PCSCCardChannel in
            try await PCSC.openChannel(reader: reader, wait: .seconds(30), clock: MonotonicClock(clock))
        }
        await clock.waitForSleepers(1)   // the wait is under way: its deadline timer sleeps
        switch end {
        case .deadline: clock.advance(by: .seconds(30))
        case .cancelled: wait.cancel()
        }
        switch await wait.result {
        case .success: Issue.record("a channel opened on an empty slot")
        case .failure(let error): #expect((error as? CardChannelError)?.code == end.code, "\(error)")
        }
    }

    @Test("a wait on a low-level context ends at once when cancelled, and the context still works")
    func cancelledStatusWait() async throws {
        guard let context = await RealPCSC.context() else { return }
        let reader = VPCDEndpoint.readerName(slot: 0)
        let state = try await context.waitForEmpty(reader, timeout: RealPCSC.patience)
        let wait = Task { () async throws(PCSCError) -> [ReaderState] in
            try await context.waitForChange(from: [state], watchReaderList: true)
        }
        wait.cancel()
        switch await wait.result {
        case .success(let s): Issue.record("the wait returned \(s)")
        case .failure(let error): #expect((error as? PCSCError)?.code == .cancelled, "\(error)")
        }
        #expect(try await context.readers().contains(reader))
    }

    @Test("hot-plug watch: with no reader plugged in or out, the wait ends at its deadline")
    func readerListWatch() async throws {
        guard let context = await RealPCSC.context() else { return }
        let reader = VPCDEndpoint.readerName(slot: 0)
        let state = try await context.waitForEmpty(reader, timeout: RealPCSC.patience)
        let clock = ManualClock()
        let wait = Task { () async throws(PCSCError) -> [ReaderState] in
            try await context.waitForChange(from: [state], watchReaderList: true, deadline: .seconds(5),
                                            clock: MonotonicClock(clock))
        }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))
        switch await wait.result {
        case .success(let s): Issue.record("the wait returned \(s) though nothing changed")
        case .failure(let error): #expect((error as? PCSCError)?.code == .timeout, "\(error)")
        }
    }

    @Test("a reader that does not exist is unknownReader when waited on; withCard disconnects")
    func unknownReaderWait() async throws {
        guard let context = await RealPCSC.context() else { return }
        let error = await #expect(throws: PCSCError.self) {
            _ = try await context.waitForCard(in: "No Such Reader 00 00", timeout: .seconds(1))
        }
        #expect(error?.code == .unknownReader)
        #expect(error?.function == .getStatusChange)
        let card = EmulatedCard(profile: try #require(CardProfiles.named("amex")))
        try await RealPCSC.serving(card, context: context) { reader in
            _ = try await context.waitForCard(in: reader, timeout: RealPCSC.patience)
            let atr = try await context.withCard(in: reader, share: .exclusive) { card in
                try await card.status().atr
            }
            #expect(atr == card.atr)
            // Released: a shared connection works again.
            let channel = try await PCSC.openChannel(reader: reader, wait: RealPCSC.patience)
            channel.close()
        }
    }

    @Test("the card side of a trace behind vpcd: recorded answers, 6F00 for a stray command, the recorded tear")
    func traceBehindVPCD() async throws {
        guard let context = await RealPCSC.context() else { return }
        let trace = try APDUTrace(parsing: """
            @format tapemu-apdu-trace/1
            @atr 3B8180018080
            0.000000 > 00A404000E325041592E5359532E444446303100
            0.000400 < 6F0A840E325041592E5359539000
            0.001000 > 00A4040007A000000003101000
            0.001200 ! card-removed
            """)
        let problems = ProblemLog()
        let responder = TraceCardResponder(trace: trace, onProblem: { problems.append($0.code) })
        #expect(responder.atr == [0x3B, 0x81, 0x80, 0x01, 0x80, 0x80])
        try await RealPCSC.servingChannel(responder, context: context) { channel in
            #expect(channel.atr == responder.atr)
            let first = try await channel.transmit(.selectPPSE)
            #expect(first.bytes == (try Hex.decode("6F0A840E325041592E5359539000")))
            let stray = try await channel.transmit(CommandAPDU(cla: 0x00, ins: 0xB2, p1: 1, p2: 0x0C, le: 0))
            #expect(stray.statusWord == StatusWord(sw1: 0x6F, sw2: 0x00))
            #expect(problems.codes == [.traceMismatch])
            await expectThrows(CardChannelError.self, .cardRemoved) {
                _ = try await channel.transmit(.select(name: [0xA0, 0x00, 0x00, 0x00, 0x03, 0x10, 0x10]))
            }
        }
    }

    @Test("a response shorter than SW1 SW2 is malformed when the card is still there")
    func shortResponse() async throws {
        guard let context = await RealPCSC.context() else { return }
        try await RealPCSC.servingChannel(OneByteCard(), context: context) { channel in
            await expectThrows(CardChannelError.self, .malformedResponse) {
                _ = try await channel.transmit(.selectPPSE)
            }
        }
    }

    @Test("a mute card: the session's deadline ends the exchange though SCardTransmit blocks")
    func muteCard() async throws {
        guard let context = await RealPCSC.context() else { return }
        try await RealPCSC.servingSession(MuteCard(), context: context, apduTimeout: .milliseconds(300)) { session in
            await expectThrows(CardChannelError.self, .timeout) { _ = try await session.send(.selectPPSE) }
        }
    }

    @Test("a kernel read over PC/SC is driven on the context's thread; a card that falls mute at GPO ends it at the APDU deadline, with the exchanges so far")
    func kernelReadFallsMute() async throws {
        guard let context = await RealPCSC.context() else { return }
        let card = MuteAfter(2, EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc"))))
        try await RealPCSC.servingSession(card, context: context, apduTimeout: .milliseconds(300)) { session in
            #expect(session.drivesDirectly)
            do throws(KernelError) {
                _ = try await EMVReader().read(session: session, transaction: Transaction(amount: 1000))
                Issue.record("the mute card's read passed")
            } catch {
                #expect(error.code == .channelFailed)
                #expect(error.channelError?.code == .timeout, "\(error)")
                #expect(error.step == .gpo)
                let exchanges = error.partial?.exchanges ?? []
                #expect(exchanges.map(\.failure) == [nil, nil, .timeout])
                #expect(exchanges.last?.command.instructionCode == 0xA8)
                #expect(error.partial?.application != nil, "what was read before GPO is kept")
            }
        }
    }

    @Test("cancelling a kernel read whose SCardTransmit blocks on a mute card ends it with cancelled, at once")
    func kernelReadCancelledWhileMute() async throws {
        guard let context = await RealPCSC.context() else { return }
        let card = MuteAfter(1, EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc"))))
        // A deadline far away: only the cancellation can end the wait.
        try await RealPCSC.servingSession(card, context: context, apduTimeout: .seconds(600)) { session in
            let reading = Task { () -> KernelError? in
                do throws(KernelError) {
                    _ = try await EMVReader().read(session: session, transaction: Transaction(amount: 1000))
                    return nil
                } catch {
                    return error
                }
            }
            await card.waitUntilMute()
            reading.cancel()
            let error = try #require(await reading.value, "the mute card's read passed")
            #expect(error.code == .channelFailed)
            #expect(error.channelError?.code == .cancelled, "\(error)")
            #expect(error.partial?.exchanges.map(\.failure) == [nil, .cancelled])
        }
    }

    @Test("a read on a session whose last read timed out on a mute card waits behind the blocked SCardTransmit only until its own deadline, its PPSE never sent: as exchange by exchange",
          .timeLimit(.minutes(1)))
    func readBehindAMuteCall() async throws {
        guard let context = await RealPCSC.context() else { return }
        var reads: [[ReadSummary]] = []
        for direct in [true, false] {
            let card = MuteAfter(2, EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc"))))
            reads.append(try await RealPCSC.servingChannel(card, context: context) { channel in
                let session = CardSession(channel: direct ? channel : PerExchangeChannel(channel), apduTimeout: .milliseconds(300))
                #expect(session.drivesDirectly == direct)
                // The first read times out at GPO; its SCardTransmit holds the context's thread
                // until the card goes. The second queues behind it.
                return [await ReadSummary.read(session: session), await ReadSummary.read(session: session)]
            })
        }
        let (direct, perExchange) = (reads[0], reads[1])
        #expect(direct == perExchange, "direct: \(direct); per exchange: \(perExchange)")
        #expect(direct.map(\.channelError) == [.timeout, .timeout])
        #expect(direct.last?.steps.map(\.failure) == [.timeout])
        #expect(direct.last?.steps.first?.command == CommandAPDU.selectPPSE.bytes)
    }

    @Test("opening a channel while pcscd's reader is still held by an exchange a mute card never answered ends at the wait's deadline with timeout (SCardConnect blocked for good: `tapemu read` after a timed-out read hung)",
          .timeLimit(.minutes(1)))
    func openBehindAMuteExchange() async throws {
        guard let context = await RealPCSC.context() else { return }
        try await RealPCSC.serving(MuteCard(), context: context) { reader in
            // A first program's read times out on the mute card; its SCardTransmit stays in
            // pcscd (vpcd has no timeout) after the program let go of the card.
            let first = try await PCSC.openChannel(reader: reader, wait: RealPCSC.patience)
            await expectThrows(CardChannelError.self, .timeout) {
                _ = try await CardSession(channel: first, apduTimeout: .milliseconds(300)).send(.selectPPSE)
            }
            first.close()
            // A second program opens the reader: the card is present, SCardConnect blocks.
            let clock = MonotonicClock.continuous
            let started = clock.now
            do throws(CardChannelError) {
                // The bound only keeps a hang from holding the suite: far past the wait.
                let second = try await withDeadline(started + RealPCSC.patience, on: clock,
                                                    onTimeout: { CardChannelError(.closed, "still waiting for SCardConnect") },
                                                    onCancel: { CardChannelError(.cancelled, "cancelled") }) { () async throws(CardChannelError) in
                    try await PCSC.openChannel(reader: reader, wait: .seconds(1), clock: clock)
                }
                second.close()
                Issue.record("a channel opened on a reader pcscd holds in a blocked exchange")
            } catch {
                #expect(error.code == .timeout, "\(error)")
                #expect(clock.now - started < .seconds(5), "ended at the 1 s wait, not much later")
            }
        }
    }

    @Test("two programs reading one card: the second's channel opens only once the first's closed, so no command of one comes between the other's (interleaved, a read got 6A82 for its READ RECORD after the other re-selected the PPSE)",
          .timeLimit(.minutes(1)))
    func readsDoNotInterleave() async throws {
        guard let context = await RealPCSC.context() else { return }
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        try await RealPCSC.serving(card, context: context) { reader in
            let first = try await PCSC.openChannel(reader: reader, wait: RealPCSC.patience)
            let firstClosed = Atomic<Bool>(false)
            // The second program (a context of its own) asks for the card while the first holds it.
            let second = Task { () throws -> (openedAfterFirstClosed: Bool, read: ReadSummary) in
                let channel = try await PCSC.openChannel(reader: reader, wait: RealPCSC.patience)
                defer { channel.close() }
                let after = firstClosed.load(ordering: .sequentiallyConsistent)
                return (after, await ReadSummary.read(channel))
            }
            let firstRead = await ReadSummary.read(first)
            firstClosed.store(true, ordering: .sequentiallyConsistent)
            first.close()
            let (openedAfter, secondRead) = try await second.value
            #expect(openedAfter, "the second channel opened while the first held the card")
            #expect(firstRead.read != nil, "\(firstRead)")
            #expect(secondRead.read != nil, "\(secondRead)")
        }
    }

    @Test("a card held exclusively: another connection gets sharingViolation")
    func sharingViolation() async throws {
        guard let context = await RealPCSC.context() else { return }
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        try await RealPCSC.serving(card, context: context) { reader in
            _ = try await context.waitForCard(in: reader, timeout: RealPCSC.patience)
            let holder = try await context.connect(to: reader, share: .exclusive)
            let state = try await context.states(of: [reader])[0]
            #expect(state.isExclusive)
            do throws(CardChannelError) {
                let other = try await PCSC.openChannel(reader: reader, wait: RealPCSC.patience)
                other.close()
                Issue.record("connected to a card held exclusively")
            } catch {
                #expect(error.code == .sharingViolation, "\(error)")
                #expect(error.hint != nil)
            }
            try await holder.disconnect(.leave)
        }
    }

    @Test("UID through FF CA 00 00 00: a virtual card has none to give")
    func uid() async throws {
        guard let context = await RealPCSC.context() else { return }
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        try await RealPCSC.servingChannel(card, context: context) { channel async throws in
            #expect(try await channel.readUID() == nil)
            // The channel still works afterwards.
            #expect(try await channel.transmit(.selectPPSE).statusWord == StatusWord(sw1: 0x90, sw2: 0x00))
        }
    }

    @Test("a reader that does not exist, or an ambiguous one, is noReader")
    func badReader() async throws {
        guard await RealPCSC.context() != nil else { return }
        for query in ["No Such Reader", "Virtual PCD", "99"] {
            await expectThrows(CardChannelError.self, .noReader, "\(query)") {
                _ = try await PCSC.openChannel(reader: query, wait: .seconds(1))
            }
        }
    }

    @Test("interop: pcsc-tools' scriptor selects the PPSE on our emulated card")
    func scriptor() async throws {
        guard let context = await RealPCSC.context() else { return }
        let scriptor = "/usr/bin/scriptor"
        guard FileManager.default.isExecutableFile(atPath: scriptor) else {
            Issue.record("\(scriptor) is missing: install pcsc-tools; \(RealPCSC.setupHint)")
            return
        }
        let profile = try #require(CardProfiles.named("visa-qvsdc"))
        let reference = EmulatedCard(profile: profile)
        reference.powerOn()
        let expected = try #require(reference.process(CommandAPDU.selectPPSE.bytes).responseBytes)
        let output = try await RealPCSC.serving(EmulatedCard(profile: profile), context: context) { reader in
            _ = try await context.waitForCard(in: reader, timeout: RealPCSC.patience)
            return try await runProgram(scriptor, ["-r", reader], stdin: Hex.encode(CommandAPDU.selectPPSE.bytes) + "\n")
        }
        #expect(output.status == 0, "scriptor: \(output.stderr)")
        // `< 6F 34 84 …` wrapped over lines of 16 bytes, ending `90 00 : Normal processing.`
        let afterPrompt = output.stdout.components(separatedBy: "< ").dropFirst().first ?? ""
        let hex = afterPrompt.components(separatedBy: " : ").first ?? ""
        #expect(try Hex.decode(hex.filter { !$0.isWhitespace }) == expected, "scriptor said: \(output.stdout)")
    }
}

final class ProblemLog: Sendable {
    private let list = Mutex<[CardChannelError.Code]>([])
    func append(_ c: CardChannelError.Code) { list.withLock { $0.append(c) } }
    var codes: [CardChannelError.Code] { list.withLock { $0 } }
}

/// A card that answers every command with a single byte (a broken reader's answer).
struct OneByteCard: CardResponder {
    var atr: [UInt8] { ContactlessATR.typeA(historicalBytes: []) }
    func powerOn() {}
    func process(_ command: [UInt8]) -> CardReply { .response([0x90], cardTime: .zero) }
}

/// A card that answers its first `count` commands as `card` does, then none (it falls mute).
final class MuteAfter: CardResponder {
    let count: Int
    let card: any CardResponder
    private let state = Mutex<(seen: Int, waiter: CheckedContinuation<Void, Never>?)>((0, nil))

    init(_ count: Int, _ card: any CardResponder) {
        self.count = count
        self.card = card
    }

    var atr: [UInt8] { card.atr }
    func powerOn() { card.powerOn() }
    func process(_ command: [UInt8]) -> CardReply {
        let (mute, waiter) = state.withLock { s -> (Bool, CheckedContinuation<Void, Never>?) in
            s.seen += 1
            guard s.seen > count else { return (false, nil) }
            defer { s.waiter = nil }
            return (true, s.waiter)
        }
        waiter?.resume()
        return mute ? .mute : card.process(command)
    }

    /// Returns once the card has been sent a command it does not answer.
    func waitUntilMute() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.seen > count { return true }
                s.waiter = c
                return false
            }
            if now { c.resume() }
        }
    }
}

/// A card that gives its ATR and then never answers a command.
struct MuteCard: CardResponder {
    var atr: [UInt8] { ContactlessATR.typeA(historicalBytes: []) }
    func powerOn() {}
    func process(_ command: [UInt8]) -> CardReply { .mute }
}
