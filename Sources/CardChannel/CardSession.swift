public import ISO7816
public import Timing
import Synchronization

/// One exchange on the wire: a command, what came back, and when. Its description shows the
/// command header and the status word, never response data (it may hold a PAN).
public struct Exchange: Hashable, Sendable, CustomStringConvertible {
    public var command: CommandAPDU
    /// The response, or nil when the exchange failed (see ``failure``).
    public var response: ResponseAPDU?
    /// Why the exchange failed, when it did.
    public var failure: CardChannelError.Code?
    /// When the command started, since the session began.
    public var start: Duration
    /// How long the exchange took, command out to response in, on the session's clock.
    public var duration: Duration

    public init(command: CommandAPDU, response: ResponseAPDU?, failure: CardChannelError.Code? = nil,
                start: Duration, duration: Duration) {
        self.command = command
        self.response = response
        self.failure = failure
        self.start = start
        self.duration = duration
    }

    public var description: String {
        let c = command
        let header = Hex.encode([c.instructionClass, c.instructionCode, c.p1Parameter, c.p2Parameter])
        let outcome = response.map { "SW \($0.statusWord.hex), \($0.data.count) byte(s)" } ?? "failed: \(failure?.name ?? "?")"
        return "\(header)… → \(outcome) in \(micros) µs"
    }

    /// Whole microseconds of ``duration``.
    public var micros: Int64 {
        let (s, atto) = duration.components
        return s * 1_000_000 + atto / 1_000_000_000_000
    }
}

/// A card session over any ``CardChannel``: times every exchange with a monotonic clock, keeps
/// each APDU within a deadline, and handles — here and nowhere else — the two ISO 7816-4
/// response dances: `61xx` (fetch the rest with GET RESPONSE) and `6Cxx` (resend with Le = xx).
public final class CardSession: Sendable {
    /// Most GET RESPONSE rounds for one command before the card is called broken.
    public static let maxGetResponseRounds = 32

    public let channel: any CardChannel
    /// Deadline for each APDU, command out to response in.
    public let apduTimeout: Duration
    public let clock: MonotonicClock
    private let log = Mutex<[LogEntry]>([])

    /// One exchange as the log keeps it. Not an ``Exchange``: an `Exchange` built into the log
    /// in this async code was built, copied in and the original destroyed — two retains and two
    /// releases more on every exchange (counted with uprobes, issue 16); this plain internal
    /// struct is built in place.
    private struct LogEntry {
        var command: CommandAPDU
        var response: ResponseAPDU?
        var failure: CardChannelError.Code?
        var start: Duration
        var duration: Duration
    }
    /// The error of an APDU that outlives ``apduTimeout`` (made once, not per exchange).
    let timeoutError: @Sendable () -> CardChannelError

    /// - Parameters:
    ///   - apduTimeout: how long one APDU may take before `.timeout` (default 2 s; EMV contactless
    ///     cards answer in milliseconds, a PC/SC reader adds little).
    ///   - clock: where time comes from; inject a ``ManualClock`` in tests.
    public init(channel: any CardChannel, apduTimeout: Duration = .seconds(2),
                clock: MonotonicClock = .continuous) {
        self.channel = channel
        self.apduTimeout = apduTimeout
        self.clock = clock
        timeoutError = { CardChannelError(.timeout, "the card did not answer within \(apduTimeout.readable)") }
        log.withLock { $0.reserveCapacity(16) }   // a read's exchanges without growing the log
    }

    /// Every exchange on the wire so far, GET RESPONSE and resends included, in order.
    public var exchanges: [Exchange] { exchanges(from: 0) }

    /// The exchanges from the `first`-th on (those of one read on a session used for several).
    public func exchanges(from first: Int) -> [Exchange] {
        log.withLock { log in
            log.dropFirst(max(0, first)).map {
                Exchange(command: $0.command, response: $0.response, failure: $0.failure, start: $0.start, duration: $0.duration)
            }
        }
    }

    /// How many exchanges the log holds.
    public var exchangeCount: Int { log.withLock { $0.count } }

    /// The ATR of the card.
    public var atr: [UInt8] { channel.atr }

    /// Runs `body` — a sequence of exchanges, a whole read — on the channel's
    /// ``CardChannel/preferredExecutor`` (on the PC/SC channel, the thread that owns the PC/SC
    /// context: each APDU is then a direct call there). Anything else, as it is.
    public func run<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        guard let executor = channel.preferredExecutor else { return try await body() }
        return try await withTaskExecutorPreference(executor, operation: body)
    }

    /// Sends `command` and returns the complete response: 61xx chains are fetched and
    /// concatenated, a 6Cxx is answered by resending with the exact Le.
    nonisolated(nonsending) public func send(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        let response = try await exchange(command)
        guard response.sw1 == 0x61 || response.sw1 == 0x6C else { return response }
        var chain = ResponseChain(command)
        var step = try chain.next(after: response)
        while case .send(let next) = step {
            step = try chain.next(after: try await exchange(next))
        }
        guard case .done(let complete) = step else { preconditionFailure("a response chain ended without a response") }
        return complete
    }

    /// Sends `command` once and returns the card's response as it came: a 61xx or 6Cxx is not
    /// followed up (`tapemu transmit --no-auto-response` shows the card's own answers). Timed,
    /// kept within the APDU deadline and logged like ``send(_:)``.
    public func sendAsIs(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        try await exchange(command)
    }

    /// One timed exchange on the wire, within the APDU deadline, logged. The channel keeps the
    /// deadline (``CardChannel/transmit(_:deadline:on:onTimeout:)``): an in-process card that
    /// answers on the spot is not raced against it, the PC/SC channel keeps it on its thread.
    @inline(__always)   // one async frame less per APDU
    nonisolated(nonsending) private func exchange(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        let start = clock.now
        do throws(CardChannelError) {
            let response = try await channel.transmit(command, deadline: start + apduTimeout, on: clock,
                                                      onTimeout: timeoutError)
            logResponse(command, response, start: start, end: clock.now)
            return response
        } catch {
            logFailure(command, error.code, start: start, end: clock.now)
            throw error
        }
    }

    /// Logs an exchange that `response` answered.
    @inline(__always)
    func logResponse(_ command: CommandAPDU, _ response: ResponseAPDU, start: Duration, end: Duration) {
        log.withLock { $0.append(LogEntry(command: command, response: response, start: start, duration: end - start)) }
    }

    /// Logs an exchange that failed with `code`, ending at `end` (now by default).
    func logFailure(_ command: CommandAPDU, _ code: CardChannelError.Code, start: Duration, end: Duration? = nil) {
        let end = end ?? clock.now
        log.withLock { $0.append(LogEntry(command: command, response: nil, failure: code, start: start, duration: end - start)) }
    }
}
