public import CardChannel
public import ISO7816
public import Timing

/// Another channel with its direct calls hidden: a ``CardSession`` over it sends every APDU
/// through ``CardChannel/transmit(_:deadline:on:onTimeout:)`` — the per-exchange path — even
/// when the wrapped channel is a ``DirectExchangeChannel``. For tests that hold
/// ``CardSession/drive(from:_:)`` to what the same card gives exchange by exchange. Everything
/// else (the ATR, the preferred executor, both transmits) is the wrapped channel's own.
public struct PerExchangeChannel: CardChannel {
    /// The channel every exchange goes to.
    public let wrapped: any CardChannel

    public init(_ wrapped: any CardChannel) { self.wrapped = wrapped }

    public var atr: [UInt8] { wrapped.atr }
    public var mayHoldRealCard: Bool { wrapped.mayHoldRealCard }
    public var preferredExecutor: (any TaskExecutor)? { wrapped.preferredExecutor }

    public func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        try await wrapped.transmit(command)
    }

    nonisolated(nonsending) public func transmit(_ command: CommandAPDU, deadline: Duration, on clock: MonotonicClock,
                                                 onTimeout: @escaping @Sendable () -> CardChannelError)
        async throws(CardChannelError) -> ResponseAPDU
    {
        try await wrapped.transmit(command, deadline: deadline, on: clock, onTimeout: onTimeout)
    }
}
