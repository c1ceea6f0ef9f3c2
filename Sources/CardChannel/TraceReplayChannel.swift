public import ISO7816
import Synchronization

/// A channel whose card is a recorded trace: the reader side of replay.
///
/// Each command is matched against the next recorded one (``TraceMatching``); a divergence
/// throws `.traceMismatch` naming the exchange and showing both commands; recorded events
/// throw their error at their point (`card-removed` → `.cardRemoved`, `timeout` → `.timeout`,
/// `reader-removed` → `.readerRemoved`, `transmit-error NAME` → `.transmitFailed`); past the
/// end, `.traceEnded`. Paced replay spends the recorded card time on `clock` before each
/// answer; unpaced replay answers at once.
public final class TraceReplayChannel: ImmediateCardChannel {
    public let trace: APDUTrace
    public let matching: TraceMatching
    public let paced: Bool
    public let clock: MonotonicClock
    private let responder: Mutex<TraceResponder>

    /// - Parameter matching: nil: what the trace declares (``TraceMatching/declared(by:)``).
    public init(trace: APDUTrace, matching: TraceMatching? = nil, paced: Bool = false,
                clock: MonotonicClock = .continuous) {
        let matching = matching ?? .declared(by: trace)
        self.trace = trace
        self.matching = matching
        self.paced = paced
        self.clock = clock
        self.responder = Mutex(TraceResponder(trace: trace, matching: matching))
    }

    public convenience init(contentsOfFile path: String, matching: TraceMatching? = nil,
                            paced: Bool = false, clock: MonotonicClock = .continuous) throws(TraceError) {
        self.init(trace: try APDUTrace(contentsOfFile: path), matching: matching, paced: paced, clock: clock)
    }

    public var atr: [UInt8] { trace.atr }

    /// How many recorded commands were played, and how many the trace holds.
    public var progress: (played: Int, total: Int) {
        responder.withLock { ($0.commandsPlayed, $0.commandCount) }
    }

    /// Whether every recorded exchange and event has been played.
    public var isFinished: Bool { responder.withLock { $0.isFinished } }

    public func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        try await transmitImmediately(command).get()
    }

    /// The recorded answer at once (unpaced), or after the recorded card time (paced).
    public func transmitImmediately(_ command: CommandAPDU) -> ImmediateReply {
        if Task.isCancelled { return .failure(CardChannelError(.cancelled, "cancelled before the command was sent")) }
        let reply = responder.withLock { $0.respond(to: command.bytes) }
        switch reply {
        case .response(let response, let cardTime):
            return paced(.response(response), after: cardTime)
        case .event(_, let error, let cardTime):
            return paced(.failure(error), after: cardTime)
        case .mismatch(let error), .ended(let error):
            return .failure(error)
        }
    }

    private func paced(_ answer: ImmediateReply, after cardTime: Duration) -> ImmediateReply {
        guard paced, cardTime > .zero else { return answer }
        let clock = self.clock
        return .later { () async throws(CardChannelError) -> ResponseAPDU in
            do {
                try await clock.sleep(for: cardTime)
            } catch {
                throw CardChannelError(.cancelled, "cancelled while the recorded card was working")
            }
            return try await answer.get()
        }
    }
}
