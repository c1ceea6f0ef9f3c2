import ISO7816

/// An error of a card channel: the card, the reader or the transport failed an exchange.
///
/// Every backend (PC/SC, trace replay, virtual card, recorder) throws this type, so the kernel
/// and the payment flow treat them alike. Tests compare ``code`` only.
public struct CardChannelError: Error, Sendable, CustomStringConvertible {
    /// What went wrong. Open: new codes may be added; unknown backends' codes are kept.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        /// Package-wide: a backend module of tapemu names its own codes (the trace library's
        /// replay codes live in `APDUTrace`); callers outside cannot make codes up.
        package init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The card left the field (a tear), before or during an exchange.
        public static let cardRemoved = Code("cardRemoved")
        /// The reader itself went away (unplugged, driver gone).
        public static let readerRemoved = Code("readerRemoved")
        /// No card was presented within the presentation timeout.
        public static let noCard = Code("noCard")
        /// The card did not answer one APDU within the per-APDU timeout.
        public static let timeout = Code("timeout")
        /// The caller's task was cancelled while waiting.
        public static let cancelled = Code("cancelled")
        /// The transport reported a failure of the exchange (PC/SC code in ``detail``).
        public static let transmitFailed = Code("transmitFailed")
        /// The response was not a response APDU (e.g. shorter than SW1 SW2).
        public static let malformedResponse = Code("malformedResponse")
        /// The GET RESPONSE / resend-with-Le dance did not converge.
        public static let responseChainingFailed = Code("responseChainingFailed")
        /// The PC/SC service (pcscd) is not running.
        public static let noService = Code("noService")
        /// No reader matched, or the reader is unavailable.
        public static let noReader = Code("noReader")
        /// Another program holds the card exclusively.
        public static let sharingViolation = Code("sharingViolation")
        /// The card in the field is not an ISO 14443-4 payment card (e.g. a MIFARE tag).
        public static let notAPaymentCard = Code("notAPaymentCard")
        /// The channel was used after it was closed.
        public static let closed = Code("closed")
    }

    private struct Backing: Sendable {
        var code: Code
        var reason: String
        var detail: String?
        var hint: String?
        var file: String
        var line: Int
    }
    private var backing: Backing

    public var code: Code { backing.code }
    public var reason: String { backing.reason }
    /// Backend-specific detail (a PC/SC constant name, a trace line, …), when any.
    public var detail: String? { backing.detail }
    /// How to get out of it, when there is something to say (e.g. how to start pcscd).
    public var hint: String? { backing.hint }
    public var file: String { backing.file }
    public var line: Int { backing.line }

    public init(_ code: Code, _ reason: String, detail: String? = nil, hint: String? = nil,
                file: String = #fileID, line: Int = #line) {
        backing = Backing(code: code, reason: reason, detail: detail, hint: hint, file: file, line: line)
    }

    public var description: String {
        var s = reason
        if let detail { s += " [\(detail)]" }
        if let hint { s += " — \(hint)" }
        return s
    }
}

extension CardChannelError: Hashable {
    /// Equal when the codes are: the reason, detail and place are for people.
    public static func == (a: CardChannelError, b: CardChannelError) -> Bool { a.code == b.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
