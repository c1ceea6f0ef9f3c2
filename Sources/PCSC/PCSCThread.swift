import Dispatch
import Foundation
import Synchronization
import Timing

/// A dedicated thread that owns one PC/SC context and runs every call on it, in order — and a
/// task executor, so a whole card read can run on it too.
///
/// Blocking PC/SC calls (`SCardGetStatusChange`, `SCardTransmit`) block this thread, never a
/// thread of Swift's cooperative pool. Callers await results through continuations; a caller
/// whose task is cancelled can stop waiting at once (``perform(_:abandonOnCancel:onCancel:_:)``),
/// in which case the call finishes on this thread later and its result is dropped.
///
/// A task that prefers this executor (`withTaskExecutorPreference`, as ``PCSCCardChannel``
/// asks through ``CardChannel/preferredExecutor``) runs here between its calls: sending an APDU
/// queues the call behind the task's own job on the same thread and resumes the task on it
/// afterwards — no hand-over to another thread and back, no wake-up, the cost of a plain
/// `SCardTransmit` loop. A job that arrives while the thread is inside a PC/SC call (a deadline
/// or a cancellation resuming a task whose call blocks on a mute card) does not wait behind the
/// call: it runs on the overflow queue, so deadlines and cancellation hold exactly as before.
/// Nor does a job that arrives while a call is queued: queued jobs run before queued calls.
final class PCSCThread: TaskExecutor, Sendable {
    /// A PC/SC call: runs on the thread (it may block), then hands back what to do once the
    /// thread is out of the call again (resume the caller), or nil.
    typealias Call = @Sendable () -> (@Sendable () -> Void)?

    private enum Work {
        case call(Call)
        case job(UnownedJob)
    }

    private struct Queue {
        /// Task jobs, in arrival order. They go before ``calls``: a job queued behind a call that
        /// then blocks (a mute card) would wait for it, and nothing — not its deadline, not its
        /// cancellation — could get it out; so when the thread enters a call, no job is queued.
        var jobs: [UnownedJob] = []
        /// PC/SC calls, in arrival order (they run in that order).
        var calls: [Call] = []
        var stopping = false
        /// The loop has ended: nothing queued from now on would run.
        var ended = false
        /// The thread waits on ``wake``: the next ``submit(_:)`` or job signals it.
        var parked = false
        /// The thread is inside a ``Call`` (possibly blocked in pcscd).
        var inCall = false
    }
    private let queue = Mutex(Queue())
    /// Whether ``queue`` holds work, readable without the lock (for the spin).
    private let hasWork = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    /// Where task jobs run while the thread is inside a call, or after it ended.
    private let overflow: DispatchQueue

    /// How long the thread looks for its next job before it parks. A caller on another thread
    /// exchanging APDUs back to back submits the next one within a few microseconds of getting
    /// its answer; a parked thread costs it a wake-up (a futex call and a trip through the
    /// scheduler).
    static let spin: Duration = .microseconds(50)

    init(name: String) {
        overflow = DispatchQueue(label: name + ".overflow")
        // The thread holds this object until ``stop()`` ends its loop.
        let thread = Thread { [self] in
            let clock = ContinuousClock()
            while true {
                if !hasWork.load(ordering: .acquiring) {
                    let spinUntil = clock.now.advanced(by: Self.spin)
                    while !hasWork.load(ordering: .acquiring) && clock.now < spinUntil {}
                }
                let next = queue.withLock { q -> Work?? in
                    if !q.jobs.isEmpty {
                        let job = q.jobs.removeFirst()
                        if q.jobs.isEmpty && q.calls.isEmpty { hasWork.store(false, ordering: .releasing) }
                        return .some(.job(job))
                    }
                    if !q.calls.isEmpty {
                        let call = q.calls.removeFirst()
                        if q.calls.isEmpty { hasWork.store(false, ordering: .releasing) }
                        q.inCall = true
                        return .some(.call(call))
                    }
                    if q.stopping {
                        q.ended = true
                        return .some(nil)
                    }
                    q.parked = true
                    return .none
                }
                switch next {
                case .some(.some(.call(let call))):
                    let then = call()
                    queue.withLock { $0.inCall = false }
                    then?()
                case .some(.some(.job(let job))):
                    job.runSynchronously(on: asUnownedTaskExecutor())
                case .some(.none):
                    return
                case .none:
                    wake.wait()
                }
            }
        }
        thread.name = name
        thread.start()
    }

    /// A task job (a task that prefers this executor, resumed or started): next in line on the
    /// thread — or on the overflow queue while the thread is inside a call or has ended.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (queued, parked) = queue.withLock { q -> (Bool, Bool) in
            if q.inCall || q.ended { return (false, false) }
            q.jobs.append(job)
            hasWork.store(true, ordering: .releasing)
            defer { q.parked = false }
            return (true, q.parked)
        }
        if parked { wake.signal() }
        if !queued {
            let executor = asUnownedTaskExecutor()
            overflow.async { job.runSynchronously(on: executor) }
        }
    }

    /// Queues `call`; it runs after every call queued before it (and after the task jobs queued
    /// by then).
    private func submit(call: @escaping Call) {
        let parked = queue.withLock { q -> Bool in
            q.calls.append(call)
            hasWork.store(true, ordering: .releasing)
            defer { q.parked = false }
            return q.parked
        }
        if parked { wake.signal() }
    }

    /// Queues `job` (a PC/SC call nobody waits for: a disconnect, the context's release); it
    /// runs after every call queued before it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        submit(call: { job(); return nil })
    }

    /// Ends the thread once the work queued so far has run.
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
            submit(call: {
                let result = Result { () throws(PCSCError) -> T in try body() }
                return { once.resume(result) }
            })
        } onCancel: {
            onCancel?()
            if abandonOnCancel { once.resume(cancelled) }
        }
        return try result.get()
    }
}

extension PCSCThread {
    /// Runs `body` (an `SCardTransmit`) on this thread and returns its result, or nil when
    /// `deadline` (an offset on `clock`) comes first: the caller stops waiting then (the call goes
    /// on and its result is dropped). A cancelled task gets `.cancelled` at once; an already
    /// cancelled one does not run `body`. No deadline: the call is awaited to its end (or to the
    /// task's cancellation).
    ///
    /// One ``TransmitWait``, resumed from this thread, by the clock's timer at the deadline (on
    /// the continuous clock the shared ``DeadlineWatchdog``: no task is made for the deadline),
    /// or by the cancellation.
    func transmit(
        until deadline: Duration?, on clock: MonotonicClock?,
        _ body: @escaping @Sendable () throws(PCSCError) -> [UInt8]
    ) async -> Result<[UInt8], PCSCError>? {
        let cancelled = Result<[UInt8], PCSCError>.failure(PCSCError(.cancelled, function: .transmit))
        if Task.isCancelled { return cancelled }
        let wait = TransmitWait()
        return await wait.wait {
            if let deadline, let clock { wait.arm(clock.schedule(at: deadline) { wait.resume(nil) }) }
            submit(call: {
                let result = Result { () throws(PCSCError) -> [UInt8] in try body() }
                return { wait.resume(result) }
            })
        } onCancel: {
            wait.resume(cancelled)
        }
    }
}

/// The wait of one `SCardTransmit`: resumed exactly once — by the PC/SC thread with the answer,
/// by the deadline's timer with nil, or by the task's cancellation — whichever comes first.
///
/// ``ResumeOnce`` does the same for any value; this one exists because it is not generic: a
/// generic class is destroyed through unspecialised code that looks its metadata up at run time,
/// and that cost ~4 µs of every exchange's ~10 µs on this project's 2-core machine (perf, issue 16).
final class TransmitWait: Sendable {
    typealias Outcome = Result<[UInt8], PCSCError>?
    private struct State {
        var continuation: UnsafeContinuation<Outcome, Never>?
        var early: Outcome?
        var done = false
        var timer: MonotonicClock.Timer?
    }
    private let state = Mutex(State())

    /// Awaits the outcome: `start` runs with the continuation registered; `onCancel` when the
    /// task is cancelled.
    func wait(_ start: () -> Void, onCancel: @escaping @Sendable () -> Void) async -> Outcome {
        await withTaskCancellationHandler {
            // Unchecked: resumed exactly once by construction.
            await withUnsafeContinuation { (c: UnsafeContinuation<Outcome, Never>) in
                var early: Outcome??
                state.withLock { s in
                    if s.early != nil {
                        early = s.early
                        s.early = nil
                    } else {
                        s.continuation = c
                    }
                }
                // An outcome already in (the task was cancelled before it got here): the call
                // is not even queued, so a cancelled task sends nothing.
                if let early { c.resume(returning: early ?? nil) } else { start() }
            }
        } onCancel: {
            onCancel()
        }
    }

    /// Keeps the deadline's timer, to cancel once the outcome is in (at once if it is already).
    func arm(_ timer: MonotonicClock.Timer) {
        let done = state.withLock { s -> Bool in
            if !s.done { s.timer = timer }
            return s.done
        }
        if done { timer.cancel() }
    }

    /// Resumes with `outcome` unless something came first.
    func resume(_ outcome: Outcome) {
        var continuation: UnsafeContinuation<Outcome, Never>?
        var timer: MonotonicClock.Timer?
        let taken = state.withLock { s -> Bool in
            guard !s.done else { return false }
            s.done = true
            timer = s.timer
            s.timer = nil
            if s.continuation != nil {
                continuation = s.continuation
                s.continuation = nil
            } else {
                s.early = .some(outcome)
            }
            return true
        }
        guard taken else { return }
        timer?.cancel()
        continuation?.resume(returning: outcome)
    }
}
