public import CardChannel

/// The card channel codes of trace replay: they belong to the trace library.
extension CardChannelError.Code {
    /// A replayed trace received a command other than the recorded one.
    public static let traceMismatch = Self("traceMismatch")
    /// A replayed trace has no more exchanges.
    public static let traceEnded = Self("traceEnded")
}
