public import CodedErrors
import ISO7816

/// An error of a card channel: the card, the reader or the transport failed an exchange.
///
/// Every backend (PC/SC, trace replay, virtual card, recorder) throws this type, so the kernel
/// and the payment flow treat them alike. Tests compare ``code`` only.
///
/// Its codes are open: unknown backends' codes are kept, and a backend module of tapemu names
/// its own (the trace library's replay codes live in `APDUTrace`).
public struct CardChannelError: CodedError {
    public typealias Code = ErrorCode<CardChannelError>
    public let core: ErrorCore<Code>
    /// Backend-specific detail (a PC/SC constant name, a trace line, …), when any.
    public let detail: String?
    /// How to get out of it, when there is something to say (e.g. how to start pcscd).
    public let hint: String?

    public init(_ code: Code, _ reason: String, detail: String? = nil, hint: String? = nil,
                file: String = #fileID, line: Int = #line) {
        core = ErrorCore(code, reason, file: file, line: line)
        self.detail = detail
        self.hint = hint
    }

    public var description: String {
        var s = reason
        if let detail { s += " [\(detail)]" }
        if let hint { s += " — \(hint)" }
        return s
    }
}

extension ErrorCode<CardChannelError> {
    /// The card left the field (a tear), before or during an exchange.
    public static var cardRemoved: Self { Self("cardRemoved") }
    /// The reader itself went away (unplugged, driver gone).
    public static var readerRemoved: Self { Self("readerRemoved") }
    /// No card was presented within the presentation timeout.
    public static var noCard: Self { Self("noCard") }
    /// The card did not answer one APDU within the per-APDU timeout.
    public static var timeout: Self { Self("timeout") }
    /// The caller's task was cancelled while waiting.
    public static var cancelled: Self { Self("cancelled") }
    /// The transport reported a failure of the exchange (PC/SC code in ``detail``).
    public static var transmitFailed: Self { Self("transmitFailed") }
    /// The response was not a response APDU (e.g. shorter than SW1 SW2).
    public static var malformedResponse: Self { Self("malformedResponse") }
    /// The GET RESPONSE / resend-with-Le dance did not converge.
    public static var responseChainingFailed: Self { Self("responseChainingFailed") }
    /// The PC/SC service (pcscd) is not running.
    public static var noService: Self { Self("noService") }
    /// No reader matched, or the reader is unavailable.
    public static var noReader: Self { Self("noReader") }
    /// Another program holds the card exclusively.
    public static var sharingViolation: Self { Self("sharingViolation") }
    /// The card in the field is not an ISO 14443-4 payment card (e.g. a MIFARE tag).
    public static var notAPaymentCard: Self { Self("notAPaymentCard") }
    /// The channel was used after it was closed.
    public static var closed: Self { Self("closed") }
}
