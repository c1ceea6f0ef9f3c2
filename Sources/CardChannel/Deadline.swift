import Dispatch
import Synchronization

/// Runs `operation` until `deadline` on `clock`; at the deadline the caller stops waiting and
/// gets `onTimeout`, even if the operation itself cannot be interrupted (a blocking PC/SC call
/// on its own thread goes on and its late result is dropped). Task cancellation returns
/// `.cancelled` promptly. "Timed out" and "cancelled" stay distinct.
public func withDeadline<T: Sendable>(
    _ deadline: Duration, on clock: MonotonicClock,
    onTimeout: @escaping @Sendable () -> CardChannelError,
    _ operation: @escaping @Sendable () async throws(CardChannelError) -> T
) async throws(CardChannelError) -> T {
    let race = Race<T>()
    let result: Result<T, CardChannelError> = await withTaskCancellationHandler {
        await withCheckedContinuation { (c: CheckedContinuation<Result<T, CardChannelError>, Never>) in
            race.start(c)
            let work = Task {
                do throws(CardChannelError) {
                    race.finish(.success(try await operation()))
                } catch {
                    race.finish(.failure(error))
                }
            }
            if let instant = clock.continuousInstant(deadline) {
                // The continuous clock: one shared timer, no sleeping task.
                let token = DeadlineWatchdog.shared.schedule(at: instant) { race.finish(.failure(onTimeout())) }
                race.attach(work: work, stopTimer: { DeadlineWatchdog.shared.cancel(token) })
            } else {
                let timer = Task {
                    do {
                        try await clock.sleep(until: deadline)
                        race.finish(.failure(onTimeout()))
                    } catch {
                        // Cancelled because the work finished first (or the caller was cancelled).
                    }
                }
                race.attach(work: work, stopTimer: { timer.cancel() })
            }
        }
    } onCancel: {
        race.finish(.failure(CardChannelError(.cancelled, "cancelled while waiting for the card")))
    }
    return try result.get()
}

/// One continuation resumed exactly once by whichever side finishes first.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<T, CardChannelError>, Never>?
        var pending: Result<T, CardChannelError>?
        var work: Task<Void, Never>?
        var stopTimer: (@Sendable () -> Void)?
        var done = false
    }
    private let state = Mutex(State())

    func start(_ c: CheckedContinuation<Result<T, CardChannelError>, Never>) {
        let early = state.withLock { s -> Result<T, CardChannelError>? in
            if let p = s.pending { s.pending = nil; return p }
            s.continuation = c
            return nil
        }
        if let early { c.resume(returning: early) }
    }

    func attach(work: Task<Void, Never>, stopTimer: @escaping @Sendable () -> Void) {
        let cancelNow = state.withLock { s -> Bool in
            // Once finished, keep no handles: the task and the timer capture this race, and
            // holding them here would keep both alive in a cycle.
            if !s.done {
                s.work = work
                s.stopTimer = stopTimer
            }
            return s.done
        }
        if cancelNow { work.cancel(); stopTimer() }
    }

    func finish(_ result: Result<T, CardChannelError>) {
        let (c, work, stopTimer) = state.withLock { s -> (CheckedContinuation<Result<T, CardChannelError>, Never>?, Task<Void, Never>?, (@Sendable () -> Void)?) in
            guard !s.done else { return (nil, nil, nil) }
            s.done = true
            defer { s.work = nil; s.stopTimer = nil }
            if let c = s.continuation {
                s.continuation = nil
                return (c, s.work, s.stopTimer)
            }
            s.pending = result   // the continuation is not registered yet
            return (nil, s.work, s.stopTimer)
        }
        work?.cancel()
        stopTimer?()
        c?.resume(returning: result)
    }
}

/// Deadlines on the continuous clock kept by one shared dispatch timer, for work that is
/// waited on through a continuation: arming and disarming one costs a lock and no task, no
/// thread wake-up (the timer is re-armed only for a deadline earlier than the one it is armed
/// for; when it fires for a deadline whose work has finished, it re-arms for the next one).
public final class DeadlineWatchdog: Sendable {
    /// The one watchdog of the process.
    public static let shared = DeadlineWatchdog()

    /// A scheduled deadline, for ``cancel(_:)``.
    public struct Token: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    private struct Entry {
        let id: UInt64
        let deadline: ContinuousClock.Instant
        let fire: @Sendable () -> Void
    }
    private struct State {
        let timer: any DispatchSourceTimer
        var entries: [Entry] = []
        var nextID: UInt64 = 0
        /// The instant the timer is armed for; nil when disarmed.
        var armedFor: ContinuousClock.Instant?
    }
    /// The timer lives in the state: it is armed under the lock only.
    private let state: Mutex<State>

    /// - Parameter ticks: whether the timer fires the deadlines; a test that calls
    ///   ``takeDue(at:)`` with instants of its own makes one that does not.
    init(ticks: Bool = true) {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "tapemu.deadlines"))
        timer.schedule(deadline: .distantFuture)
        state = Mutex(State(timer: timer))
        state.withLock { s in
            if ticks { s.timer.setEventHandler { [unowned self] in self.tick() } }
            s.timer.activate()
        }
    }

    /// Calls `fire` (from a new task; keep it short) once `deadline` has come, unless
    /// ``cancel(_:)`` comes first.
    public func schedule(at deadline: ContinuousClock.Instant,
                         _ fire: @escaping @Sendable () -> Void) -> Token {
        state.withLock { s in
            s.nextID &+= 1
            s.entries.append(Entry(id: s.nextID, deadline: deadline, fire: fire))
            if s.armedFor.map({ deadline < $0 }) ?? true {
                s.armedFor = deadline
                Self.arm(s.timer, at: deadline)
            }
            return Token(id: s.nextID)
        }
    }

    /// Drops a deadline whose work finished (or that fired already: then nothing happens).
    public func cancel(_ token: Token) {
        state.withLock { s in
            if let i = s.entries.firstIndex(where: { $0.id == token.id }) { s.entries.remove(at: i) }
        }
    }

    private func tick() {
        // Decide from a task on the global executor, as a sleeping timer task would: work
        // already waiting for the cooperative pool (a starved pool, a loaded machine) runs first
        // and is not timed out by a clock it never had a chance to beat.
        for fire in takeDue(at: ContinuousClock.now) { Task { fire() } }
    }

    /// Removes the deadlines that have come at `now` and returns their work, earliest deadline
    /// first; re-arms the timer for the next one. (The timer's tick, and tests with a set `now`.)
    func takeDue(at now: ContinuousClock.Instant) -> [@Sendable () -> Void] {
        state.withLock { s -> [@Sendable () -> Void] in
            let due = s.entries.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            if !due.isEmpty { s.entries.removeAll { $0.deadline <= now } }
            s.armedFor = s.entries.lazy.map(\.deadline).min()
            if let next = s.armedFor { Self.arm(s.timer, at: next) }
            return due.map(\.fire)
        }
    }

    private static func arm(_ timer: any DispatchSourceTimer, at deadline: ContinuousClock.Instant) {
        let wait = ContinuousClock.now.duration(to: deadline)
        let (seconds, attoseconds) = wait.components
        let when: DispatchTime
        if wait <= .zero {
            when = .now()
        } else if seconds >= 1_000_000_000 {
            when = .distantFuture
        } else {
            when = .now() + .nanoseconds(Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        }
        timer.schedule(deadline: when, leeway: .microseconds(100))
    }
}
