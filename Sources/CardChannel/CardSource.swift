public import Timing

/// Where cards come from: a PC/SC reader, a trace, a virtual card. The payment flow and the
/// command line ask a source for a card and get a channel to it.
public protocol CardSource: Sendable {
    /// A short name for messages (`Virtual PCD 00 00`, `visa-qvsdc`, `trace visa.apdu`).
    var name: String { get }
    /// Waits up to `timeout` (on `clock`) for a card and connects to it.
    ///
    /// Throws `.noCard` when none came in time, `.cancelled` when the task is cancelled, and the
    /// source's own errors (`.noService`, `.noReader`, `.readerRemoved`, …).
    func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel
}
