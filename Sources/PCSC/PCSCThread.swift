import Dispatch
import ISO7816
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

    /// What the thread does next.
    private enum Next {
        case job(UnownedJob)
        case call(Call)
        case transmit(TransmitCall)
        /// Nothing queued: wait for ``wake``.
        case park
        /// Stopped and drained: the loop ends.
        case end
    }

    /// A queued PC/SC call: any call, or an `SCardTransmit` (kept apart for its deadline).
    private enum QueuedCall {
        case call(Call)
        case transmit(TransmitCall)
    }

    private struct Queue {
        /// Task jobs, in arrival order. They go before ``calls``: a job queued behind a call that
        /// then blocks (a mute card) would wait for it, and nothing — not its deadline, not its
        /// cancellation — could get it out; so when the thread enters a call, no job is queued.
        var jobs: [UnownedJob] = []
        /// PC/SC calls, in arrival order (they run in that order).
        var calls: [QueuedCall] = []
        /// The transmit under way, while the thread is inside it. Not a reference of its own:
        /// the loop holds the call until it has cleared this, under the lock, and the deadline
        /// watch reads it only under the lock (one retain and release less per exchange).
        unowned(unsafe) var current: TransmitCall?
        /// The deadline of the direct transmit under way (``beginDirect(deadline:line:)``), and
        /// its line (held by the direct run's call while it is registered here).
        var directDeadline: Int64?
        unowned(unsafe) var directLine: PCSCDirectLine?
        /// The earliest instant the deadline watch is armed for (``watchDeadlines()``), or nil.
        var watchArmedFor: Int64?
        var stopping = false
        /// The loop has ended: nothing queued from now on would run.
        var ended = false
        /// The thread waits on ``wake``: the next ``submit(_:)`` or job signals it.
        var parked = false
        /// The thread is inside a ``Call`` (possibly blocked in pcscd).
        var inCall = false
    }
    private let queue = Mutex(Queue())
    private let wake = DispatchSemaphore(value: 0)
    /// Where task jobs run while the thread is inside a call, or after it ended.
    private let overflow: DispatchQueue

    init(name: String) {
        overflow = DispatchQueue(label: name + ".overflow")
        // The thread holds this object until ``stop()`` ends its loop.
        // No spin before parking: a read runs on this thread (it prefers this executor), so its
        // next call is queued before the thread looks for work. A spin only burnt a CPU that
        // pcscd and the card need on a 2-CPU machine, after every burst of work (issue 16).
        let thread = Thread { [self] in
            Thread.current.name = name   // set from the thread itself: then ps, top and perf show it
            runLoop()
        }
        thread.name = name
        thread.start()
    }

    /// The thread's loop: task jobs first, then calls in order; parks when there is nothing.
    ///
    /// A method of its own, with a flat ``Next`` and every value moved, not copied: in the
    /// thread's closure, with a nested optional, each exchange retained and released the call
    /// and its payload a dozen times (counted with uprobes, issue 16).
    private func runLoop() {
        let executor = asUnownedTaskExecutor()
        while true {
            switch next() {
            case .job(let job):
                job.runSynchronously(on: executor)
            case .transmit(let transmit):
                let outcome = transmit.send()
                queue.withLock { q in
                    q.inCall = false
                    q.current = nil
                }
                transmit.finish(outcome)
            case .call(let call):
                let then = call()
                queue.withLock { $0.inCall = false }
                then?()
            case .park:
                wake.wait()
            case .end:
                return
            }
        }
    }

    /// Takes the next piece of work off the queue.
    private func next() -> Next {
        // Calls skipped as finished, let go only once the lock is released: one may hold the
        // last reference to its card, whose deinit queues a disconnect (and then its context's,
        // the release): under the lock, that locked it again — a crash.
        var skipped: [TransmitCall] = []
        defer { if !skipped.isEmpty { skipped.removeAll() } }
        return queue.withLock { q -> Next in
            if !q.jobs.isEmpty { return .job(q.jobs.takeFirst()) }
            while !q.calls.isEmpty {
                switch q.calls.takeFirst() {
                case .call(let call):
                    q.inCall = true
                    return .call(call)
                case .transmit(let transmit):
                    // Timed out or cancelled while queued: its caller has its outcome, and the
                    // card is not sent a command nobody waits for.
                    if transmit.isFinished {
                        skipped.append(transmit)
                        continue
                    }
                    q.inCall = true
                    q.current = transmit
                    return .transmit(transmit)
                }
            }
            if q.stopping {
                q.ended = true
                return .end
            }
            q.parked = true
            return .park
        }
    }

    /// A task job (a task that prefers this executor, resumed or started): next in line on the
    /// thread — or on the overflow queue while the thread is inside a call or has ended.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (queued, parked) = queue.withLock { q -> (Bool, Bool) in
            if q.inCall || q.ended { return (false, false) }
            q.jobs.append(job)
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
            q.calls.append(.call(call))
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
    /// Sends `call` (an `SCardTransmit`) on this thread and returns its outcome: the card's answer
    /// or the call's error, `.timedOut` when the call's deadline comes first (the call goes on and
    /// its answer is dropped; one still queued is not sent at all), `.cancelled` at once when the
    /// task is cancelled (an already cancelled task sends nothing).
    ///
    /// A deadline on the continuous clock costs no timer per exchange: the thread keeps one watch
    /// for all its calls (``watchDeadlines()``), armed for the earliest deadline and moved on only
    /// when it fires — about once per APDU timeout while exchanges go on. On any other clock (a
    /// test's ``ManualClock``) each call has a timer of the clock's own.
    nonisolated(nonsending) func transmit(_ call: TransmitCall) async -> TransmitCall.Outcome {
        // No `Task.isCancelled` first (it retains the task): for a task already cancelled the
        // handler runs before the wait, the call is finished as cancelled and never queued.
        await call.wait {
            if let timer = call.timer {
                call.arm(timer.clock.schedule(at: timer.offset) { call.finish(.timedOut) })
            }
            submit(transmit: call)
        } onCancel: {
            call.finish(.cancelled)
        }
    }

    /// Runs `body` (an `SCardTransmit`) on this thread and returns its result, or nil when
    /// `deadline` (an offset on `clock`) comes first — ``transmit(_:)`` for any body (tests).
    func transmit(
        until deadline: Duration?, on clock: MonotonicClock?,
        _ body: @escaping @Sendable () throws(PCSCError) -> [UInt8]
    ) async -> Result<[UInt8], PCSCError>? {
        let call = if let deadline, let clock { TransmitCall(.body(body), until: deadline, on: clock) } else { TransmitCall(.body(body)) }
        switch await transmit(call) {
        case .answer(let bytes): return .success(bytes)
        case .failed(let error): return .failure(error)
        case .timedOut: return nil
        case .cancelled: return .failure(PCSCError(.cancelled, function: .transmit))
        }
    }

    /// Queues `call` behind the calls queued before it; arms the deadline watch when its deadline
    /// is earlier than the one the watch is armed for.
    private func submit(transmit call: TransmitCall) {
        let (parked, arm) = queue.withLock { q -> (Bool, Int64?) in
            q.calls.append(.transmit(call))
            var arm: Int64?
            if let deadline = call.deadline, deadline < q.watchArmedFor ?? .max {
                q.watchArmedFor = deadline
                arm = deadline
            }
            defer { q.parked = false }
            return (q.parked, arm)
        }
        if parked { wake.signal() }
        if let arm { armWatch(at: arm) }
    }

    /// Queues a direct run (``PCSCDirectLine``): `body` runs on this thread as one call, after
    /// the calls queued before it; what it returns runs once the thread is out of the call.
    func submitDirect(_ body: @escaping Call) {
        submit(call: body)
    }

    /// A direct transmit of `line`'s run starts, to end by `deadline` (nanoseconds of
    /// ``BootClock``): the watch calls the line's `expire` if it comes first. On this thread.
    func beginDirect(deadline: Int64, line: PCSCDirectLine) {
        let arm = queue.withLock { q -> Int64? in
            q.directDeadline = deadline
            q.directLine = line
            guard deadline < q.watchArmedFor ?? .max else { return nil }
            q.watchArmedFor = deadline
            return deadline
        }
        if let arm { armWatch(at: arm) }
    }

    /// The direct transmit returned.
    func endDirect() {
        queue.withLock { q in
            q.directDeadline = nil
            q.directLine = nil
        }
    }

    /// Calls queued and not yet started (tests).
    var queuedCalls: Int { queue.withLock { $0.calls.count } }

    /// Arms the watch for `deadline` (nanoseconds of ``BootClock``).
    private func armWatch(at deadline: Int64) {
        _ = DeadlineWatchdog.shared.schedule(at: BootClock.instant(deadline)) { [weak self] in self?.watchDeadlines() }
    }

    /// The deadline watch fired: times out every queued or running transmit whose deadline has
    /// come (a direct one through its line's `expire`), and re-arms for the earliest deadline still ahead.
    func watchDeadlines(at now: Int64 = BootClock.now) {
        var due: [TransmitCall] = []
        var dueDirect: PCSCDirectLine?
        let next = queue.withLock { q -> Int64? in
            var next: Int64?
            func consider(_ call: TransmitCall) {
                guard let deadline = call.deadline, !call.isFinished else { return }
                if deadline <= now {
                    due.append(call)
                } else if deadline < next ?? .max {
                    next = deadline
                }
            }
            for case .transmit(let call) in q.calls { consider(call) }
            if let current = q.current { consider(current) }
            if let deadline = q.directDeadline, let line = q.directLine {
                if deadline <= now {
                    dueDirect = line   // a strong reference, taken while the run holds the line
                    q.directDeadline = nil
                } else if deadline < next ?? .max {
                    next = deadline
                }
            }
            q.watchArmedFor = next
            return next
        }
        for call in due { call.finish(.timedOut) }
        dueDirect?.expire()
        if let next { armWatch(at: next) }
    }
}

/// One `SCardTransmit`: what to send, its deadline, and the wait of its caller — resumed exactly
/// once, by the PC/SC thread with the outcome, by the deadline, or by the task's cancellation,
/// whichever comes first. One object per exchange, no closure: the thread queues it as it is.
///
/// Not generic, and its outcome a plain enum: a generic class (or a `Result` in an `Optional`)
/// is copied and destroyed through run-time metadata, which cost ~4 µs of every exchange's
/// ~10 µs on this project's 2-core machine (perf, issue 16).
final class TransmitCall: Sendable {
    /// What to send.
    enum Send: Sendable {
        /// `SCardTransmit` of `command` on a card connection (one reference to hold and let go
        /// of, not the several of the context's ``PCSCLite``: this is on every exchange's path).
        case card(PCSCCard, command: [UInt8])
        /// The same for a command APDU, encoded on the PC/SC thread's stack when it is sent.
        case apdu(PCSCCard, CommandAPDU)
        /// Any body standing in for it (tests).
        case body(@Sendable () throws(PCSCError) -> [UInt8])
    }

    enum Outcome: Sendable {
        case answer([UInt8])
        case failed(PCSCError)
        case timedOut
        case cancelled
    }

    /// What to send, kept apart by kind: `send()` reads each from a stored property of `self`
    /// (a borrow), where binding an enum payload copied it — a retain and a release of the card
    /// and of the command's bytes on every exchange (issue 16).
    private let kind: Kind
    private let card: PCSCCard?
    private let apdu: CommandAPDU
    private let bytes: [UInt8]?   // optionals: nothing to release when unused
    private let body: (@Sendable () throws(PCSCError) -> [UInt8])?

    private enum Kind { case apdu, bytes, body }

    private static let noCommand = CommandAPDU(cla: 0, ins: 0, p1: 0, p2: 0)
    /// The deadline in nanoseconds of ``BootClock`` when it is on the continuous clock (kept by
    /// the thread's watch), else nil. An integer: `ContinuousClock.Instant` is copied and compared
    /// through run-time witnesses, on every exchange's path.
    let deadline: Int64?
    /// The deadline on any other clock (a test's ``ManualClock``), kept by a timer of that clock.
    let timer: ClockDeadline?

    /// A deadline on a clock other than the continuous one. A class: the call holds an optional
    /// reference, not an optional of a clock's closures (copied through run-time witnesses).
    final class ClockDeadline: Sendable {
        let clock: MonotonicClock
        /// The deadline, an offset on ``clock``.
        let offset: Duration

        init(clock: MonotonicClock, offset: Duration) {
            self.clock = clock
            self.offset = offset
        }
    }

    private struct State {
        var continuation: UnsafeContinuation<Outcome, Never>?
        var early: Outcome?
        var finished = false
        var timer: MonotonicClock.Timer?
    }
    private let state = Mutex(State())

    /// A call its caller waits for as long as it takes.
    init(_ what: consuming Send) {
        (kind, card, apdu, bytes, body) = Self.split(what)
        deadline = nil
        timer = nil
    }

    /// A call its caller stops waiting for at `deadline`, an offset on `clock`.
    init(_ what: consuming Send, until deadline: Duration, on clock: borrowing MonotonicClock) {
        (kind, card, apdu, bytes, body) = Self.split(what)
        if let instant = clock.bootNanoseconds(at: deadline) {
            self.deadline = instant
            timer = nil
        } else {
            self.deadline = nil
            timer = ClockDeadline(clock: copy clock, offset: deadline)
        }
    }

    private static func split(_ what: consuming Send)
        -> (Kind, PCSCCard?, CommandAPDU, [UInt8]?, (@Sendable () throws(PCSCError) -> [UInt8])?) {
        switch consume what {
        case .apdu(let card, let apdu): (.apdu, card, apdu, nil, nil)
        case .card(let card, let command): (.bytes, card, noCommand, command, nil)
        case .body(let body): (.body, nil, noCommand, nil, body)
        }
    }

    /// Makes the call (on the PC/SC thread).
    func send() -> Outcome {
        do throws(PCSCError) {
            switch kind {
            case .apdu: return .answer(try card.unsafelyUnwrapped.transmitNow(apdu))
            case .bytes: return .answer(try card.unsafelyUnwrapped.transmitNow(bytes.unsafelyUnwrapped))
            case .body: return .answer(try body.unsafelyUnwrapped())
            }
        } catch {
            return .failed(error)
        }
    }

    /// Whether the outcome is in (the caller may have been resumed already).
    var isFinished: Bool { state.withLock { $0.finished } }

    /// Awaits the outcome: `start` runs with the continuation registered; `onCancel` when the
    /// task is cancelled.
    nonisolated(nonsending) func wait(_ start: () -> Void, onCancel: @Sendable () -> Void) async -> Outcome {
        await withTaskCancellationHandler {
            // Unchecked: resumed exactly once by construction.
            await withUnsafeContinuation { (c: UnsafeContinuation<Outcome, Never>) in
                let early = state.withLock { s -> Outcome? in
                    if let early = s.early {
                        s.early = nil
                        return early
                    }
                    s.continuation = c
                    return nil
                }
                // An outcome already in (the task was cancelled before it got here): the call
                // is not even queued, so a cancelled task sends nothing.
                if let early { c.resume(returning: early) } else { start() }
            }
        } onCancel: {
            onCancel()
        }
    }

    /// Keeps the deadline's timer, to cancel once the outcome is in (at once if it is already).
    func arm(_ timer: MonotonicClock.Timer) {
        let finished = state.withLock { s -> Bool in
            if !s.finished { s.timer = timer }
            return s.finished
        }
        if finished { timer.cancel() }
    }

    /// Resumes the caller with `outcome` unless something came first. The outcome is moved to
    /// the caller, not copied (a copy retained and released the answer on every exchange).
    func finish(_ outcome: consuming Outcome) {
        var outcome = Optional(outcome)
        var continuation: UnsafeContinuation<Outcome, Never>?
        var timer: MonotonicClock.Timer?
        let taken = state.withLock { s -> Bool in
            guard !s.finished else { return false }
            s.finished = true
            timer = s.timer
            s.timer = nil
            if s.continuation != nil {
                continuation = s.continuation
                s.continuation = nil
            } else {
                s.early = outcome.take()
            }
            return true
        }
        guard taken else { return }
        timer?.cancel()
        if let continuation, let outcome = outcome.take() { continuation.resume(returning: outcome) }
    }
}

extension Array {
    /// `removeFirst()`, without the general shift when the array holds one element — the usual
    /// case of the PC/SC thread's queues (`removeFirst` goes through an unspecialised
    /// `replaceSubrange`, seen in every exchange's profile).
    @inline(__always)
    fileprivate mutating func takeFirst() -> Element {
        count == 1 ? removeLast() : removeFirst()
    }
}
