public import CardChannel
public import ISO7816
public import Timing
import FoundationEssentials
import Synchronization

/// Wraps any channel and records every exchange — command, response, timing — and every
/// failure as an event, to write a `tapemu-apdu-trace/1` file.
///
/// Times are seconds since the recorder was made ("since connect"), on `clock`. Put it under
/// the ``CardSession`` (`CardSession(channel: RecordingChannel(wrapping: …))`) so GET RESPONSE
/// and resends are recorded as the card saw them. Failures become events: `.cardRemoved` →
/// `card-removed`, `.timeout` and `.cancelled` (the session's deadline) → `timeout`,
/// `.readerRemoved` → `reader-removed`, anything else → `transmit-error NAME`.
///
/// With `redact`, ``trace`` replaces PAN, track 2 and cardholder name by test values
/// (``APDUTrace/redacted()``); the default is on for a real reader and off for a virtual card
/// or a replayed trace.
public final class RecordingChannel: ObservingChannel {
    public let channel: any CardChannel
    public let clock: MonotonicClock
    public let redacts: Bool
    private let origin: Duration
    private let state: Mutex<APDUTrace>

    /// - Parameters:
    ///   - headers: extra headers (`title`, `reader`, …) written after `@format`.
    ///   - redact: nil picks by source: on when `channel` may hold a real card (``CardChannel/mayHoldRealCard``).
    public init(wrapping channel: any CardChannel, headers: [APDUTrace.Header] = [], redact: Bool? = nil,
                clock: MonotonicClock = .continuous) {
        self.channel = channel
        self.clock = clock
        self.redacts = redact ?? channel.mayHoldRealCard
        self.origin = clock.now
        var trace = APDUTrace(headers: headers)
        if trace[header: "recorded"] == nil { trace.recorded = Date.now.ISO8601Format() }
        if trace[header: "atr"] == nil, !channel.atr.isEmpty { trace.atr = channel.atr }
        self.state = Mutex(trace)
    }

    /// The recording so far (redacted when the recorder redacts).
    public var trace: APDUTrace {
        let t = state.withLock { $0 }
        return redacts ? t.redacted() : t
    }

    /// The recording exactly as seen, never redacted. Keep it in memory only.
    public var unredactedTrace: APDUTrace { state.withLock { $0 } }

    /// Writes ``trace`` to `path`.
    public func write(toFile path: String) throws(TraceError) {
        try trace.write(toFile: path)
    }

    public var observed: any CardChannel { channel }

    /// Runs `exchange` (`command` on the recorded channel) and records the command and what
    /// came back (``ObservingChannel``: both transmits come here).
    nonisolated(nonsending) public func observe(
        _ command: CommandAPDU, _ exchange: nonisolated(nonsending) () async throws(CardChannelError) -> ResponseAPDU
    ) async throws(CardChannelError) -> ResponseAPDU {
        let sent = clock.now - origin
        do {
            let response = try await exchange()
            let received = clock.now - origin
            state.withLock {
                $0.entries.append(.command(command, at: Self.clamp(sent, after: $0.entries.last?.time)))
                $0.entries.append(.response(response, at: Self.clamp(received, after: $0.entries.last?.time)))
            }
            return response
        } catch {
            let failed = clock.now - origin
            let event = TraceEvent(recording: error)
            state.withLock {
                $0.entries.append(.command(command, at: Self.clamp(sent, after: $0.entries.last?.time)))
                $0.entries.append(.event(event, at: Self.clamp(failed, after: $0.entries.last?.time)))
            }
            throw error
        }
    }

    /// To the microsecond (as traces are written), and in time order even if two exchanges
    /// overlap (the format requires it).
    private static func clamp(_ t: Duration, after last: Duration?) -> Duration {
        let (s, atto) = t.components
        let micros = (atto + 500_000_000_000) / 1_000_000_000_000
        let rounded = Duration.seconds(s) + .microseconds(micros)
        guard let last, rounded < last else { return rounded }
        return last
    }
}
