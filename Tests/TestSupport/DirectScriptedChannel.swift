public import CardChannel
public import ISO7816
public import Timing
import Foundation
import Synchronization

/// A ``DirectExchangeChannel`` that answers from a script on a thread of its own, as the PC/SC
/// channel does on its context's thread, for the tests of ``CardSession/drive(from:_:)``: every
/// command it was sent, on which thread, and each step that blocks until the test lets it go.
public final class DirectScriptedChannel: DirectExchangeChannel {
    public enum Step: Sendable {
        /// Answer these bytes (data and SW1 SW2).
        case respond([UInt8])
        /// Answer fewer than 2 bytes.
        case short([UInt8])
        case fail(CardChannelError)
        /// Block until the transmit's deadline comes, tell the run (as the PC/SC thread's watch
        /// does), then go on blocking until ``release()``; then answer 9000 (a late answer).
        case muteUntilDeadline
        /// Block until ``release()`` (no deadline watch: only a cancellation can end the wait),
        /// then answer 9000.
        case block
        /// Tell the run its deadline came — though it has not — then answer these bytes: a
        /// watch that fires for the transmit before this one, as the next starts.
        case staleDeadline([UInt8])
    }

    public let atr: [UInt8] = [0x3B, 0x80, 0x80, 0x01, 0x01]
    public var mayHoldRealCard: Bool { false }
    public let cancellationError = CardChannelError(.cancelled, "cancelled (scripted direct channel)")
    /// What ``shortAnswerError(_:deadline:on:onTimeout:)`` gives.
    public let shortError = CardChannelError(.malformedResponse, "a short answer (scripted)")

    private struct State {
        var steps: [Step]
        var sent: [CommandAPDU] = []
        var runs = 0
        var runsEnded = 0
        var blocked = 0
        var shortAnswersJudged = 0
        var waiters: [(until: (State) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
    }
    private let state: Mutex<State>
    private let released = DispatchSemaphore(value: 0)
    private let card: (any CardResponder)?
    /// The thread that runs the direct runs (one run at a time, in order).
    public let thread: DedicatedTestThread

    /// Answers from `steps`, then — when the script is done — as `card` does (or fails with
    /// `.traceEnded` without one).
    public init(_ steps: [Step], thenAnswering card: (any CardResponder)? = nil) {
        state = Mutex(State(steps: steps))
        self.card = card
        thread = DedicatedTestThread(name: "tapemu-tests direct channel")
        card?.powerOn()
    }

    /// A channel to `card`, every command answered as it answers it.
    public convenience init(answering card: any CardResponder) {
        self.init([], thenAnswering: card)
    }

    /// Every command sent so far.
    public var sent: [CommandAPDU] { state.withLock { $0.sent } }
    /// How many runs were queued, and how many have returned.
    public var runs: (queued: Int, ended: Int) { state.withLock { ($0.runs, $0.runsEnded) } }
    /// How many short answers were judged.
    public var shortAnswersJudged: Int { state.withLock { $0.shortAnswersJudged } }

    /// Ends the channel's thread once its runs have returned.
    public func close() { thread.stop() }

    /// Lets one blocked step go on.
    public func release() { released.signal() }

    /// Returns once `count` steps have blocked (a real event: the step signals it).
    public func waitUntilBlocked(_ count: Int = 1) async { await waitUntil { $0.blocked >= count } }

    /// Returns once `count` runs have been queued (a real event: ``runDirect(onDeadline:_:)``
    /// counts each before it hands it to the thread).
    public func waitUntilQueued(_ count: Int) async { await waitUntil { $0.runs >= count } }

    /// Returns once every queued run has returned.
    public func waitUntilRunsEnd() async { await waitUntil { $0.runsEnded == $0.runs } }

    private func waitUntil(_ condition: @escaping @Sendable (State) -> Bool) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if condition(s) { return true }
                s.waiters.append((condition, c))
                return false
            }
            if now { c.resume() }
        }
    }

    private func update(_ change: (inout State) -> Void) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            change(&s)
            var ready: [CheckedContinuation<Void, Never>] = []
            let snapshot = s
            s.waiters.removeAll { w in
                guard w.until(snapshot) else { return false }
                ready.append(w.continuation)
                return true
            }
            return ready
        }
        for c in ready { c.resume() }
    }

    public func runDirect(onDeadline: @escaping @Sendable () -> Void,
                          _ body: @escaping @Sendable (any DirectLine) -> (@Sendable () -> Void)?) {
        update { $0.runs += 1 }
        let line = Line(channel: self, onDeadline: onDeadline)
        thread.run { [self] in
            let then = body(line)
            update { $0.runsEnded += 1 }
            then?()
        }
    }

    fileprivate func transmit(_ command: CommandAPDU, deadline: Int64, onDeadline: @Sendable () -> Void) -> DirectAnswer {
        var step: Step?
        update { s in
            s.sent.append(command)
            step = s.steps.isEmpty ? nil : s.steps.removeFirst()
        }
        switch step {
        case nil:
            guard let card else { return .failed(CardChannelError(.traceEnded, "the script has no answer for \(command)")) }
            switch card.process(command.bytes) {
            case .response(let bytes, _): return bytes.count < 2 ? .short(bytes) : .response(Self.parse(bytes))
            case .removed: return .failed(CardChannelError(.cardRemoved, "the card left the field (scripted)"))
            case .failure(let error, _): return .failed(error)
            case .mute:
                update { $0.blocked += 1 }
                released.wait()
                return .response(Self.parse([0x90, 0x00]))
            }
        case .respond(let bytes)?:
            return .response(Self.parse(bytes))
        case .short(let bytes)?:
            return .short(bytes)
        case .fail(let error)?:
            return .failed(error)
        case .muteUntilDeadline?:
            update { $0.blocked += 1 }
            // The deadline passing is the event waited for (no answer can come before it). The
            // semaphore's timeout is not read on the boot clock: a wait that ends before the
            // deadline has come on it waits again, for the drive ignores a watch that fires early
            // (and would then wait for this call for ever).
            while true {
                let wait = deadline - BootClock.now
                if wait <= 0 {
                    onDeadline()
                    released.wait()
                    break
                }
                if released.wait(timeout: .now() + .nanoseconds(Int(wait))) == .success { break }
            }
            return .response(Self.parse([0x90, 0x00]))
        case .block?:
            update { $0.blocked += 1 }
            released.wait()
            return .response(Self.parse([0x90, 0x00]))
        case .staleDeadline(let bytes)?:
            onDeadline()
            return .response(Self.parse(bytes))
        }
    }

    public func shortAnswerError(_ bytes: [UInt8], deadline: Duration, on clock: MonotonicClock,
                                 onTimeout: @escaping @Sendable () -> CardChannelError) async -> CardChannelError {
        update { $0.shortAnswersJudged += 1 }
        return shortError
    }

    public func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        throw CardChannelError(.transmitFailed, "the direct scripted channel answers direct runs only")
    }

    private static func parse(_ bytes: [UInt8]) -> ResponseAPDU {
        let sw2 = bytes[bytes.count - 1], sw1 = bytes[bytes.count - 2]
        return ResponseAPDU(data: Array(bytes.dropLast(2)), sw1: sw1, sw2: sw2)
    }

    private final class Line: DirectLine, Sendable {
        let channel: DirectScriptedChannel
        let onDeadline: @Sendable () -> Void
        init(channel: DirectScriptedChannel, onDeadline: @escaping @Sendable () -> Void) {
            self.channel = channel
            self.onDeadline = onDeadline
        }
        func transmit(_ command: CommandAPDU, deadline: Int64) -> DirectAnswer {
            channel.transmit(command, deadline: deadline, onDeadline: onDeadline)
        }
    }
}

/// A thread that runs submitted jobs in order, and can tell whether code runs on it.
public final class DedicatedTestThread: Sendable {
    private let jobs = Mutex<[(@Sendable () -> Void)?]>([])
    private let wake = DispatchSemaphore(value: 0)
    private let id = Mutex<pthread_t?>(nil)

    public init(name: String) {
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            id.withLock { $0 = pthread_self() }
            started.signal()
            while true {
                wake.wait()
                let next: (@Sendable () -> Void)?? = jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                guard let queued = next else { continue }
                guard let job = queued else { return }   // stopped
                job()
            }
        }
        thread.name = name
        thread.start()
        started.wait()
    }

    public func run(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        wake.signal()
    }

    /// Ends the thread once the jobs queued so far have run.
    public func stop() {
        jobs.withLock { $0.append(nil) }
        wake.signal()
    }

    /// Whether the caller runs on this thread.
    public var isCurrent: Bool { id.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false } }
}
