import Testing
import ISO7816
import Synchronization
@testable import CardChannel
@testable import Timing
import APDUTrace
import TestSupport

@Suite("CardSession: GET RESPONSE, resend with Le, deadlines, timing")
struct CardSessionTests {
    let select = CommandAPDU.selectPPSE

    @Test("61xx chains are fetched with GET RESPONSE and concatenated")
    func getResponseChain() async throws {
        let channel = ScriptedChannel([
            .respond([0x61, 0x03]),
            .respond([0x01, 0x02, 0x03, 0x61, 0x02]),
            .respond([0x04, 0x05, 0x90, 0x00]),
        ])
        let session = CardSession(channel: channel)
        let r = try await session.send(select)
        #expect(r.data == [1, 2, 3, 4, 5])
        #expect(r.statusWord == .success)
        #expect(channel.sent.map(\.instructionCode) == [0xA4, 0xC0, 0xC0])
        #expect(channel.sent[1].expectedResponseLength == 3)
        #expect(channel.sent[2].expectedResponseLength == 2)
        #expect(session.exchanges.count == 3)
    }

    @Test("the log holds every exchange in order, whole or from any index, its responses and failures as they came")
    func logFromIndex() async throws {
        let channel = ScriptedChannel([
            .respond([0x01, 0x90, 0x00]),
            .respond([0x61, 0x01]), .respond([0x02, 0x90, 0x00]),
            .fail(CardChannelError(.cardRemoved, "gone")),
        ])
        let session = CardSession(channel: channel)
        #expect(session.exchangeCount == 0)
        #expect(session.exchanges(from: 0).isEmpty)
        _ = try await session.send(select)
        _ = try await session.send(.readRecord(1, sfi: 1))
        await #expect(throws: CardChannelError.self) { try await session.send(.readRecord(2, sfi: 1)) }
        let all = session.exchanges
        #expect(session.exchangeCount == 4)
        #expect(all.map(\.command.instructionCode) == [0xA4, 0xB2, 0xC0, 0xB2])
        #expect(all.map { $0.response?.data } == [[0x01], [], [0x02], nil])
        #expect(all.map { $0.response?.statusWord.hex } == ["9000", "6101", "9000", nil])
        #expect(all.map(\.failure) == [nil, nil, nil, .cardRemoved])
        #expect(session.exchanges(from: 2) == Array(all.dropFirst(2)))
        #expect(session.exchanges(from: 4).isEmpty)
        #expect(session.exchanges(from: 9).isEmpty)
        #expect(session.exchanges(from: -1) == all)
        // Each starts no earlier than the one before it ended.
        for (a, b) in zip(all, all.dropFirst()) { #expect(b.start >= a.start + a.duration) }
    }

    @Test("6Cxx is answered by resending the same command with the exact Le")
    func resendWithLe() async throws {
        let channel = ScriptedChannel([.respond([0x6C, 0x10]), .respond([0xAA, 0x90, 0x00])])
        let session = CardSession(channel: channel)
        let r = try await session.send(.readRecord(1, sfi: 1))
        #expect(r.data == [0xAA])
        #expect(channel.sent.count == 2)
        #expect(channel.sent[1].expectedResponseLength == 0x10)
        #expect(Array(channel.sent[1].bytes.prefix(4)) == Array(channel.sent[0].bytes.prefix(4)))
    }

    @Test("6Cxx in answer to GET RESPONSE resends GET RESPONSE with that Le")
    func getResponseThenWrongLe() async throws {
        let channel = ScriptedChannel([
            .respond([0x61, 0x00]), .respond([0x6C, 0x02]), .respond([0x0A, 0x0B, 0x90, 0x00]),
        ])
        let r = try await CardSession(channel: channel).send(select)
        #expect(r.data == [0x0A, 0x0B])
        #expect(channel.sent.last?.expectedResponseLength == 2)
    }

    @Test("a card that never stops answering 61xx is an error, not a loop")
    func endlessChain() async {
        let steps = Array(repeating: ScriptedChannel.Step.respond([0x61, 0x01]), count: 100)
        let session = CardSession(channel: ScriptedChannel(steps))
        await #expect { try await session.send(select) } throws: {
            ($0 as? CardChannelError)?.code == .responseChainingFailed
        }
    }

    @Test("a response shorter than SW1 SW2 is malformed")
    func shortResponse() async {
        let session = CardSession(channel: ScriptedChannel([.respond([0x90])]))
        await #expect { try await session.send(select) } throws: {
            ($0 as? CardChannelError)?.code == .malformedResponse
        }
        #expect(session.exchanges.first?.failure == .malformedResponse)
    }

    /// A session on a mute card (its APDU deadline `apduTimeout` on a manual clock) and its
    /// exchange, started in a task of its own, once it waits on the clock.
    func exchangeWithAMuteCard(apduTimeout: Duration) async
        -> (clock: ManualClock, session: CardSession, task: Task<ResponseAPDU, any Error>) {
        let clock = ManualClock()
        let session = CardSession(channel: ScriptedChannel([.hang]), apduTimeout: apduTimeout, clock: MonotonicClock(clock))
        let select = self.select
        let task = Task { try await session.send(select) }
        await clock.waitForSleepers(1)
        return (clock, session, task)
    }

    @Test("a mute card times out at the APDU deadline on the injected clock")
    func timeout() async throws {
        let (clock, session, task) = await exchangeWithAMuteCard(apduTimeout: .milliseconds(500))
        clock.advance(by: .milliseconds(499))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .milliseconds(1))
        let result = await task.result
        #expect(throws: CardChannelError.self) { try result.get() }
        #expect((result.error as? CardChannelError)?.code == .timeout)
        #expect(session.exchanges.first?.failure == .timeout)
        #expect(session.exchanges.first?.duration == .milliseconds(500))
    }

    @Test("on the continuous clock the deadline is kept by the shared watchdog: a mute card times out")
    func continuousTimeout() async throws {
        let session = CardSession(channel: ScriptedChannel([.hang]), apduTimeout: .milliseconds(20))
        await #expect { try await session.send(select) } throws: {
            ($0 as? CardChannelError)?.code == .timeout
        }
        #expect(session.exchanges.map(\.failure) == [.timeout])
    }

    @Test("the watchdog fires deadlines in any order they were set, and not a cancelled one")
    func watchdogOrder() {
        // A watchdog whose timer never fires: the test says what time it is (no real deadline).
        let watchdog = DeadlineWatchdog(ticks: false)
        let base = ContinuousClock.now
        let log = Mutex<[Int]>([])
        let cancelled = watchdog.schedule(at: base + .milliseconds(5)) { log.withLock { $0.append(0) } }
        watchdog.cancel(cancelled)
        let late = watchdog.schedule(at: base + .seconds(3600)) { log.withLock { $0.append(9) } }
        _ = watchdog.schedule(at: base + .milliseconds(30)) { log.withLock { $0.append(2) } }
        _ = watchdog.schedule(at: base + .milliseconds(10)) { log.withLock { $0.append(1) } }
        #expect(watchdog.takeDue(at: base + .milliseconds(9)).isEmpty)
        for fire in watchdog.takeDue(at: base + .milliseconds(30)) { fire() }
        #expect(log.withLock { $0 } == [1, 2])
        // What fired is gone; the late one is still there until its time.
        #expect(watchdog.takeDue(at: base + .seconds(60)).isEmpty)
        watchdog.cancel(late)
        #expect(watchdog.takeDue(at: base + .seconds(7200)).isEmpty)
    }

    @Test("cancelling the task ends the wait with cancelled, not timeout")
    func cancellation() async throws {
        let (_, _, task) = await exchangeWithAMuteCard(apduTimeout: .seconds(5))
        task.cancel()
        let result = await task.result
        #expect((result.error as? CardChannelError)?.code == .cancelled)
    }

    @Test("each exchange is timed on the session clock")
    func timing() async throws {
        let clock = ManualClock()
        let mono = MonotonicClock(clock)
        let channel = ScriptedChannel([.respondAfter(.milliseconds(7), [0x90, 0x00])], clock: mono)
        let session = CardSession(channel: channel, clock: mono)
        let task = Task { try await session.send(select) }
        await clock.waitForSleepers(2)   // the deadline timer and the card at work
        clock.advance(by: .milliseconds(7))
        _ = try await task.value
        let e = try #require(session.exchanges.first)
        #expect(e.duration == .milliseconds(7))
        #expect(e.micros == 7000)
        #expect(e.start == .zero)
    }

    @Test("channel failures pass through with their code and are logged")
    func failurePassesThrough() async {
        let session = CardSession(channel: ScriptedChannel([.fail(CardChannelError(.cardRemoved, "scripted tear"))]))
        await #expect { try await session.send(select) } throws: {
            ($0 as? CardChannelError)?.code == .cardRemoved
        }
        #expect(session.exchanges.map(\.failure) == [.cardRemoved])
    }
}

extension Result {
    var error: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
