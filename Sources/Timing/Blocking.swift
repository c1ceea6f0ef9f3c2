import Dispatch

/// Runs `body` — a call that blocks its thread (a SQLite write with `synchronous=FULL`, an
/// `fsync`) — on a thread of its own, off Swift's cooperative pool, and returns its result.
///
/// The caller waits for `body` to finish, whatever happens: cancellation does not abandon it (a
/// durable write that was started is either kept or reported), so everything after the call
/// still happens after `body`'s effects. The one bridge from blocking code to async code.
public func withBlockingCall<T: Sendable, Failure: Error>(
    _ body: @escaping @Sendable () throws(Failure) -> T
) async throws(Failure) -> T {
    let result = await withCheckedContinuation { (c: CheckedContinuation<Result<T, Failure>, Never>) in
        blockingQueue.async {
            c.resume(returning: Result { () throws(Failure) -> T in try body() })
        }
    }
    return try result.get()
}

/// Where ``withBlockingCall(_:)`` runs: concurrent, so one slow disk write does not hold up
/// another caller's.
private let blockingQueue = DispatchQueue(label: "tapemu.blocking", qos: .userInitiated, attributes: .concurrent)
