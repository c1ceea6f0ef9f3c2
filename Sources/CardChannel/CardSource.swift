public import VirtualCard

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

/// A virtual card in this process: always present. The same card (and its ATC) serves every
/// connection, powered on anew each time.
public struct VirtualCardSource: CardSource {
    public let card: EmulatedCard
    public let simulatesCardTime: Bool

    public init(card: EmulatedCard, simulatesCardTime: Bool = true) {
        self.card = card
        self.simulatesCardTime = simulatesCardTime
    }

    public init(profile: CardProfile, simulatesCardTime: Bool = true) {
        self.init(card: EmulatedCard(profile: profile), simulatesCardTime: simulatesCardTime)
    }

    public var name: String { card.profile.name }

    public func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        if Task.isCancelled { throw CardChannelError(.cancelled, "cancelled while waiting for a card") }
        return VirtualCardChannel(card: card, clock: clock, simulatesCardTime: simulatesCardTime)
    }
}
