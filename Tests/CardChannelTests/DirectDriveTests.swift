import Testing
import Dispatch
import ISO7816
import Synchronization
@testable import CardChannel
import Timing
import TestSupport

/// ``CardSession/drive(from:_:)``: a sequence of exchanges run on the channel's thread, with the
/// deadlines, cancellation, 61xx/6Cxx and log of ``CardSession/send(_:)``.
@Suite("CardSession.drive: exchanges as direct calls on the channel's thread", .timeLimit(.minutes(1)))
struct DirectDriveTests {
    let commands: [CommandAPDU] = [
        .selectPPSE,
        CommandAPDU(cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00, data: [0xA0, 0x00, 0x00, 0x00, 0x03, 0x10, 0x10], le: 0),
        CommandAPDU(cla: 0x80, ins: 0xA8, p1: 0x00, p2: 0x00, data: [0x83, 0x00], le: 0),
    ]

    /// `next` for `commands`: the one after the command just answered, counting its calls and
    /// where they ran.
    final class Feeder: Sendable {
        let commands: [CommandAPDU]
        let channel: DirectScriptedChannel?
        private let state = Mutex<(calls: Int, offThread: Int, responses: [ResponseAPDU])>((0, 0, []))
        init(_ commands: [CommandAPDU], on channel: DirectScriptedChannel? = nil) {
            self.commands = commands
            self.channel = channel
        }
        var calls: Int { state.withLock { $0.calls } }
        var offThread: Int { state.withLock { $0.offThread } }
        var responses: [ResponseAPDU] { state.withLock { $0.responses } }
        func next(_ response: ResponseAPDU) -> CommandAPDU? {
            let onThread = channel?.thread.isCurrent ?? true
            let i = state.withLock { s -> Int in
                s.calls += 1
                if !onThread { s.offThread += 1 }
                s.responses.append(response)
                return s.calls
            }
            return i < commands.count ? commands[i] : nil
        }
    }

    @Test("a drive runs every exchange and `next` on the channel's thread; 61xx and 6Cxx are followed and logged as send does")
    func drivesOnTheChannelThread() async throws {
        let script: [DirectScriptedChannel.Step] = [
            .respond([0x61, 0x03]), .respond([0x01, 0x02, 0x03, 0x90, 0x00]),   // PPSE: GET RESPONSE
            .respond([0x6C, 0x05]), .respond([0x0A, 0x0B, 0x90, 0x00]),         // SELECT: resent with Le 5
            .respond([0x77, 0x00, 0x90, 0x00]),                                  // GPO
        ]
        let direct = DirectScriptedChannel(script)
        defer { direct.close() }
        let session = CardSession(channel: direct)
        #expect(session.drivesDirectly)
        let feeder = Feeder(commands, on: direct)
        let end = await session.drive(from: commands[0]) { feeder.next($0) }
        guard case .stopped = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(feeder.calls == 3)
        #expect(feeder.offThread == 0)
        #expect(direct.runs == (1, 1))

        // The same script through send, one command at a time, on a plain channel.
        let scripted = ScriptedChannel(script.map { step -> ScriptedChannel.Step in
            guard case .respond(let bytes) = step else { preconditionFailure() }
            return .respond(bytes)
        })
        let plain = CardSession(channel: scripted)
        #expect(!plain.drivesDirectly)
        var responses: [ResponseAPDU] = []
        for c in commands { responses.append(try await plain.send(c)) }
        #expect(feeder.responses == responses)
        #expect(direct.sent == scripted.sent)
        #expect(session.exchanges.map(\.command) == plain.exchanges.map(\.command))
        #expect(session.exchanges.map(\.response) == plain.exchanges.map(\.response))
        #expect(session.exchanges.allSatisfy { $0.duration >= .zero && $0.failure == nil })
    }

    /// Drives ``commands`` on a session over `direct` (its APDU deadline `apduTimeout`), each
    /// next command from a ``Feeder``: how the drive ended, the session and the feeder.
    func drive(_ direct: DirectScriptedChannel, apduTimeout: Duration) async
        -> (end: CardSession.DriveEnd, session: CardSession, feeder: Feeder) {
        let session = CardSession(channel: direct, apduTimeout: apduTimeout)
        let feeder = Feeder(commands, on: direct)
        let end = await session.drive(from: commands[0]) { feeder.next($0) }
        return (end, session, feeder)
    }

    @Test("the APDU deadline ends a drive whose call blocks: the task is resumed before the call returns, the late answer is dropped, `next` is not called again")
    func deadlineWhileBlocked() async throws {
        let direct = DirectScriptedChannel([.respond([0x90, 0x00]), .muteUntilDeadline])
        defer { direct.close() }
        let (end, session, feeder) = await drive(direct, apduTimeout: .milliseconds(50))
        // Returned while the mute call still blocks: it is released only now.
        #expect(direct.runs == (1, 0))
        guard case .failed(let error) = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(error.code == .timeout)
        #expect(session.exchanges.map(\.failure) == [nil, .timeout])
        #expect(session.exchanges[1].command == commands[1])
        direct.release()
        await direct.waitUntilRunsEnd()
        #expect(feeder.calls == 1)
        #expect(direct.sent == Array(commands.prefix(2)))
        #expect(session.exchangeCount == 2, "the late answer is not logged")
    }

    @Test("a deadline the watch reports for an exchange whose own deadline has not come is ignored")
    func staleDeadline() async throws {
        let direct = DirectScriptedChannel([.respond([0x90, 0x00]), .staleDeadline([0x90, 0x00]), .respond([0x90, 0x00])])
        defer { direct.close() }
        let (end, session, feeder) = await drive(direct, apduTimeout: .seconds(30))
        guard case .stopped = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(feeder.calls == 3)
        #expect(session.exchanges.map(\.failure) == [nil, nil, nil])
    }

    @Test("cancelling the task while a call blocks ends the drive with cancelled before the call returns")
    func cancelWhileBlocked() async throws {
        let direct = DirectScriptedChannel([.respond([0x90, 0x00]), .block])
        defer { direct.close() }
        let session = CardSession(channel: direct, apduTimeout: .seconds(30))
        let feeder = Feeder(commands, on: direct)
        let driving = Task { await session.drive(from: commands[0]) { feeder.next($0) } }
        await direct.waitUntilBlocked()
        driving.cancel()
        let end = await driving.value
        #expect(direct.runs == (1, 0), "the blocked call has not returned")
        guard case .failed(let error) = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(error.code == .cancelled)
        #expect(error == direct.cancellationError)
        #expect(session.exchanges.map(\.failure) == [nil, .cancelled])
        direct.release()
        await direct.waitUntilRunsEnd()
        #expect(feeder.calls == 1)
        #expect(session.exchangeCount == 2)
    }

    @Test("a task cancelled between exchanges sends nothing more: the next command ends the drive as cancelled, unsent")
    func cancelBetweenExchanges() async throws {
        let direct = DirectScriptedChannel([.respond([0x90, 0x00]), .respond([0x90, 0x00])])
        defer { direct.close() }
        let session = CardSession(channel: direct)
        let gate = Gate()
        let driving = Task {
            await session.drive(from: commands[0]) { _ in
                gate.enteredAndWait()   // the test cancels the task while `next` runs
                return commands[1]
            }
        }
        await gate.waitUntilEntered()
        driving.cancel()
        gate.open()
        let end = await driving.value
        guard case .failed(let error) = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(error.code == .cancelled)
        #expect(direct.sent == [commands[0]], "the command after the cancellation is never sent")
        #expect(session.exchanges.map(\.failure) == [nil, .cancelled])
        #expect(session.exchanges[1].command == commands[1])
    }

    @Test("an already cancelled task sends nothing")
    func alreadyCancelled() async throws {
        let direct = DirectScriptedChannel([.respond([0x90, 0x00])])
        defer { direct.close() }
        let session = CardSession(channel: direct)
        let feeder = Feeder(commands, on: direct)
        let end = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await session.drive(from: commands[0]) { feeder.next($0) }
        }.value
        guard case .failed(let error) = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(error.code == .cancelled)
        #expect(direct.sent.isEmpty)
        #expect(feeder.calls == 0)
        #expect(session.exchanges.map(\.failure) == [.cancelled])
    }

    /// A session on `direct` whose first drive timed out on a mute call that still blocks the
    /// channel's thread (as a mute card holds the PC/SC thread in `SCardTransmit` until it
    /// goes): what the tests below queue behind.
    private func threadHeldByAMuteCall(_ direct: DirectScriptedChannel) async -> CardSession {
        let session = CardSession(channel: direct, apduTimeout: .milliseconds(50))
        let end = await session.drive(from: commands[0]) { _ in nil }
        if case .failed(let error) = end { #expect(error.code == .timeout) } else { Issue.record("the mute drive ended with \(end)") }
        #expect(direct.runs == (1, 0), "the mute call still blocks the thread")
        return session
    }

    @Test("a drive queued behind a call that blocks the channel's thread ends at its own APDU deadline, as send's queued transmit does; its command is never sent")
    func deadlineWhileQueued() async throws {
        let direct = DirectScriptedChannel([.muteUntilDeadline, .respond([0x90, 0x00]), .respond([0x90, 0x00])])
        defer { direct.close() }
        let session = await threadHeldByAMuteCall(direct)
        let feeder = Feeder(commands, on: direct)
        let end = await session.drive(from: commands[1]) { feeder.next($0) }
        #expect(direct.runs == (2, 0), "it ended while still queued")
        guard case .failed(let error) = end else { Issue.record("the queued drive ended with \(end)"); return }
        #expect(error.code == .timeout)
        #expect(session.exchanges.map(\.failure) == [.timeout, .timeout])
        #expect(session.exchanges.last?.command == commands[1])
        direct.release()
        await direct.waitUntilRunsEnd()
        #expect(direct.sent == [commands[0]], "the queued drive sends nothing once its thread is free")
        #expect(feeder.calls == 0)
        #expect(session.exchangeCount == 2)
    }

    @Test("cancelling a task whose drive waits behind a blocked call ends it at once with cancelled; its command is never sent")
    func cancelWhileQueued() async throws {
        let direct = DirectScriptedChannel([.muteUntilDeadline, .respond([0x90, 0x00])])
        defer { direct.close() }
        _ = await threadHeldByAMuteCall(direct)
        // A deadline far away: only the cancellation can end the wait.
        let session = CardSession(channel: direct, apduTimeout: .seconds(600))
        let feeder = Feeder(commands, on: direct)
        let driving = Task { await session.drive(from: commands[1]) { feeder.next($0) } }
        await direct.waitUntilQueued(2)
        driving.cancel()
        let end = await driving.value
        #expect(direct.runs == (2, 0), "it ended while still queued")
        guard case .failed(let error) = end else { Issue.record("the queued drive ended with \(end)"); return }
        #expect(error == direct.cancellationError)
        #expect(session.exchanges.map(\.failure) == [.cancelled])
        #expect(session.exchanges.first?.command == commands[1])
        direct.release()
        await direct.waitUntilRunsEnd()
        #expect(direct.sent == [commands[0]])
        #expect(feeder.calls == 0)
        #expect(session.exchangeCount == 1)
    }

    @Test("an already cancelled task does not wait for a channel thread held by another call: cancelled at once, nothing queued")
    func alreadyCancelledWhileThreadHeld() async throws {
        let direct = DirectScriptedChannel([.muteUntilDeadline])
        defer { direct.close() }
        let session = await threadHeldByAMuteCall(direct)
        let end = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await session.drive(from: commands[1]) { _ in nil }
        }.value
        guard case .failed(let error) = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(error.code == .cancelled)
        #expect(direct.runs == (1, 0), "nothing was queued")
        #expect(session.exchanges.map(\.failure) == [.timeout, .cancelled])
        direct.release()
        await direct.waitUntilRunsEnd()
        #expect(direct.sent == [commands[0]])
    }

    @Test("a drive on a channel whose thread has ended ends at its APDU deadline (nothing will ever run it)")
    func threadEnded() async throws {
        let direct = DirectScriptedChannel([.respond([0x90, 0x00])])
        direct.close()
        let session = CardSession(channel: direct, apduTimeout: .milliseconds(50))
        let end = await session.drive(from: commands[0]) { _ in nil }
        guard case .failed(let error) = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(error.code == .timeout)
        #expect(direct.sent.isEmpty)
        #expect(session.exchanges.map(\.failure) == [.timeout])
    }

    @Test("a failed exchange ends the drive with the channel's error, logged; `next` is not called for it",
          arguments: [CardChannelError.Code.cardRemoved, .readerRemoved, .transmitFailed])
    func channelFailure(code: CardChannelError.Code) async throws {
        let direct = DirectScriptedChannel([.respond([0x90, 0x00]), .fail(CardChannelError(code, "scripted"))])
        defer { direct.close() }
        let session = CardSession(channel: direct)
        let feeder = Feeder(commands, on: direct)
        let end = await session.drive(from: commands[0]) { feeder.next($0) }
        guard case .failed(let error) = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(error.code == code)
        #expect(feeder.calls == 1)
        #expect(session.exchanges.map(\.failure) == [nil, code])
    }

    @Test("an answer shorter than SW1 SW2 is judged by the channel on the waiting task, and logged")
    func shortAnswer() async throws {
        let direct = DirectScriptedChannel([.short([0x90])])
        defer { direct.close() }
        let session = CardSession(channel: direct)
        let feeder = Feeder(commands, on: direct)
        let end = await session.drive(from: commands[0]) { feeder.next($0) }
        guard case .failed(let error) = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(error == direct.shortError)
        #expect(direct.shortAnswersJudged == 1)
        #expect(feeder.calls == 0)
        #expect(session.exchanges.map(\.failure) == [.malformedResponse])
    }

    @Test("a card that never stops answering 61xx ends the drive with responseChainingFailed")
    func endlessChain() async throws {
        let direct = DirectScriptedChannel(Array(repeating: .respond([0x61, 0x01]), count: CardSession.maxGetResponseRounds + 2))
        defer { direct.close() }
        let session = CardSession(channel: direct)
        let end = await session.drive(from: commands[0]) { _ in nil }
        guard case .failed(let error) = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(error.code == .responseChainingFailed)
        #expect(direct.sent.count == CardSession.maxGetResponseRounds + 1)
    }

    @Test("on an injected clock, or a channel without direct calls, a drive is a sequence of sends")
    func fallsBackToSend() async throws {
        let direct = DirectScriptedChannel([])
        defer { direct.close() }
        #expect(!CardSession(channel: direct, clock: MonotonicClock(ManualClock())).drivesDirectly)
        let scripted = ScriptedChannel([.respond([0x90, 0x00]), .respond([0x61, 0x01]), .respond([0x05, 0x90, 0x00]),
                                        .fail(CardChannelError(.cardRemoved, "gone"))])
        let session = CardSession(channel: scripted)
        let feeder = Feeder(commands)
        let end = await session.drive(from: commands[0]) { feeder.next($0) }
        guard case .failed(let error) = end else { Issue.record("the drive ended with \(end)"); return }
        #expect(error.code == .cardRemoved)
        #expect(feeder.calls == 2)
        #expect(feeder.responses.last?.data == [0x05])
        #expect(session.exchanges.map(\.failure) == [nil, nil, nil, .cardRemoved])
    }
}

/// A gate for code on another thread: it says it has arrived and waits until the test opens it.
final class Gate: Sendable {
    private let entered = OneShotEvent()
    private let opened = DispatchSemaphore(value: 0)

    func enteredAndWait() {
        entered.fire()
        opened.wait()
    }

    func waitUntilEntered() async { await entered.wait() }

    func open() { opened.signal() }
}
