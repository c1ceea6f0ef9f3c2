public import ISO7816
public import Timing
import Synchronization

/// A channel to a card side in this process (``CardResponder``): a virtual card, a replayed
/// trace. Pacing and cancellation live here, once, for every such card.
///
/// With `paced`, the card's own time (``CardReply/response(_:cardTime:)``) is spent on `clock`
/// before the answer, so the session's timing and deadlines see it; unpaced, the answer comes
/// at once and the session makes no task hop. The card time of every answered command is added
/// up in ``cardTime``. A torn card (``CardReply/removed``) throws `.cardRemoved` from then on; a
/// mute card never answers (the session's deadline ends the wait); a ``CardReply/failure(_:cardTime:)``
/// throws its error. A task cancelled before the command is sent gets `.cancelled`.
public final class ResponderChannel<Responder: CardResponder>: CardChannel {
    public let responder: Responder
    public let clock: MonotonicClock
    /// Whether the card's time is spent on ``clock``.
    public let paced: Bool
    private let state = Mutex<(removed: Bool, cardTime: Duration)>((false, .zero))

    /// Powers the card on.
    public init(responder: Responder, clock: MonotonicClock = .continuous, paced: Bool) {
        self.responder = responder
        self.clock = clock
        self.paced = paced
        responder.powerOn()
    }

    public var atr: [UInt8] { responder.atr }

    /// A card side in this process is never a real card.
    public var mayHoldRealCard: Bool { false }

    /// The card time of every answered command so far, added up.
    public var cardTime: Duration { state.withLock { $0.cardTime } }

    public func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        switch reply(to: command) {
        case .now(let result): return try result.get()
        case .later(let wait): return try await wait()
        }
    }

    /// Answers at once when the card needs no waiting; only a wait is raced against the deadline.
    nonisolated(nonsending) public func transmit(_ command: CommandAPDU, deadline: Duration, on clock: MonotonicClock,
                         onTimeout: @escaping @Sendable () -> CardChannelError) async throws(CardChannelError) -> ResponseAPDU {
        switch reply(to: command) {
        case .now(let result): return try result.get()
        case .later(let wait): return try await withDeadline(deadline, on: clock, onTimeout: onTimeout, wait)
        }
    }

    private enum Reply {
        case now(Result<ResponseAPDU, CardChannelError>)
        case later(@Sendable () async throws(CardChannelError) -> ResponseAPDU)
    }

    /// Sends `command` to the card; the answer, or what to await for it.
    private func reply(to command: CommandAPDU) -> Reply {
        if state.withLock({ $0.removed }) {
            return .now(.failure(CardChannelError(.cardRemoved, "the card was removed from the field")))
        }
        if Task.isCancelled { return .now(.failure(CardChannelError(.cancelled, "cancelled before the command was sent"))) }
        switch responder.process(command.bytes) {
        case .response(let bytes, let cardTime):
            state.withLock { $0.cardTime += cardTime }
            let answer: Result<ResponseAPDU, CardChannelError>
            do {
                answer = .success(try ResponseAPDU(bytes: bytes))
            } catch {
                answer = .failure(CardChannelError(.malformedResponse, error.reason))
            }
            return paced(answer, after: cardTime)
        case .failure(let error, let cardTime):
            return paced(.failure(error), after: cardTime)
        case .removed:
            state.withLock { $0.removed = true }
            return .now(.failure(CardChannelError(.cardRemoved, "the card was removed from the field")))
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

    /// `answer`, after the card's time when paced.
    private func paced(_ answer: Result<ResponseAPDU, CardChannelError>, after cardTime: Duration) -> Reply {
        guard paced && cardTime > .zero else { return .now(answer) }
        let clock = self.clock
        return .later { () async throws(CardChannelError) -> ResponseAPDU in
            do { try await clock.sleep(for: cardTime) } catch {
                throw CardChannelError(.cancelled, "cancelled while the card was working")
            }
            return try answer.get()
        }
    }
}
