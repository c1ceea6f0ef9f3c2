import Synchronization

/// A clock that moves only when told to: for tests of timeouts and pacing without real sleeping.
///
/// Sleepers wake, in deadline order, when ``advance(by:)`` moves time past their deadline.
/// ``waitForSleepers(_:)`` waits (on a real event, not a timer) until that many tasks sleep.
public final class ManualClock: Clock, Sendable {
    public struct Instant: InstantProtocol, Sendable {
        public var offset: Duration
        public init(offset: Duration) { self.offset = offset }
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    public init() {}

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// How many tasks are sleeping on this clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { s -> UInt64 in s.nextID += 1; return s.nextID }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let (resume, waiters): (Bool, [CheckedContinuation<Void, Never>]) = state.withLock { s in
                    if deadline <= s.now { return (true, []) }
                    if Task.isCancelled { return (true, []) }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: c))
                    let ready = s.waiters.filter { $0.count <= s.sleepers.count }.map(\.continuation)
                    s.waiters.removeAll { $0.count <= s.sleepers.count }
                    return (false, ready)
                }
                for w in waiters { w.resume() }
                if resume {
                    if Task.isCancelled { c.resume(throwing: CancellationError()) } else { c.resume() }
                }
            }
        } onCancel: {
            let c = state.withLock { s -> CheckedContinuation<Void, any Error>? in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.sleepers.remove(at: i).continuation
            }
            c?.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        let due = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            s.now = s.now.advanced(by: duration)
            let now = s.now
            let due = s.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            s.sleepers.removeAll { $0.deadline <= now }
            return due.map(\.continuation)
        }
        for c in due { c.resume() }
    }

    /// Returns once at least `count` tasks sleep on this clock.
    public func waitForSleepers(_ count: Int = 1) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if s.sleepers.count >= count { return true }
                s.waiters.append((count, c))
                return false
            }
            if ready { c.resume() }
        }
    }
}
