public import ISO7816
public import VirtualCard
import Synchronization

/// A channel to an ``EmulatedCard`` in this process.
///
/// The card's own time (a slow card) is reported in ``cardTime`` and, with
/// `simulatesCardTime`, spent on the clock, so the session's timing and deadlines see it. A torn
/// card throws `.cardRemoved` from then on; a mute card never answers (the session's deadline
/// ends the wait).
public final class VirtualCardChannel: ImmediateCardChannel {
    public let card: EmulatedCard
    public let clock: MonotonicClock
    public let simulatesCardTime: Bool
    private let state = Mutex<(removed: Bool, cardTime: Duration)>((false, .zero))

    public init(card: EmulatedCard, clock: MonotonicClock = .continuous, simulatesCardTime: Bool = true) {
        self.card = card
        self.clock = clock
        self.simulatesCardTime = simulatesCardTime
        card.powerOn()
    }

    public var atr: [UInt8] { card.atr }

    /// The card time of every answered command so far, added up.
    public var cardTime: Duration { state.withLock { $0.cardTime } }

    public func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        try await transmitImmediately(command).get()
    }

    /// The card's answer at once, or — a card that spends its time, a mute card — what to await.
    public func transmitImmediately(_ command: CommandAPDU) -> ImmediateReply {
        if state.withLock({ $0.removed }) {
            return .failure(CardChannelError(.cardRemoved, "the card was removed from the field"))
        }
        if Task.isCancelled { return .failure(CardChannelError(.cancelled, "cancelled before the command was sent")) }
        switch card.process(command.bytes) {
        case .response(let bytes, let cardTime):
            state.withLock { $0.cardTime += cardTime }
            let answer: ImmediateReply
            do {
                answer = .response(try ResponseAPDU(bytes: bytes))
            } catch {
                answer = .failure(CardChannelError(.malformedResponse, error.reason))
            }
            guard simulatesCardTime && cardTime > .zero else { return answer }
            let clock = self.clock
            return .later { () async throws(CardChannelError) -> ResponseAPDU in
                do { try await clock.sleep(for: cardTime) } catch {
                    throw CardChannelError(.cancelled, "cancelled while the card was working")
                }
                return try await answer.get()
            }
        case .removed:
            state.withLock { $0.removed = true }
            return .failure(CardChannelError(.cardRemoved, "the card was removed from the field"))
        case .mute:
            // A mute card: wait until the caller gives up (deadline or cancellation).
            let clock = self.clock
            return .later { () async throws(CardChannelError) -> ResponseAPDU in
                do {
                    while true { try await clock.sleep(for: .seconds(3600)) }
                } catch {
                    throw CardChannelError(.cancelled, "cancelled while waiting for a mute card")
                }
            }
        }
    }
}
