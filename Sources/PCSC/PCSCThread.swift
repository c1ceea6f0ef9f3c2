import Timing
import Dispatch
import Foundation
import Synchronization
import Timing

/// A dedicated thread that owns one PC/SC context and runs every call on it, in order.
///
/// Blocking PC/SC calls (`SCardGetStatusChange`, `SCardTransmit`) block this thread, never a
/// thread of Swift's cooperative pool. Callers await results through continuations; a caller
/// whose task is cancelled can stop waiting at once (``perform(abandonOnCancel:onCancel:_:)``),
/// in which case the call finishes on this thread later and its result is dropped.
final class PCSCThread: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
        /// The thread waits on ``wake``: the next ``submit(_:)`` signals it.
        var parked = false
    }
    private let queue = Mutex(Queue())
    /// Whether ``queue`` holds jobs, readable without the lock (for the spin).
    private let hasJobs = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)

    /// How long the thread looks for its next job before it parks. A caller exchanging APDUs
    /// back to back submits the next one within a few microseconds of getting its answer; a
    /// parked thread costs it a wake-up (a futex call and a trip through the scheduler).
    static let spin: Duration = .microseconds(50)

    init(name: String) {
        // The thread holds this object until ``stop()`` ends its loop.
        let thread = Thread { [self] in
            let clock = ContinuousClock()
            while true {
                let spinUntil = clock.now.advanced(by: Self.spin)
                while !hasJobs.load(ordering: .acquiring) && clock.now < spinUntil {}
                let next = queue.withLock { q -> (@Sendable () -> Void)?? in
                    if !q.jobs.isEmpty {
                        let job = q.jobs.removeFirst()
                        if q.jobs.isEmpty { hasJobs.store(false, ordering: .releasing) }
                        return .some(job)
                    }
                    if q.stopping { return .some(nil) }
                    q.parked = true
                    return .none
                }
                switch next {
                case .some(.some(let job)): job()
                case .some(.none): return
                case .none: wake.wait()
                }
            }
        }
        thread.name = name
        thread.start()
    }

    /// Queues `job`; it runs after every job queued before it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        let parked = queue.withLock { q -> Bool in
            q.jobs.append(job)
            hasJobs.store(true, ordering: .releasing)
            defer { q.parked = false }
            return q.parked
        }
        if parked { wake.signal() }
    }

    /// Ends the thread once the jobs queued so far have run.
    func stop() {
        let parked = queue.withLock { q -> Bool in
            q.stopping = true
            defer { q.parked = false }
            return q.parked
        }
        if parked { wake.signal() }
    }

    /// Runs `body` on this thread and returns its result.
    ///
    /// - Parameters:
    ///   - abandonOnCancel: when the calling task is cancelled, return `.cancelled` at once
    ///     instead of waiting for `body` (which goes on and whose result is dropped). A task
    ///     already cancelled does not run `body` at all.
    ///   - onCancel: called (from the cancelling thread) when the task is cancelled, e.g. to
    ///     `SCardCancel` a blocked wait.
    func perform<T: Sendable>(
        _ function: PCSCFunction,
        abandonOnCancel: Bool = false,
        onCancel: (@Sendable () -> Void)? = nil,
        _ body: @escaping @Sendable () throws(PCSCError) -> T
    ) async throws(PCSCError) -> T {
        let once = ResumeOnce<Result<T, PCSCError>>()
        let cancelled = Result<T, PCSCError>.failure(PCSCError(.cancelled, function: function))
        if abandonOnCancel && Task.isCancelled { throw PCSCError(.cancelled, function: function) }
        let result = await once.wait {
            submit {
                once.resume(Result { () throws(PCSCError) -> T in try body() })
            }
        } onCancel: {
            onCancel?()
            if abandonOnCancel { once.resume(cancelled) }
        }
        return try result.get()
    }
}

extension PCSCThread {
    /// Runs `body` on this thread and returns its result, or nil when `deadline` (an offset on
    /// `clock`) comes first: the caller stops waiting then (the call goes on and its result is
    /// dropped). A cancelled task gets `.cancelled` at once; an already cancelled one does not
    /// run `body`.
    ///
    /// One continuation, resumed from this thread or by the clock's timer at the deadline (on
    /// the continuous clock the shared ``DeadlineWatchdog``: no task is made for the deadline).
    func perform<T: Sendable>(
        _ function: PCSCFunction, until deadline: Duration, on clock: MonotonicClock,
        _ body: @escaping @Sendable () throws(PCSCError) -> T
    ) async -> Result<T, PCSCError>? {
        let cancelled = Result<T, PCSCError>.failure(PCSCError(.cancelled, function: function))
        if Task.isCancelled { return cancelled }
        let once = ResumeOnce<Result<T, PCSCError>?>()
        return await once.wait {
            let timer = clock.schedule(at: deadline) { once.resume(nil) }
            once.onResume { timer.cancel() }
            submit {
                once.resume(Result { () throws(PCSCError) -> T in try body() })
            }
        } onCancel: {
            once.resume(cancelled)
        }
    }
}
