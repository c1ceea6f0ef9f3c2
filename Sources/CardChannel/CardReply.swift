/// What the card side does with one command (``CardResponder/process(_:)``).
public enum CardReply: Sendable, Equatable {
    /// The card answered: response data + SW1 SW2. `cardTime` is the time the card spends on
    /// the command (zero for an instant card; a slow card's profile says how long). The card
    /// never sleeps: the channel decides whether to spend that time on its clock.
    case response([UInt8], cardTime: Duration)
    /// The card left the field before answering (a tear). It stays away until
    /// ``CardResponder/powerOn()``.
    case removed
    /// The card never answers this command. It stays mute until ``CardResponder/powerOn()``.
    case mute
    /// The exchange fails with `error` after `cardTime` (a replayed trace's recorded event, or a
    /// command the trace did not record). A vpcd slot cannot carry an error: it takes this as a
    /// removal.
    case failure(CardChannelError, cardTime: Duration)
}

extension CardReply {
    /// The response bytes (data + SW1 SW2), or nil for the other replies.
    public var responseBytes: [UInt8]? {
        if case .response(let bytes, _) = self { return bytes }
        return nil
    }
}
