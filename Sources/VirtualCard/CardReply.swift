/// What an emulated card does with one command.
public enum CardReply: Sendable, Equatable {
    /// The card answered: response data + SW1 SW2. `cardTime` is the time the card spends on
    /// the command (zero for an instant card; a slow card's profile says how long). The card
    /// never sleeps: the channel decides whether to spend that time on its clock.
    case response([UInt8], cardTime: Duration)
    /// The card left the field before answering (a tear). It stays away until ``EmulatedCard/powerOn()``.
    case removed
    /// The card never answers this command. It stays mute until ``EmulatedCard/powerOn()``.
    case mute
}

extension CardReply {
    /// The response bytes (data + SW1 SW2), or nil for ``removed`` and ``mute``.
    public var responseBytes: [UInt8]? {
        if case .response(let bytes, _) = self { return bytes }
        return nil
    }
}
