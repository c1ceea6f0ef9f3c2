import Dispatch
public import Synchronization

/// Runs `operation` until `deadline` on `clock`; at the deadline the caller stops waiting and
/// gets `onTimeout()`, even if the operation itself cannot be interrupted (a blocking PC/SC call
/// on its own thread goes on and its late result is dropped). Task cancellation returns
/// `onCancel()` promptly. "Timed out" and "cancelled" stay distinct.
///
/// One path for every clock: the work runs in a task, the deadline is a
/// ``MonotonicClock/schedule(at:_:)`` timer, and whichever comes first resumes one
/// ``ResumeOnce``.
public func withDeadline<T: Sendable, Failure: Error>(
    _ deadline: Duration, on clock: MonotonicClock,
    onTimeout: @escaping @Sendable () -> Failure,
    onCancel: @escaping @Sendable () -> Failure,
    _ operation: @escaping @Sendable () async throws(Failure) -> T
) async throws(Failure) -> T {
    let once = ResumeOnce<Result<T, Failure>>()
    let result = await once.wait { () -> Void in
        let work = Task {
            do throws(Failure) {
                once.resume(.success(try await operation()))
            } catch {
                once.resume(.failure(error))
            }
        }
        let timer = clock.schedule(at: deadline) { once.resume(.failure(onTimeout())) }
        once.onResume { work.cancel(); timer.cancel() }
    } onCancel: {
        once.resume(.failure(onCancel()))
    }
    return try result.get()
}

/// One continuation resumed exactly once, by whichever side comes first: the work, a deadline,
/// the caller's cancellation. A value that comes before the continuation is registered is kept
/// for it; later values are dropped.
///
/// The one resume-once primitive of tapemu: ``withDeadline(_:on:onTimeout:onCancel:_:)`` races a
/// task against a timer with it, the PC/SC thread resumes its callers with it.
public final class ResumeOnce<Value: Sendable>: Sendable {
    // Inlinable so each caller's module specialises it for its value type: unspecialised, every
    // resume looked up the generic metadata of its state at run time (hash-table lookups worth
    // ~10 µs per PC/SC exchange on this project's 2-core machine, issue 16).
    @usableFromInline
    struct State {
        @usableFromInline var continuation: UnsafeContinuation<Value, Never>?
        @usableFromInline var early: Value?
        @usableFromInline var done = false
        /// What to stop once resumed (the losing task, the timer). Dropped then: they capture
        /// this object, and holding them would keep both alive in a cycle.
        @usableFromInline var cleanups: [@Sendable () -> Void] = []
        @inlinable init() {}
    }
    @usableFromInline let state = Mutex(State())

    @inlinable public init() {}

    /// Awaits the value: `start` runs with the continuation registered (start the work and the
    /// timer there) — not at all when the value is already in —, `onCancel` runs when the calling
    /// task is cancelled (resume from it, or ask the work to stop).
    @inlinable
    public func wait(_ start: () -> Void, onCancel: @escaping @Sendable () -> Void) async -> Value {
        await withTaskCancellationHandler {
            // Unchecked: this object resumes the continuation exactly once by construction.
            await withUnsafeContinuation { (c: UnsafeContinuation<Value, Never>) in
                // A value already in (the task was cancelled before it got here): nothing to start.
                if register(c) { start() }
            }
        } onCancel: {
            onCancel()
        }
    }

    /// Registers the continuation and returns true; resumes it at once and returns false when
    /// the value came first.
    @inlinable
    func register(_ c: UnsafeContinuation<Value, Never>) -> Bool {
        var early: Value?
        state.withLock { s in
            if s.early != nil {
                early = s.early
                s.early = nil
            } else {
                s.continuation = c
            }
        }
        if let early {
            c.resume(returning: early)
            return false
        }
        return true
    }

    /// Runs `cleanup` once the value is in (at once when it already is).
    @inlinable
    public func onResume(_ cleanup: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if !s.done { s.cleanups.append(cleanup) }
            return s.done
        }
        if now { cleanup() }
    }

    /// Resumes with `value` unless something else came first; returns whether this call did.
    @inlinable
    @discardableResult
    public func resume(_ value: Value) -> Bool {
        var continuation: UnsafeContinuation<Value, Never>?
        var cleanups: [@Sendable () -> Void] = []
        let taken = state.withLock { s -> Bool in
            guard !s.done else { return false }
            s.done = true
            swap(&cleanups, &s.cleanups)
            if s.continuation != nil {
                continuation = s.continuation
                s.continuation = nil
            } else {
                s.early = value   // the continuation is not registered yet
            }
            return true
        }
        guard taken else { return false }
        for cleanup in cleanups { cleanup() }
        continuation?.resume(returning: value)
        return true
    }
}

/// Deadlines on the continuous clock kept by one shared dispatch timer: arming and disarming one
/// costs a lock and no task, no thread wake-up (the timer is re-armed only for a deadline earlier
/// than the one it is armed for; when it fires for a deadline whose work has finished, it re-arms
/// for the next one).
///
/// An optimisation inside ``MonotonicClock/schedule(at:_:)``, invisible to its callers: on a
/// clock that wraps `ContinuousClock` a deadline is a watchdog entry; on any other clock (a
/// ``ManualClock`` in tests) a task sleeping on that clock. Both fire the same way — from a new
/// task on the global executor — so every caller takes the same path in production and tests.
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
