public import CardChannel
import ISO7816
public import Timing
import Synchronization

/// A channel whose card is a recorded trace: the reader side of replay, a ``ResponderChannel``
/// over the trace's card side.
///
/// Each command is matched against the next recorded one (``TraceMatching``); a divergence
/// throws `.traceMismatch` naming the exchange and showing both commands; recorded events
/// throw their error at their point (`card-removed` → `.cardRemoved`, `timeout` → `.timeout`,
/// `reader-removed` → `.readerRemoved`, `transmit-error NAME` → `.transmitFailed`); past the
/// end, `.traceEnded`. Paced replay spends the recorded card time on `clock` before each
/// answer; unpaced replay answers at once.
public typealias TraceReplayChannel = ResponderChannel<TraceReplayResponder>

extension ResponderChannel where Responder == TraceReplayResponder {
    /// - Parameter matching: nil: what the trace declares (``TraceMatching/declared(by:)``).
    public convenience init(trace: APDUTrace, matching: TraceMatching? = nil, paced: Bool = false,
                            clock: MonotonicClock = .continuous) {
        self.init(responder: TraceReplayResponder(trace: trace, matching: matching ?? .declared(by: trace)),
                  clock: clock, paced: paced)
    }

    public convenience init(contentsOfFile path: String, matching: TraceMatching? = nil,
                            paced: Bool = false, clock: MonotonicClock = .continuous) throws(TraceError) {
        self.init(trace: try APDUTrace(contentsOfFile: path), matching: matching, paced: paced, clock: clock)
    }

    public var trace: APDUTrace { responder.trace }
    public var matching: TraceMatching { responder.matching }

    /// How many recorded commands were played, and how many the trace holds.
    public var progress: (played: Int, total: Int) { responder.progress }

    /// Whether every recorded exchange and event has been played.
    public var isFinished: Bool { responder.isFinished }
}

/// The card side of a trace for in-process replay: every recorded event and every divergence is
/// a ``CardReply/failure(_:cardTime:)`` carrying the error a channel throws for it. (Served
/// into vpcd, which cannot carry errors, a trace is a ``TraceCardResponder``.)
public final class TraceReplayResponder: CardResponder {
    public let trace: APDUTrace
    public let matching: TraceMatching
    private let responder: Mutex<TraceResponder>

    public init(trace: APDUTrace, matching: TraceMatching) {
        self.trace = trace
        self.matching = matching
        self.responder = Mutex(TraceResponder(trace: trace, matching: matching))
    }

    public var atr: [UInt8] { trace.atr }

    /// Starts the trace over.
    public func powerOn() {
        responder.withLock { $0.reset() }
    }

    public func process(_ command: [UInt8]) -> CardReply {
        switch responder.withLock({ $0.respond(to: command) }) {
        case .response(let response, let cardTime): return .response(response.bytes, cardTime: cardTime)
        case .event(_, let error, let cardTime): return .failure(error, cardTime: cardTime)
        case .mismatch(let error), .ended(let error): return .failure(error, cardTime: .zero)
        }
    }

    /// How many recorded commands were played, and how many the trace holds.
    public var progress: (played: Int, total: Int) {
        responder.withLock { ($0.commandsPlayed, $0.commandCount) }
    }

    /// Whether every recorded exchange and event has been played.
    public var isFinished: Bool { responder.withLock { $0.isFinished } }
}
