public import CardChannel
public import CodedErrors

/// The card channel codes of trace replay: they belong to the trace library.
extension ErrorCode<CardChannelError> {
    /// A replayed trace received a command other than the recorded one.
    public static var traceMismatch: Self { Self("traceMismatch") }
    /// A replayed trace has no more exchanges.
    public static var traceEnded: Self { Self("traceEnded") }
}
