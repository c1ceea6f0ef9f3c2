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
            let timer = Task {
                do {
                    try await clock.sleep(until: deadline)
                    race.finish(.failure(onTimeout()))
                } catch {
                    // Cancelled because the work finished first (or the caller was cancelled).
                }
            }
            race.attach(work: work, timer: timer)
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
        var timer: Task<Void, Never>?
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

    func attach(work: Task<Void, Never>, timer: Task<Void, Never>) {
        let cancelNow = state.withLock { s -> Bool in
            // Once finished, keep no handles: the tasks capture this race, and holding them
            // here would keep both alive in a cycle.
            if !s.done {
                s.work = work
                s.timer = timer
            }
            return s.done
        }
        if cancelNow { work.cancel(); timer.cancel() }
    }

    func finish(_ result: Result<T, CardChannelError>) {
        let (c, work, timer) = state.withLock { s -> (CheckedContinuation<Result<T, CardChannelError>, Never>?, Task<Void, Never>?, Task<Void, Never>?) in
            guard !s.done else { return (nil, nil, nil) }
            s.done = true
            defer { s.work = nil; s.timer = nil }
            if let c = s.continuation {
                s.continuation = nil
                return (c, s.work, s.timer)
            }
            s.pending = result   // the continuation is not registered yet
            return (nil, s.work, s.timer)
        }
        work?.cancel()
        timer?.cancel()
        c?.resume(returning: result)
    }
}
