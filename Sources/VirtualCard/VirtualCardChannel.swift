public import CardChannel
public import Timing

/// A channel to an ``EmulatedCard`` in this process: a ``ResponderChannel`` over the card.
///
/// The card's own time (a slow card) is reported in ``ResponderChannel/cardTime`` and, with
/// `simulatesCardTime`, spent on the clock, so the session's timing and deadlines see it. A torn
/// card throws `.cardRemoved` from then on; a mute card never answers (the session's deadline
/// ends the wait).
public typealias VirtualCardChannel = ResponderChannel<EmulatedCard>

extension ResponderChannel where Responder == EmulatedCard {
    /// Powers the card on.
    public convenience init(card: EmulatedCard, clock: MonotonicClock = .continuous, simulatesCardTime: Bool = true) {
        self.init(responder: card, clock: clock, paced: simulatesCardTime)
    }

    public var card: EmulatedCard { responder }

    /// Whether the card's time is spent on the clock.
    public var simulatesCardTime: Bool { paced }
}

extension EmulatedCard: CardResponder {}

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
