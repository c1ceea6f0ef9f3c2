public import VirtualCard
import ISO7816
import Synchronization

/// The card side of a trace shaped like an emulated card — `atr`, `powerOn()`, `powerOff()`,
/// `process(_:) -> CardReply` — so a vpcd card server (`tapemu emulate --trace`) can serve it
/// to any PC/SC program. It conforms to the PCSC module's `CardResponder` there
/// (`extension TraceCard: CardResponder {}`).
///
/// Each power-on starts the trace over. Recorded events become what a real card does:
/// `card-removed`, `reader-removed` and `transmit-error` a tear (``CardReply/removed``),
/// `timeout` a mute card. A command other than the recorded one is answered `6F00` and kept in
/// ``mismatches``; past the end of the trace the card leaves the field.
public final class TraceCard: Sendable {
    public let trace: APDUTrace
    /// Whether replies carry the recorded card time (the server then spends it).
    public let paced: Bool
    private let state: Mutex<(responder: TraceResponder, mismatches: [CardChannelError])>

    public init(trace: APDUTrace, matching: TraceMatching = TraceMatching(), paced: Bool = true) {
        self.trace = trace
        self.paced = paced
        self.state = Mutex((TraceResponder(trace: trace, matching: matching), []))
    }

    /// The recorded ATR (`@atr`), or a generic ISO 14443-4 one when the trace has none.
    public var atr: [UInt8] {
        let a = trace.atr
        return a.isEmpty ? [0x3B, 0x80, 0x80, 0x01, 0x01] : a
    }

    /// The card enters the field: the trace starts over.
    public func powerOn() { state.withLock { $0.responder.reset() } }
    public func powerOff() {}

    /// Every command that did not match the recorded one, with both commands in its reason.
    public var mismatches: [CardChannelError] { state.withLock { $0.mismatches } }

    /// How many recorded commands have been played since the last power-on, of how many.
    public var progress: (played: Int, total: Int) {
        state.withLock { ($0.responder.commandsPlayed, $0.responder.commandCount) }
    }

    public func process(_ command: [UInt8]) -> CardReply {
        let reply = state.withLock { s -> TraceResponder.Reply in
            let r = s.responder.respond(to: command)
            if case .mismatch(let e) = r { s.mismatches.append(e) }
            return r
        }
        switch reply {
        case .response(let r, let cardTime):
            return .response(r.bytes, cardTime: paced ? cardTime : .zero)
        case .event(let event, _, _):
            return event.kind == .timeout ? .mute : .removed
        case .mismatch:
            return .response([0x6F, 0x00], cardTime: .zero)
        case .ended:
            return .removed
        }
    }
}
