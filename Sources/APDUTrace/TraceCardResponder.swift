import ISO7816
public import CardChannel
import Synchronization

/// The card side of a recorded trace as a ``CardResponder``, to serve a trace into a vpcd slot
/// (`tapemu emulate --trace FILE`).
///
/// Each power-on starts the trace over, and so does the trace's first command once the card has
/// played some of it (a second read through pcscd, which keeps the card powered: a real card
/// answers SELECT PPSE whenever it comes). A recorded `card-removed`, `reader-removed` or
/// `transmit-error` tears the card away; a recorded `timeout` makes it mute. A command other
/// than the recorded one, or one past the end, is answered `6F 00` (no precise diagnosis) and
/// reported through `onProblem`: vpcd has no way to carry an error.
public final class TraceCardResponder: CardResponder {
    private let responder: Mutex<TraceResponder>
    private let onProblem: @Sendable (CardChannelError) -> Void
    public let atr: [UInt8]

    public init(trace: APDUTrace, matching: TraceMatching = TraceMatching(),
                onProblem: @escaping @Sendable (CardChannelError) -> Void = { _ in }) {
        let responder = TraceResponder(trace: trace, matching: matching)
        self.responder = Mutex(responder)
        self.onProblem = onProblem
        // vpcd needs an ATR; a trace without one gets a bare ISO 14443-4 type A ATR.
        self.atr = responder.atr.isEmpty ? ContactlessATR.typeA(historicalBytes: []) : responder.atr
    }

    public func powerOn() {
        responder.withLock { $0.reset() }
    }

    public func process(_ command: [UInt8]) -> CardReply {
        let reply = responder.withLock { r -> TraceResponder.Reply in
            let first = r.respond(to: command)
            switch first {
            case .mismatch, .ended:
                var fresh = r
                fresh.reset()
                let again = fresh.respond(to: command)
                if case .response = again {
                    r = fresh
                    return again
                }
                return first
            case .response, .event:
                return first
            }
        }
        switch reply {
        case .response(let response, let cardTime):
            return .response(response.bytes, cardTime: cardTime)
        case .event(let event, _, _):
            switch event.kind {
            case .timeout: return .mute
            case .cardRemoved, .readerRemoved, .transmitError: return .removed
            }
        case .mismatch(let error), .ended(let error):
            onProblem(error)
            return .response([0x6F, 0x00], cardTime: .zero)
        }
    }
}
