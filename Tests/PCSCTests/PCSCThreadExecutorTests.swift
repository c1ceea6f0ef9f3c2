import Dispatch
import Foundation
import Synchronization
import Testing
import Timing
@testable import PCSC

/// The PC/SC thread as a task executor (issue 16): a task that prefers it runs between its calls
/// on the same thread — a call is a direct hand-off, no wake-up — and a job that arrives while the
/// thread is inside a blocking call (a deadline, a cancellation) runs at once elsewhere, so
/// deadlines and cancellation hold exactly as for a caller on another thread. No pcscd needed:
/// the bodies here stand in for `SCardTransmit`, blocked and released by real events.
@Suite("PC/SC thread as a task executor", .timeLimit(.minutes(1)))
struct PCSCThreadExecutorTests {
    /// The calling thread's identity.
    static func currentThread() -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(bitPattern: UInt(pthread_self())))) }

    /// A call body that blocks its thread until ``release()``, and tells when it has started.
    final class Gate: Sendable {
        private let started = DispatchSemaphore(value: 0)
        private let open = DispatchSemaphore(value: 0)
        /// The body: signals that it runs, then blocks until released.
        func block() { started.signal(); open.wait() }
        /// Waits (off the cooperative pool) until the body runs.
        func waitUntilStarted() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async { self.started.wait(); c.resume() }
            }
        }
        func release() { open.signal() }
    }

    @Test("a task that prefers the thread runs there, and its calls run on the same thread")
    func runsOnTheThread() async throws {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let (before, inCall, after) = try await withTaskExecutorPreference(thread) { () async throws(PCSCError) -> (UInt, UInt, UInt) in
            let before = Self.currentThread()
            let inCall = try await thread.perform(.transmit) { () throws(PCSCError) -> UInt in Self.currentThread() }
            return (before, inCall, Self.currentThread())
        }
        #expect(before == inCall)
        #expect(after == inCall)
        // Without the preference the caller stays on the pool: the call still runs on the thread.
        let pool = Self.currentThread()
        let call = try await thread.perform(.transmit) { () throws(PCSCError) -> UInt in Self.currentThread() }
        #expect(call == inCall)
        #expect(pool != inCall)
    }

    @Test("a deadline that comes while the call blocks resumes the task at once; the late result is dropped")
    func deadlineWhileBlocked() async {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let manual = ManualClock()
        let clock = MonotonicClock(manual)
        let gate = Gate()
        let read = Task {
            await withTaskExecutorPreference(thread) { () async -> (Result<[UInt8], PCSCError>?, UInt) in
                let result = await thread.transmit(until: .milliseconds(10), on: clock) { () throws(PCSCError) -> [UInt8] in
                    gate.block()
                    return [0x90, 0x00]
                }
                return (result, Self.currentThread())
            }
        }
        await gate.waitUntilStarted()
        await manual.waitForSleepers(1)
        manual.advance(by: .milliseconds(10))
        // The task comes back while the body still blocks the PC/SC thread.
        let (result, resumedOn) = await read.value
        #expect(result == nil)
        // A call queued now waits behind the blocked one, then runs; the thread was not lost.
        let next = Task { try await thread.perform(.transmit) { () throws(PCSCError) -> UInt in Self.currentThread() } }
        gate.release()
        let callThread = try? await next.value
        #expect(callThread != nil)
        #expect(callThread != resumedOn)   // the timed-out task ran on the overflow queue, not the blocked thread
    }

    @Test("cancelling a task whose call blocks returns .cancelled at once")
    func cancelWhileBlocked() async {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let gate = Gate()
        let cancelled = Mutex(false)
        let read = Task {
            await withTaskExecutorPreference(thread) { () async -> PCSCError.Code? in
                do throws(PCSCError) {
                    _ = try await thread.perform(.transmit, abandonOnCancel: true,
                                                 onCancel: { cancelled.withLock { $0 = true } }) { () throws(PCSCError) -> Int in
                        gate.block()
                        return 1
                    }
                    return nil
                } catch {
                    return error.code
                }
            }
        }
        await gate.waitUntilStarted()
        read.cancel()
        let code = await read.value
        #expect(code == .cancelled)
        #expect(cancelled.withLock { $0 })
        gate.release()
        let after = try? await thread.perform(.transmit) { () throws(PCSCError) -> Int in 7 }
        #expect(after == 7)
    }

    @Test("a task job queued behind a call that will block runs before that call")
    func jobBeforeQueuedCall() async throws {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        // Hold the thread inside a task's job (not a call), so what comes next is queued.
        let holding = Gate()
        let holder = Task(executorPreference: thread) { holding.block() }
        await holding.waitUntilStarted()
        let order = Mutex<[String]>([])
        let event = DispatchSemaphore(value: 0)
        let callRelease = DispatchSemaphore(value: 0)
        // A call that blocks once it runs, queued first…
        thread.submit {
            order.withLock { $0.append("call") }
            event.signal()
            callRelease.wait()
        }
        // …then a task's job (a new task preferring the thread), queued behind it.
        let job = Task(executorPreference: thread) {
            order.withLock { $0.append("job") }
            event.signal()
        }
        holding.release()
        _ = await holder.value
        // The first to run; then let the call finish so the other runs too, whatever the order.
        await Self.wait(event)
        callRelease.signal()
        await Self.wait(event)
        _ = await job.value
        #expect(order.withLock { $0 } == ["job", "call"])
    }

    /// Waits for `semaphore` off the cooperative pool.
    static func wait(_ semaphore: DispatchSemaphore) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { semaphore.wait(); c.resume() }
        }
    }

    @Test("a task whose call returned is not held up by a call queued behind it that then blocks")
    func resumeNotBehindQueuedCall() async throws {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let first = Gate(), second = Gate()
        defer { second.release() }
        // A task on the thread whose own call blocks until `first` opens.
        let caller = Task {
            try await withTaskExecutorPreference(thread) { () async throws(PCSCError) -> Int in
                try await thread.perform(.transmit) { () throws(PCSCError) -> Int in
                    first.block()
                    return 1
                }
            }
        }
        await first.waitUntilStarted()
        // Meanwhile another call is queued (a disconnect, another caller's transmit) that will
        // block in its turn — e.g. on a mute card.
        thread.submit { second.block() }
        first.release()
        // The caller got its answer before the second call started: it must not wait for that
        // call to end (nothing could time it out or cancel it while it waits there).
        // (Should it wait, the time limit's cancellation opens the gate, so the test ends.)
        let value = try await withTaskCancellationHandler { try await caller.value } onCancel: { second.release() }
        #expect(value == 1)
    }

    @Test("a task resumed while a blocking call is queued but not yet started does not wait behind it")
    func jobNotBehindQueuedCall() async {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let gate = Gate()
        defer { gate.release() }
        let parked = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let (ready, readyContinuation) = AsyncStream<Void>.makeStream()
        // B: a task on the thread, suspended until A resumes it.
        let b = Task {
            await withTaskExecutorPreference(thread) { () async -> Bool in
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    parked.withLock { $0 = c }
                    readyContinuation.yield()
                }
                return true
            }
        }
        var iterator = ready.makeAsyncIterator()
        _ = await iterator.next()
        // A, running on the thread: queues a call that will block (the thread is busy with A, so
        // the call has not started), then resumes B — whose job arrives while the thread is not
        // inside a call, but a blocking call is next in line.
        await withTaskExecutorPreference(thread) {
            thread.submit { gate.block() }
            parked.withLock { $0.take() }?.resume()
        }
        // B runs (on the thread before the call, or elsewhere): it does not wait for the call.
        // (Should it wait, the time limit's cancellation opens the gate, so the test ends.)
        let ran = await withTaskCancellationHandler { await b.value } onCancel: { gate.release() }
        #expect(ran)
    }

    @Test("jobs that arrive after the thread ended still run (on the overflow queue)")
    func afterStop() async throws {
        let thread = PCSCThread(name: "test.pcsc")
        // A last call, then the thread ends: a task preferring it must not be stranded.
        _ = try await thread.perform(.transmit) { () throws(PCSCError) -> Int in 0 }
        thread.stop()
        let ran = await withTaskExecutorPreference(thread) { () async -> Bool in
            await Task.yield()
            return true
        }
        #expect(ran)
    }

    // MARK: The thread's one deadline watch (continuous clock)

    /// Sends `body` through the thread with a deadline on `clock`, `offset` from its now.
    static func send(_ thread: PCSCThread, deadline offset: Duration, on clock: MonotonicClock,
                     _ body: @escaping @Sendable () throws(PCSCError) -> [UInt8]) async -> TransmitCall.Outcome {
        await thread.transmit(TransmitCall(.body(body), until: clock.now + offset, on: clock))
    }

    @Test("the watch times out every call whose deadline has come, queued or running, and no other")
    func watchTimesOutDueCalls() async {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let clock = MonotonicClock.continuous
        let gate = Gate()
        defer { gate.release() }
        let laterRan = Mutex(false)
        // A call that blocks (a mute card), and one queued behind it with a later deadline.
        let blocked = Task { await Self.send(thread, deadline: .seconds(30), on: clock) { gate.block(); return [0x90, 0x00] } }
        await gate.waitUntilStarted()
        let later = Task {
            await Self.send(thread, deadline: .seconds(300), on: clock) { laterRan.withLock { $0 = true }; return [0x90, 0x00] }
        }
        // The watch fires as its timer would, 31 s on: the running call's deadline has come, the
        // queued one's (queued by now or not) has not.
        thread.watchDeadlines(at: BootClock.now + 31_000_000_000)
        guard case .timedOut = await blocked.value else {
            Issue.record("the blocked call was not timed out")
            return
        }
        gate.release()
        guard case .answer(let bytes) = await later.value else {
            Issue.record("the call with the later deadline was timed out too")
            return
        }
        #expect(bytes == [0x90, 0x00])
        #expect(laterRan.withLock { $0 })
    }

    @Test("a call timed out while still queued is never sent")
    func queuedTimedOutNotSent() async throws {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let clock = MonotonicClock.continuous
        let gate = Gate()
        defer { gate.release() }
        let sent = Mutex(false)
        thread.submit { gate.block() }   // the thread is busy (a call blocked on a mute card)
        await gate.waitUntilStarted()
        let call = TransmitCall(.body { sent.withLock { $0 = true }; return [0x90, 0x00] }, until: clock.now + .seconds(5), on: clock)
        let queued = Task { await thread.transmit(call) }
        // The watch fires 6 s on (again until the call is queued: only then does the watch see it).
        while !call.isFinished {
            await Task.yield()
            thread.watchDeadlines(at: BootClock.now + 6_000_000_000)
        }
        guard case .timedOut = await queued.value else {
            Issue.record("the queued call was not timed out")
            return
        }
        gate.release()
        // A call queued after it runs: the thread went past the timed-out one.
        let after = try await thread.perform(.transmit) { () throws(PCSCError) -> Int in 7 }
        #expect(after == 7)
        #expect(!sent.withLock { $0 })
    }

    @Test("a call cancelled while still queued is never sent")
    func queuedCancelledNotSent() async throws {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let gate = Gate()
        defer { gate.release() }
        let sent = Mutex(false)
        thread.submit { gate.block() }
        await gate.waitUntilStarted()
        let queued = Task {
            await thread.transmit(TransmitCall(.body { sent.withLock { $0 = true }; return [0x90, 0x00] }))
        }
        while thread.queuedCalls == 0 { await Task.yield() }   // queued behind the blocked call
        queued.cancel()
        guard case .cancelled = await queued.value else {
            Issue.record("a cancelled call did not come back as cancelled")
            return
        }
        gate.release()
        let after = try await thread.perform(.transmit) { () throws(PCSCError) -> Int in 7 }
        #expect(after == 7)
        #expect(!sent.withLock { $0 })
    }

    @Test("a task already cancelled sends nothing: with or without a deadline, on any clock, the call comes back cancelled and never runs")
    func alreadyCancelledSendsNothing() async throws {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let manual = ManualClock()
        let sent = Mutex(0)
        // The thread is held in a call: anything queued from here on stays queued, to be seen.
        let gate = Gate()
        defer { gate.release() }
        thread.submit { gate.block() }
        await gate.waitUntilStarted()
        let calls: [@Sendable () -> TransmitCall] = [
            { TransmitCall(.body { sent.withLock { $0 += 1 }; return [0x90, 0x00] }) },
            { TransmitCall(.body { sent.withLock { $0 += 1 }; return [0x90, 0x00] }, until: .seconds(5), on: .continuous) },
            { TransmitCall(.body { sent.withLock { $0 += 1 }; return [0x90, 0x00] }, until: .seconds(5), on: MonotonicClock(manual)) },
        ]
        for make in calls {
            for preferThread in [false, true] {
                let task = Task { () async -> TransmitCall.Outcome in
                    withUnsafeCurrentTask { $0?.cancel() }
                    let call = make()
                    if preferThread {   // the thread is held: the task runs on the overflow queue
                        return await withTaskExecutorPreference(thread) { await thread.transmit(call) }
                    }
                    return await thread.transmit(call)
                }
                guard case .cancelled = await task.value else {
                    Issue.record("a cancelled task's call did not come back cancelled")
                    return
                }
            }
        }
        // Not even queued (the thread would skip a finished call, but it must not get that far).
        #expect(thread.queuedCalls == 0)
        gate.release()
        // A call queued now runs after anything the cancelled tasks could have queued.
        let after = try await thread.perform(.transmit) { () throws(PCSCError) -> Int in 7 }
        #expect(after == 7)
        #expect(sent.withLock { $0 } == 0)
    }

    @Test("a caller on the main actor: its call runs on the PC/SC thread, the main actor stays free while the call blocks, and a cancellation returns at once")
    @MainActor func mainActorCaller() async {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let callerThread = Self.currentThread()
        // Answered (the path is nonisolated(nonsending) down to the wait: the caller's executor).
        let calledOn = Mutex<UInt>(0)
        let outcome = await thread.transmit(TransmitCall(.body { calledOn.withLock { $0 = Self.currentThread() }; return [0x90, 0x00] },
                                                         until: .seconds(5), on: .continuous))
        guard case .answer(let bytes) = outcome else { Issue.record("no answer: \(outcome)"); return }
        #expect(bytes == [0x90, 0x00])
        #expect(calledOn.withLock { $0 } != callerThread)   // never on the main actor's thread
        // Blocked: the main actor goes on (this test runs on it); the cancelled caller returns at once.
        let gate = Gate()
        defer { gate.release() }
        let blocked = Task { @MainActor in await thread.transmit(TransmitCall(.body { gate.block(); return [0x90, 0x00] })) }
        await gate.waitUntilStarted()
        blocked.cancel()
        guard case .cancelled = await blocked.value else { Issue.record("not cancelled"); return }
    }

    /// Stands in for a ``PCSCCard`` held only by its call: when the last reference goes, it
    /// queues a call on the thread, as the card's deinit queues its disconnect (and its context's
    /// deinit the context's release and the thread's stop).
    final class HeldByCall: Sendable {
        let thread: PCSCThread
        let released: AsyncStream<Void>.Continuation
        init(thread: PCSCThread, released: AsyncStream<Void>.Continuation) {
            self.thread = thread
            self.released = released
        }
        deinit {
            let released = self.released
            thread.submit { released.yield() }
        }
    }

    @Test("a call skipped as finished lets its card go outside the queue's lock (the card's deinit queues a disconnect)")
    func skippedCallReleasedOutsideLock() async {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let gate = Gate()
        defer { gate.release() }
        let (released, releasedContinuation) = AsyncStream<Void>.makeStream()
        thread.submit { gate.block() }   // the thread is busy (a call blocked on a mute card)
        await gate.waitUntilStarted()
        // The caller's read is cancelled while its call is queued, and it lets the channel (and
        // card) go: the queued call holds the last reference to the card.
        let queued = Task {
            let card = HeldByCall(thread: thread, released: releasedContinuation)
            return await thread.transmit(TransmitCall(.body { withExtendedLifetime(card) { [0x90, 0x00] } }))
        }
        while thread.queuedCalls == 0 { await Task.yield() }
        queued.cancel()
        guard case .cancelled = await queued.value else {
            Issue.record("a cancelled call did not come back as cancelled")
            return
        }
        // The thread skips the call and drops it; the card's disconnect is queued and runs.
        // (Dropped inside the queue's lock, the deinit's submit locked it again: a crash.)
        gate.release()
        var iterator = released.makeAsyncIterator()
        let disconnected: Void? = await iterator.next()
        #expect(disconnected != nil)
    }

    @Test("a real deadline on the continuous clock resumes a call blocked on the thread (the watch's timer)")
    func continuousDeadlineFires() async {
        let thread = PCSCThread(name: "test.pcsc")
        defer { thread.stop() }
        let gate = Gate()
        defer { gate.release() }
        // Blocked until the test ends: only the deadline can bring the caller back.
        let outcome = await Self.send(thread, deadline: .milliseconds(20), on: .continuous) { gate.block(); return [0x90, 0x00] }
        guard case .timedOut = outcome else {
            Issue.record("expected .timedOut, got \(outcome)")
            return
        }
        // Many calls with later deadlines, each answered: none is timed out by a stale watch.
        gate.release()
        for _ in 0..<200 {
            guard case .answer = await Self.send(thread, deadline: .seconds(2), on: .continuous, { [0x90, 0x00] }) else {
                Issue.record("a call answered at once was timed out")
                return
            }
        }
    }
}
