import Synchronization

/// Ctrl-C during `pay` or `sale`, told to the right party: before the payment (prepare and its
/// location fix; `sale`'s initialise) it cancels the task — `cancelled`; during the payment it is
/// the user's cancel on the payment sheet (`TapToPay.cancel()`, `CoreAPI.cancelSale()`).
///
/// `TapToPay.cancel()` with no payment in progress does nothing, as the SDK's does, and
/// `acceptPayment` starts its payment a moment after this process decided it was paying: a
/// Ctrl-C in that moment would be lost, and the customer charged after the operator cancelled.
/// So the cancel is told again at the payment's first event (a payment in progress then hears
/// it: before a card is asked for, that is `cancelled`).
final class PayInterrupt: Sendable {
    private struct State {
        var paying = false
        var interrupted = false
        /// A cancel told to the payment since the last Ctrl-C, while it surely ran (at an event).
        var heard = false
        var cancelPayment: (@Sendable () -> Void)?
        var cancelPrepare: (@Sendable () -> Void)?
        /// A Ctrl-C that came before ``connect(cancelPayment:cancelPrepare:)``.
        var early = false
    }
    private let state = Mutex(State())

    init() {}

    /// Who to tell. A Ctrl-C that came before is told now.
    func connect(cancelPayment: @escaping @Sendable () -> Void, cancelPrepare: @escaping @Sendable () -> Void) {
        let early = state.withLock { s -> Bool in
            s.cancelPayment = cancelPayment
            s.cancelPrepare = cancelPrepare
            return s.early
        }
        if early { signal() }
    }

    /// The payment is over: who was to be told is let go. (The payment's configuration holds this
    /// relay through its event handler, and the relay held the payment through its cancel: a cycle
    /// that kept the API, and the device's store with its files open, alive after the command.)
    func disconnect() {
        state.withLock { s in
            s.cancelPayment = nil
            s.cancelPrepare = nil
        }
    }

    /// The payment is about to start: true when a Ctrl-C came first (then it must not start).
    func startPaying() -> Bool {
        state.withLock { s -> Bool in
            if !s.interrupted { s.paying = true }
            return s.interrupted
        }
    }

    /// Ctrl-C.
    func signal() {
        let cancel = state.withLock { s -> (@Sendable () -> Void)? in
            s.interrupted = true
            s.heard = false
            if s.cancelPayment == nil { s.early = true }
            return s.paying ? s.cancelPayment : s.cancelPrepare
        }
        cancel?()
    }

    /// An event of the payment in progress: a Ctrl-C since the payment started that it may not
    /// have heard is told again, now that it surely runs.
    func paymentEvent() {
        let cancel = state.withLock { s -> (@Sendable () -> Void)? in
            guard s.paying, s.interrupted, !s.heard else { return nil }
            s.heard = true
            return s.cancelPayment
        }
        cancel?()
    }
}
