package import DeviceStore
import Synchronization

/// The one payment at a time of an SDK face (`TapToPay`, `CoreAPI`): who is busy, the task
/// that runs the payment (so `cancel` from anywhere reaches it), and the records of answered
/// payments that wait for the caller's acknowledgement (``ResultHandOver/acknowledged``).
///
/// The payment runs in a task of its own so that a cancel from another task reaches it; the
/// task's value is the face's own outcome (a `Result` with the face's typed error, or the
/// CoreAPI callback), so no error is lost on the way back.
package final class PaymentSession<Outcome: Sendable>: Sendable {
    private struct State {
        var busy = false
        var orderId: String?
        var current: Task<Outcome, Never>?
        var explicitCancel = false
        var unacknowledged: [String: PendingLease] = [:]
    }
    private let state = Mutex(State())

    package init() {}

    /// The order of the payment in progress.
    package var orderInProgress: String? { state.withLock { $0.orderId } }

    /// Whether ``cancel()`` — the user's cancel on the payment sheet — was called during the
    /// payment in progress (or the last one), as opposed to its task being cancelled.
    package var cancelledByUser: Bool { state.withLock { $0.explicitCancel } }

    /// Runs `operation` as the session's payment; nil (and nothing run) when one is in progress.
    /// Cancelling the calling task, or ``cancel()``, cancels the payment.
    package func run(orderId: String, _ operation: @escaping @Sendable () async -> Outcome) async -> Outcome? {
        let started = state.withLock { s -> Bool in
            if s.busy { return false }
            s.busy = true
            s.explicitCancel = false
            s.orderId = orderId
            return true
        }
        guard started else { return nil }
        defer { state.withLock { s in s.busy = false; s.current = nil; s.orderId = nil } }
        let task = Task { await operation() }
        let cancelNow = state.withLock { s -> Bool in
            s.current = task
            return s.explicitCancel
        }
        if cancelNow { task.cancel() }
        return await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Cancels the payment in progress (the user's cancel on the payment sheet).
    package func cancel() {
        let task = state.withLock { s -> Task<Outcome, Never>? in
            s.explicitCancel = true
            return s.current
        }
        task?.cancel()
    }

    /// The result of `orderId` is being handed over, by the one hand-over step
    /// (``HeldRecord/settle(_:handOver:settlesSale:)``): with ``ResultHandOver/onReturn`` its
    /// record leaves now (when that fails the record stays, recovery reports the payment again,
    /// and the observer is told); with ``ResultHandOver/acknowledged`` it waits for
    /// ``acknowledge(orderId:)``.
    package func handOver(_ lease: PendingLease, orderId: String, mode: ResultHandOver,
                  onEvent: @Sendable (PaymentEvent) -> Void) {
        let settled = HeldRecord.settle(lease, handOver: mode)
        if let held = settled.held {
            let replaced = state.withLock { s in
                defer { s.unacknowledged[orderId] = held.lease }
                return s.unacknowledged[orderId]
            }
            replaced?.release()
        } else if let error = settled.error {
            onEvent(.recordKept(reason: "the device's record of this payment could not be removed (\(error)); recovery will report it again"))
        }
    }

    /// The caller has the result of `orderId`: its record leaves.
    package func acknowledge(orderId: String) throws(DeviceStoreError) {
        let lease = state.withLock { s in s.unacknowledged.removeValue(forKey: orderId) }
        try lease?.complete()
    }
}
