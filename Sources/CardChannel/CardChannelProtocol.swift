public import ISO7816

/// A way to talk to one card: send a command APDU, get the response.
///
/// Implementations: the PC/SC reader channel (module `PCSC`), ``VirtualCardChannel``,
/// ``TraceReplayChannel`` and ``RecordingChannel``. They pass responses through as the card
/// sent them — 61xx and 6Cxx included; ``CardSession`` handles GET RESPONSE and resend-with-Le
/// once, for every backend.
///
/// Errors: implementations throw only ``CardChannelError``:
/// `.cardRemoved` (a tear), `.readerRemoved`, `.transmitFailed` (with the backend's code in
/// `detail`), `.malformedResponse` (fewer than 2 bytes), `.cancelled` when the calling task is
/// cancelled, and the trace codes for replay. A `transmit` must return promptly when its task
/// is cancelled, even if the underlying call blocks (leave it on its own thread).
public protocol CardChannel: Sendable {
    /// The answer to reset of the card in the field (empty when the backend has none).
    var atr: [UInt8] { get }

    /// Sends one command APDU and returns the card's response, unprocessed.
    func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU
}

/// A channel that keeps an APDU deadline itself, more cheaply than ``withDeadline(_:on:onTimeout:_:)``'s
/// race of two tasks (the PC/SC channel: one continuation resumed from its thread, or by one
/// shared timer at the deadline). ``CardSession`` uses it when the channel offers it.
public protocol DeadlineCardChannel: CardChannel {
    /// Sends one command APDU and returns the card's response, unprocessed — or, when `deadline`
    /// (an offset on `clock`) comes first, stops waiting and throws `onTimeout()`, even if the
    /// underlying call cannot be interrupted (its late result is dropped). Cancellation of the
    /// calling task throws `.cancelled` promptly.
    func transmit(_ command: CommandAPDU, deadline: Duration, on clock: MonotonicClock,
                  onTimeout: @escaping @Sendable () -> CardChannelError) async throws(CardChannelError) -> ResponseAPDU
}
