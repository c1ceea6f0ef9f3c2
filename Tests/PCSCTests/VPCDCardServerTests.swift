import ISO7816
import PCSC
import VPCD
import Synchronization
import Testing
import VirtualCard
import CardChannel

/// The vpcd wire protocol of ``VPCDCardServer``, against a fake vpcd in the test process.
@Suite("vpcd card server: wire protocol", .timeLimit(.minutes(1)))
struct VPCDCardServerTests {
    static let ppse = CommandAPDU.selectPPSE.bytes

    final class Events: Sendable {
        private let list = Mutex<[VPCDCardServer.Event]>([])
        func append(_ e: VPCDCardServer.Event) { list.withLock { $0.append(e) } }
        var all: [VPCDCardServer.Event] { list.withLock { $0 } }
    }

    /// Serves `card` to a fresh fake vpcd; `body` gets the accepted connection.
    func serving(_ card: any CardResponder, removeAfter: Int? = nil,
                 _ body: (FakeVPCD, FakeVPCD.Connection, Events) async throws -> Void) async throws -> VPCDCardServer.Outcome {
        let vpcd = try FakeVPCD()
        let events = Events()
        let server = VPCDCardServer(card: card, endpoint: VPCDEndpoint(host: "127.0.0.1", port: vpcd.port),
                                    removeAfter: removeAfter, initialBackoff: .milliseconds(10),
                                    onEvent: { events.append($0) })
        let run = Task { await server.run() }
        let connection = try await vpcd.accept()
        do {
            try await body(vpcd, connection, events)
        } catch {
            run.cancel()
            _ = await run.value
            throw error
        }
        run.cancel()
        return await run.value
    }

    @Test("control codes and a command: ATR, power, reset, response as the card gives it")
    func controlAndCommand() async throws {
        let profile = try #require(CardProfiles.named("visa-qvsdc"))
        let reference = EmulatedCard(profile: profile)
        reference.powerOn()
        let expected = try #require(reference.process(Self.ppse).responseBytes)
        let outcome = try await serving(EmulatedCard(profile: profile)) { _, vpcd, events in
            #expect(await vpcd.exchange([0x04]) == .frame(reference.atr))
            vpcd.send([0x01])
            vpcd.send([0x02])
            #expect(await vpcd.exchange(Self.ppse) == .frame(expected))
            vpcd.send([0x00])
            vpcd.send([0x09])   // unknown control code: ignored
            #expect(await vpcd.exchange([0x04]) == .frame(reference.atr))
            let seen = events.all
            #expect(seen.contains(.powerOn) && seen.contains(.reset) && seen.contains(.powerOff))
            #expect(seen.contains(.exchange(command: Self.ppse, response: expected, cardTime: .zero)))
        }
        #expect(outcome == .stopped)
    }

    @Test("removeAfter: the card answers N commands and resets the connection at the next")
    func removeAfter() async throws {
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        let outcome = try await serving(card, removeAfter: 1) { _, vpcd, _ in
            guard case .frame = await vpcd.exchange(Self.ppse) else {
                Issue.record("first command not answered")
                return
            }
            #expect(await vpcd.exchange(Self.ppse) == .reset)
        }
        #expect(outcome == .cardRemoved(exchanges: 1))
    }

    @Test("a card that tears (.removed) resets the connection")
    func tornProfile() async throws {
        let profile = try #require(CardProfiles.named("torn"))
        let card = EmulatedCard(profile: profile)
        let outcome = try await serving(card) { _, vpcd, _ in
            var answered = 0
            while true {
                let r = await vpcd.exchange(Self.ppse)
                guard case .frame = r else {
                    #expect(r == .reset)
                    break
                }
                answered += 1
                if answered > 10 { Issue.record("the torn card never tore"); return }
            }
        }
        guard case .cardRemoved = outcome else {
            Issue.record("outcome \(outcome)")
            return
        }
    }

    @Test("a mute card never answers the command, but still gives its ATR")
    func mute() async throws {
        let card = EmulatedCard(profile: try #require(CardProfiles.named("mute")))
        let atr = card.atr
        let outcome = try await serving(card) { _, vpcd, events in
            var frames = 0
            // Send commands until one is not answered: the next frame back is then the ATR.
            for _ in 0..<10 {
                vpcd.send(Self.ppse)
                vpcd.send([0x04])
                let first = await vpcd.receive()
                if first == .frame(atr) {
                    break
                }
                frames += 1
                #expect(await vpcd.receive() == .frame(atr))
            }
            #expect(frames < 10)
            #expect(events.all.contains { if case .mute = $0 { true } else { false } })
        }
        #expect(outcome == .stopped)
    }

    @Test("when vpcd goes away the server reconnects")
    func reconnects() async throws {
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        let atr = card.atr
        let outcome = try await serving(card) { fake, vpcd, events in
            vpcd.shutdown()
            let again = try await fake.accept()
            #expect(await again.exchange([0x04]) == .frame(atr))
            #expect(events.all.contains { if case .disconnected = $0 { true } else { false } })
        }
        #expect(outcome == .stopped)
    }

    @Test("a connection vpcd keeps waiting (another program serves the slot) is reported once, and served when vpcd turns to it")
    func queuedBehindAnotherCard() async throws {
        let vpcd = try FakeVPCD()   // listening, but accepting nobody yet: the kernel queues the connection
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        let atr = card.atr
        let events = Events()
        let silences = AsyncStream<Void>.makeStream()
        let server = VPCDCardServer(card: card, endpoint: VPCDEndpoint(host: "127.0.0.1", port: vpcd.port),
                                    silenceLimit: .milliseconds(50), onEvent: { e in
                                        events.append(e)
                                        if case .unanswered = e { silences.continuation.yield() }
                                    })
        let run = Task { await server.run() }
        for await _ in silences.stream { break }
        #expect(events.all.contains(.connected(VPCDEndpoint(host: "127.0.0.1", port: vpcd.port))))
        #expect(events.all.contains(.unanswered(after: .milliseconds(50))))
        // The other program goes: vpcd takes the waiting connection, and the card answers.
        let connection = try await vpcd.accept()
        #expect(await connection.exchange([0x04]) == .frame(atr))
        run.cancel()
        #expect(await run.value == .stopped)
        #expect(events.all.filter { if case .unanswered = $0 { true } else { false } }.count == 1)
    }

    @Test("a slot vpcd serves at once is not reported as waiting")
    func servedAtOnce() async throws {
        let vpcd = try FakeVPCD()
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        let events = Events()
        let server = VPCDCardServer(card: card, endpoint: VPCDEndpoint(host: "127.0.0.1", port: vpcd.port),
                                    silenceLimit: .seconds(30), onEvent: { events.append($0) })
        let run = Task { await server.run() }
        let connection = try await vpcd.accept()
        #expect(await connection.exchange([0x04]) == .frame(card.atr))
        run.cancel()
        #expect(await run.value == .stopped)
        #expect(!events.all.contains { if case .unanswered = $0 { true } else { false } })
    }

    @Test("cancelling run() closes the connection")
    func cancel() async throws {
        let vpcd = try FakeVPCD()
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        let server = VPCDCardServer(card: card, endpoint: VPCDEndpoint(host: "127.0.0.1", port: vpcd.port))
        let run = Task { await server.run() }
        let connection = try await vpcd.accept()
        run.cancel()
        #expect(await run.value == .stopped)
        #expect(await connection.receive() == .closed)
    }

    @Test("nothing listening: the server retries with backoff until cancelled")
    func backoff() async throws {
        let port: Int
        do {
            let probe = try FakeVPCD()   // a port that was free a moment ago, closed again
            port = probe.port
        }
        let events = VPCDCardServerTests.Events()
        let failures = AsyncStream<Void>.makeStream()
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        let server = VPCDCardServer(card: card, endpoint: VPCDEndpoint(host: "127.0.0.1", port: port),
                                    initialBackoff: .milliseconds(1), maximumBackoff: .milliseconds(4),
                                    onEvent: { e in
                                        events.append(e)
                                        if case .connectFailed = e { failures.continuation.yield() }
                                    })
        let run = Task { await server.run() }
        var seen = 0
        for await _ in failures.stream {
            seen += 1
            if seen == 3 { break }
        }
        run.cancel()
        #expect(await run.value == .stopped)
        let delays = events.all.compactMap { e -> Duration? in
            if case .connectFailed(_, let retry) = e { retry } else { nil }
        }
        #expect(Array(delays.prefix(3)) == [.milliseconds(1), .milliseconds(2), .milliseconds(4)])
    }
}
