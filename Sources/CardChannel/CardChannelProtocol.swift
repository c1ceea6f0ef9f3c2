public import ISO7816
public import Timing

/// A way to talk to one card: send a command APDU, get the response.
///
/// Implementations: the PC/SC reader channel (module `PCSC`), ``ResponderChannel`` (a card side
/// in this process: a virtual card, a replayed trace) and the trace recorder (module
/// `APDUTrace`). They pass responses through as the card sent them — 61xx and 6Cxx included;
/// ``CardSession`` handles GET RESPONSE and resend-with-Le once, for every backend.
///
/// Errors: implementations throw only ``CardChannelError``:
/// `.cardRemoved` (a tear), `.readerRemoved`, `.transmitFailed` (with the backend's code in
/// `detail`), `.malformedResponse` (fewer than 2 bytes), `.cancelled` when the calling task is
/// cancelled, and the trace codes for replay. A `transmit` must return promptly when its task
/// is cancelled, even if the underlying call blocks (leave it on its own thread).
public protocol CardChannel: Sendable {
    /// The answer to reset of the card in the field (empty when the backend has none).
    var atr: [UInt8] { get }

    /// Whether the card may be a real one whose data belongs to someone (a reader: yes; a
    /// virtual card or a replayed trace: no). A recorder redacts by default when it may.
    /// Default: true.
    var mayHoldRealCard: Bool { get }

    /// The executor a sequence of exchanges (a whole card read) should run on, or nil for any.
    ///
    /// The PC/SC channel answers with the thread that owns its PC/SC context: a task running
    /// there sends each APDU as a direct call on the same thread, without handing it to another
    /// thread and waking up again for the answer. ``CardSession/run(_:)`` and the kernel's read
    /// use it. Default: nil.
    var preferredExecutor: (any TaskExecutor)? { get }

    /// Sends one command APDU and returns the card's response, unprocessed.
    func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU

    /// Sends one command APDU and returns the card's response, unprocessed — or, when `deadline`
    /// (an offset on `clock`) comes first, stops waiting and throws `onTimeout()`, even if the
    /// underlying call cannot be interrupted (its late result is dropped). Cancellation of the
    /// calling task throws `.cancelled` promptly.
    ///
    /// Default: ``transmit(_:)`` raced against the deadline (``withDeadline(_:on:onTimeout:_:)``).
    /// A channel that can keep the deadline more cheaply (the PC/SC channel: one continuation
    /// resumed from its thread or by a timer; an in-process card that answers on the spot)
    /// implements it. ``CardSession`` calls this one.
    nonisolated(nonsending) func transmit(_ command: CommandAPDU, deadline: Duration, on clock: MonotonicClock,
                  onTimeout: @escaping @Sendable () -> CardChannelError) async throws(CardChannelError) -> ResponseAPDU
}

extension CardChannel {
    public var mayHoldRealCard: Bool { true }

    public var preferredExecutor: (any TaskExecutor)? { nil }

    nonisolated(nonsending) public func transmit(_ command: CommandAPDU, deadline: Duration, on clock: MonotonicClock,
                         onTimeout: @escaping @Sendable () -> CardChannelError) async throws(CardChannelError) -> ResponseAPDU {
        try await withDeadline(deadline, on: clock, onTimeout: onTimeout) { () async throws(CardChannelError) -> ResponseAPDU in
            try await self.transmit(command)
        }
    }
}

/// A channel that hands every exchange to another one and watches it (the trace recorder, the
/// bench's timing): both transmits go to the wrapped channel's own through ``observe(_:_:)`` —
/// the deadline transmit included, so a PC/SC channel under a recorder still keeps each APDU's
/// deadline on its thread instead of the default, a task and a timer raced per exchange.
public protocol ObservingChannel: CardChannel {
    /// The channel every exchange goes to.
    var observed: any CardChannel { get }

    /// Runs `exchange` (`command` on ``observed``) and returns its response, watching it: what
    /// to record, what to time. Its error, if any, is thrown on as it is. `exchange` is
    /// `nonisolated(nonsending)`: a plain async closure would run on the generic executor, two
    /// executor switches more per exchange (found by the review).
    nonisolated(nonsending) func observe(
        _ command: CommandAPDU, _ exchange: nonisolated(nonsending) () async throws(CardChannelError) -> ResponseAPDU
    ) async throws(CardChannelError) -> ResponseAPDU
}

extension ObservingChannel {
    public var atr: [UInt8] { observed.atr }

    public var preferredExecutor: (any TaskExecutor)? { observed.preferredExecutor }

    public func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        try await observe(command) { () async throws(CardChannelError) -> ResponseAPDU in try await observed.transmit(command) }
    }

    nonisolated(nonsending) public func transmit(_ command: CommandAPDU, deadline: Duration, on clock: MonotonicClock,
                                                 onTimeout: @escaping @Sendable () -> CardChannelError) async throws(CardChannelError) -> ResponseAPDU {
        try await observe(command) { () async throws(CardChannelError) -> ResponseAPDU in
            try await observed.transmit(command, deadline: deadline, on: clock, onTimeout: onTimeout)
        }
    }
}

/// ``Timing/withDeadline(_:on:onTimeout:onCancel:_:)`` for card work: cancellation of the
/// calling task throws `.cancelled`.
public func withDeadline<T: Sendable>(
    _ deadline: Duration, on clock: MonotonicClock,
    onTimeout: @escaping @Sendable () -> CardChannelError,
    _ operation: @escaping @Sendable () async throws(CardChannelError) -> T
) async throws(CardChannelError) -> T {
    try await Timing.withDeadline(
        deadline, on: clock, onTimeout: onTimeout,
        onCancel: { CardChannelError(.cancelled, "cancelled while waiting for the card") }, operation)
}
