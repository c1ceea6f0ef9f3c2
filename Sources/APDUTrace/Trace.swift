import BERTLV
public import PaymentRules
public import CardChannel
public import ISO7816

/// A recorded card session in the `tapemu-apdu-trace/1` format (DESIGN.md): headers, then
/// timed commands, responses and events.
///
/// ```
/// @format tapemu-apdu-trace/1
/// @reader Virtual PCD 00 00
/// 0.000000 > 00A404000E325041592E5359532E444446303100
/// 0.007731 < 6F2F…9000
/// 0.020110 ! card-removed
/// ```
/// Parse with ``init(parsing:path:)``, write with ``text``; the two round-trip.
public struct APDUTrace: Hashable, Sendable {
    /// The value of the `@format` header this build reads and writes.
    public static let format = "tapemu-apdu-trace/1"

    /// The times a trace file holds: at most 10 digits of seconds, 9 decimals.
    public static let timeRange: ClosedRange<Duration> = .zero ... .seconds(9_999_999_999) + .nanoseconds(999_999_999)

    /// One `@key value` header.
    public struct Header: Hashable, Sendable {
        public var key: String
        public var value: String
        /// A header whose value is kept as a file holds it — on one line (line breaks become
        /// spaces), without spaces or tabs at either end — so it reads back as it was written.
        public init(_ key: String, _ value: String) {
            self.key = key
            self.value = APDUTrace.singleLine(value)
        }
    }

    /// `s` as one line of a trace file holds it: each line break (LF, CR, CRLF) a space, and no
    /// spaces or tabs at either end (reading a line drops them). Header values and event details
    /// are kept this way.
    static func singleLine(_ s: String) -> String {
        var t = Substring(breaksAsSpaces(s))
        while let f = t.first, f == " " || f == "\t" { t = t.dropFirst() }
        while let l = t.last, l == " " || l == "\t" { t = t.dropLast() }
        return String(t)
    }

    /// `s` with each line break (LF, CR, CRLF) a space.
    static func breaksAsSpaces(_ s: String) -> String {
        String(s.map { $0 == "\n" || $0 == "\r" || $0 == "\r\n" ? " " : $0 })
    }

    /// One timed line of the trace.
    public struct Entry: Hashable, Sendable {
        public enum Kind: Hashable, Sendable {
            /// A command APDU, as the reader sent it (raw bytes: a valid command APDU).
            case command([UInt8])
            /// The card's response, data + SW1 SW2.
            case response(ResponseAPDU)
            /// Something that happened instead of (or between) exchanges.
            case event(TraceEvent)
        }

        /// Time since connect.
        public var time: Duration
        public var kind: Kind
        /// The line of the file this entry came from, when parsed (not part of equality).
        public var sourceLine: Int?

        /// An entry at `time`, kept within what a trace file holds (``APDUTrace/timeRange``).
        public init(time: Duration, kind: Kind, sourceLine: Int? = nil) {
            self.time = min(max(time, APDUTrace.timeRange.lowerBound), APDUTrace.timeRange.upperBound)
            self.kind = kind
            self.sourceLine = sourceLine
        }

        public static func command(_ command: CommandAPDU, at time: Duration) -> Entry {
            Entry(time: time, kind: .command(command.bytes))
        }
        public static func response(_ response: ResponseAPDU, at time: Duration) -> Entry {
            Entry(time: time, kind: .response(response))
        }
        public static func event(_ event: TraceEvent, at time: Duration) -> Entry {
            Entry(time: time, kind: .event(event))
        }

        public static func == (a: Entry, b: Entry) -> Bool { a.time == b.time && a.kind == b.kind }
        public func hash(into hasher: inout Hasher) { hasher.combine(time); hasher.combine(kind) }
    }

    /// Comment lines written before `@format` (without the leading `# `).
    public var comments: [String]
    /// Every header except `@format`, in file order; unknown keys are kept.
    public var headers: [Header]
    public var entries: [Entry]

    public init(comments: [String] = [], headers: [Header] = [], entries: [Entry] = []) {
        self.comments = comments
        self.headers = headers
        self.entries = entries
    }

    // MARK: Headers

    /// The value of the first header named `key`.
    public subscript(header key: String) -> String? {
        get { headers.first { $0.key == key }?.value }
        set {
            if let i = headers.firstIndex(where: { $0.key == key }) {
                if let newValue { headers[i] = Header(key, newValue) } else { headers.remove(at: i) }
            } else if let newValue {
                headers.append(Header(key, newValue))
            }
        }
    }

    public var title: String? {
        get { self[header: "title"] }
        set { self[header: "title"] = newValue }
    }
    public var reader: String? {
        get { self[header: "reader"] }
        set { self[header: "reader"] = newValue }
    }
    /// `@recorded`: when the session was recorded (ISO 8601, UTC).
    public var recorded: String? {
        get { self[header: "recorded"] }
        set { self[header: "recorded"] = newValue }
    }
    /// `@atr` as bytes (empty when absent or not hex).
    public var atr: [UInt8] {
        get { self[header: "atr"].flatMap { try? Hex.decode($0) } ?? [] }
        set { self[header: "atr"] = newValue.isEmpty ? nil : Hex.encode(newValue) }
    }
    /// `@redacted yes`: PAN, track 2 and cardholder name were replaced by test values.
    public var isRedacted: Bool {
        get { self[header: "redacted"]?.lowercased() == "yes" }
        set { self[header: "redacted"] = newValue ? "yes" : nil }
    }

    // MARK: Exchanges

    /// The commands with what answered each, in order: the unit replay matches on.
    public var exchanges: [TraceExchange] {
        var out: [TraceExchange] = []
        var pending: (bytes: [UInt8], time: Duration, line: Int?)?
        for e in entries {
            switch e.kind {
            case .command(let bytes):
                if let p = pending {
                    out.append(TraceExchange(number: out.count + 1, command: p.bytes, commandTime: p.time,
                                             reply: nil, replyTime: nil, line: p.line))
                }
                pending = (bytes, e.time, e.sourceLine)
            case .response(let r):
                if let p = pending {
                    out.append(TraceExchange(number: out.count + 1, command: p.bytes, commandTime: p.time,
                                             reply: .response(r), replyTime: e.time, line: p.line))
                    pending = nil
                }
            case .event(let ev):
                if let p = pending {
                    out.append(TraceExchange(number: out.count + 1, command: p.bytes, commandTime: p.time,
                                             reply: .event(ev), replyTime: e.time, line: p.line))
                    pending = nil
                }
            }
        }
        if let p = pending {
            out.append(TraceExchange(number: out.count + 1, command: p.bytes, commandTime: p.time,
                                     reply: nil, replyTime: nil, line: p.line))
        }
        return out
    }
}

/// One command of a trace and what answered it.
public struct TraceExchange: Hashable, Sendable {
    public enum Reply: Hashable, Sendable {
        case response(ResponseAPDU)
        case event(TraceEvent)
    }
    /// 1-based position among the trace's commands.
    public var number: Int
    public var command: [UInt8]
    public var commandTime: Duration
    /// Nil only for a command at the end of a trace being built.
    public var reply: Reply?
    public var replyTime: Duration?
    /// Line of the command in its file, when parsed.
    public var line: Int?

    /// The command as an APDU (nil only if the bytes are not one).
    public var commandAPDU: CommandAPDU? { try? CommandAPDU(bytes: command) }
    /// How long the card took, command to reply.
    public var cardTime: Duration? { replyTime.map { $0 - commandTime } }
}

/// Something a trace records instead of an answer: a tear, a timeout, a lost reader, a
/// transport failure.
public struct TraceEvent: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        case cardRemoved = "card-removed"
        case timeout = "timeout"
        case readerRemoved = "reader-removed"
        case transmitError = "transmit-error"
    }

    public var kind: Kind
    /// For `transmit-error`, the PC/SC code name (`SCARD_E_NOT_TRANSACTED`) or a channel error
    /// code name; free text otherwise. Never empty when present.
    public var detail: String?

    /// An event; its detail is kept on one line, as a trace file holds it (see ``APDUTrace/Header``).
    /// A `transmit-error` always names its error (a file must): `UNKNOWN` when none is given.
    public init(_ kind: Kind, detail: String? = nil) {
        self.kind = kind
        let detail = detail.map(APDUTrace.singleLine).flatMap { $0.isEmpty ? nil : $0 }
        self.detail = kind == .transmitError ? detail ?? Self.unknownError : detail
    }

    /// The name of a transport error nobody named.
    static let unknownError = "UNKNOWN"


    public static let cardRemoved = TraceEvent(.cardRemoved)
    public static let timeout = TraceEvent(.timeout)
    public static let readerRemoved = TraceEvent(.readerRemoved)
    public static func transmitError(_ name: String) -> TraceEvent { TraceEvent(.transmitError, detail: name) }

    /// The text after `!` in a trace line.
    public var description: String {
        if let detail { return "\(kind.rawValue) \(detail)" }
        return kind.rawValue
    }

    /// The event a channel failure is recorded as.
    ///
    /// A cancellation seen by a channel under a ``CardSession`` is the session's per-APDU
    /// deadline expiring (the session turns it into `.timeout`), so it is recorded as `timeout`.
    public init(recording error: CardChannelError) {
        switch error.code {
        case .cardRemoved: self.init(.cardRemoved)
        case .readerRemoved: self.init(.readerRemoved)
        case .timeout, .cancelled: self.init(.timeout)
        case .transmitFailed: self.init(.transmitError, detail: error.detail.map(Self.token) ?? "transmitFailed")
        default: self.init(.transmitError, detail: error.code.name)
        }
    }

    /// The error replay throws for this event. `transmit-error SCARD_…` (or any unknown name) is
    /// `.transmitFailed` with the name in `detail`; a channel error code name (e.g.
    /// `malformedResponse`) comes back as that code.
    public func channelError(line: Int?) -> CardChannelError {
        let at = line.map { " (trace line \($0))" } ?? ""
        // The detail is the trace's text, whoever wrote it; the error is shown and logged by
        // every command that replays the trace: a card number in it is masked by the one policy.
        let detail = detail.map(SensitiveData.maskedText)
        switch kind {
        case .cardRemoved:
            return CardChannelError(.cardRemoved, "the card was removed from the field\(at)", detail: detail)
        case .timeout:
            return CardChannelError(.timeout, "the card did not answer\(at)", detail: detail)
        case .readerRemoved:
            return CardChannelError(.readerRemoved, "the reader went away\(at)", detail: detail)
        case .transmitError:
            let name = detail ?? Self.unknownError
            if let code = Self.channelCodes.first(where: { $0.name == name }) {
                return CardChannelError(code, "the exchange failed: \(name)\(at)")
            }
            return CardChannelError(.transmitFailed, "the transport failed the exchange\(at)", detail: name)
        }
    }

    private static let channelCodes: [CardChannelError.Code] = [
        .malformedResponse, .responseChainingFailed, .notAPaymentCard, .noCard, .noReader,
        .noService, .sharingViolation, .closed, .transmitFailed,
    ]

    /// A detail as one token (no spaces), so the line stays `! transmit-error NAME`.
    private static func token(_ s: String) -> String {
        let t = s.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).first.map(String.init)
        return t ?? "transmitFailed"
    }
}
