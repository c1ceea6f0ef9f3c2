public import CardChannel
public import ISO7816

/// The card side of a trace as a pure responder: command bytes in, the recorded reply out.
///
/// A value with no I/O and no clock, so it serves both ``TraceReplayChannel`` (in process) and
/// `tapemu emulate --trace` (behind vpcd). Each command is matched against the next recorded
/// one; events replay at their point; a removed card or reader stays removed once the trace is
/// over.
public struct TraceResponder: Sendable {
    /// What the card does with one command.
    public enum Reply: Sendable {
        /// The recorded response, and how long the card took to give it in the recording.
        case response(ResponseAPDU, cardTime: Duration)
        /// A recorded event (tear, timeout, …) in place of an answer; `error` is what a channel
        /// throws for it. `cardTime`: how long after the command it happened.
        case event(TraceEvent, error: CardChannelError, cardTime: Duration)
        /// The command is not the recorded one (`.traceMismatch`). The position does not move.
        case mismatch(CardChannelError)
        /// Nothing left to play (`.traceEnded`).
        case ended(CardChannelError)
    }

    private enum Step: Sendable {
        case exchange(TraceExchange, mask: [Range<Int>])
        case event(TraceEvent, line: Int?)
    }

    public let trace: APDUTrace
    public let matching: TraceMatching
    private let steps: [Step]
    private var position = 0
    private var sticky: (event: TraceEvent, line: Int?)?
    private var commandsDone = 0

    public init(trace: APDUTrace, matching: TraceMatching = TraceMatching()) {
        self.trace = trace
        self.matching = matching
        var steps: [Step] = []
        var masks = TraceMasks(tags: matching.maskedTags)
        var pending: (bytes: [UInt8], time: Duration, line: Int?, mask: [Range<Int>])?
        var number = 0
        for e in trace.entries {
            switch e.kind {
            case .command(let bytes):
                if let p = pending {
                    number += 1
                    steps.append(.exchange(TraceExchange(number: number, command: p.bytes, commandTime: p.time,
                                                         reply: nil, replyTime: nil, line: p.line), mask: p.mask))
                }
                pending = (bytes, e.time, e.sourceLine, masks.mask(for: bytes))
            case .response(let r):
                guard let p = pending else { continue }
                number += 1
                steps.append(.exchange(TraceExchange(number: number, command: p.bytes, commandTime: p.time,
                                                     reply: .response(r), replyTime: e.time, line: p.line), mask: p.mask))
                masks.observe(command: p.bytes, response: r)
                pending = nil
            case .event(let ev):
                if let p = pending {
                    number += 1
                    steps.append(.exchange(TraceExchange(number: number, command: p.bytes, commandTime: p.time,
                                                         reply: .event(ev), replyTime: e.time, line: p.line), mask: p.mask))
                    pending = nil
                } else {
                    steps.append(.event(ev, line: e.sourceLine))
                }
            }
        }
        if let p = pending {
            number += 1
            steps.append(.exchange(TraceExchange(number: number, command: p.bytes, commandTime: p.time,
                                                 reply: nil, replyTime: nil, line: p.line), mask: p.mask))
        }
        self.steps = steps
    }

    /// The answer to reset the trace records (`@atr`), empty when none.
    public var atr: [UInt8] { trace.atr }

    /// How many recorded commands have been played.
    public var commandsPlayed: Int { commandsDone }
    /// How many recorded commands the trace holds.
    public var commandCount: Int {
        steps.reduce(0) { n, s in if case .exchange = s { return n + 1 } else { return n } }
    }
    /// Whether every recorded step has been played.
    public var isFinished: Bool { position >= steps.count }

    /// Starts the trace over (a new card session).
    public mutating func reset() {
        position = 0
        sticky = nil
        commandsDone = 0
    }

    /// The byte ranges `masked` matching ignores in recorded command `number` (1-based).
    public func maskedRanges(ofCommand number: Int) -> [Range<Int>] {
        for s in steps {
            if case .exchange(let x, let mask) = s, x.number == number { return mask }
        }
        return []
    }

    /// Plays one command.
    public mutating func respond(to command: [UInt8]) -> Reply {
        guard position < steps.count else {
            if let s = sticky {
                return .event(s.event, error: s.event.channelError(line: s.line), cardTime: .zero)
            }
            let total = commandCount
            return .ended(CardChannelError(
                .traceEnded, "the trace has no exchange left: it recorded \(total) command(s), this is command \(commandsDone + 1)",
                detail: "received \(Hex.encode(command))"))
        }
        switch steps[position] {
        case .event(let ev, let line):
            position += 1
            sticky = Self.isSticky(ev) ? (ev, line) : nil
            return .event(ev, error: ev.channelError(line: line), cardTime: .zero)
        case .exchange(let x, let mask):
            if let why = matching.mismatch(recorded: x.command, mask: mask, received: command) {
                let at = x.line.map { ", line \($0)" } ?? ""
                return .mismatch(CardChannelError(
                    .traceMismatch,
                    "exchange \(x.number)\(at): the command differs from the recorded one (\(matching.mode.rawValue) matching: \(why))\n"
                        + "  recorded: \(Self.show(x.command, mask: matching.mode == .masked ? mask : []))\n"
                        + "  received: \(Hex.encode(command))",
                    detail: x.line.map { "trace line \($0)" }))
            }
            position += 1
            commandsDone += 1
            switch x.reply {
            case .response(let r)?:
                sticky = nil
                return .response(r, cardTime: x.cardTime ?? .zero)
            case .event(let ev)?:
                sticky = Self.isSticky(ev) ? (ev, x.line) : nil
                return .event(ev, error: ev.channelError(line: x.line), cardTime: x.cardTime ?? .zero)
            case nil:
                return .ended(CardChannelError(.traceEnded, "the trace ends at exchange \(x.number) before the card answered"))
            }
        }
    }

    private static func isSticky(_ e: TraceEvent) -> Bool { e.kind == .cardRemoved || e.kind == .readerRemoved }

    /// Hex with the ignored bytes shown as `..`.
    static func show(_ bytes: [UInt8], mask: [Range<Int>]) -> String {
        var s = ""
        for (i, b) in bytes.enumerated() {
            s += mask.contains(where: { $0.contains(i) }) ? ".." : Hex.encode([b])
        }
        return s
    }
}
