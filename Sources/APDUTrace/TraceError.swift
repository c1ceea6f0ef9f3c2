public import CodedErrors

/// An error of a trace file or a capture being imported: what is wrong, in which file, on
/// which line (or at which byte offset of a binary capture).
///
/// Tests compare ``code`` only; ``reason`` is for people. `description` reads like a compiler
/// diagnostic: `visa.apdu:12: a response without a command before it`.
public struct TraceError: CodedError {
    public typealias Code = ErrorCode<TraceError>
    public let core: ErrorCore<Code>
    /// The trace or capture file, when known.
    public let path: String?
    /// The 1-based line in ``path`` (text formats), when known.
    public let lineNumber: Int?

    public init(_ code: Code, _ reason: String, path: String? = nil, lineNumber: Int? = nil,
                file: String = #fileID, line: Int = #line) {
        core = ErrorCore(code, reason, file: file, line: line)
        self.path = path
        self.lineNumber = lineNumber
    }

    public var description: String {
        switch (path, lineNumber) {
        case let (p?, l?): return "\(p):\(l): \(reason)"
        case let (p?, nil): return "\(p): \(reason)"
        case let (nil, l?): return "line \(l): \(reason)"
        case (nil, nil): return reason
        }
    }
}

extension ErrorCode<TraceError> {
    /// The file could not be read (or written).
    public static var unreadable: Self { Self("unreadable") }
    /// The text is not UTF-8.
    public static var notUTF8: Self { Self("notUTF8") }
    /// No `@format` line before the first header or exchange (or the file is empty).
    public static var missingFormat: Self { Self("missingFormat") }
    /// `@format` names a tapemu trace of a version this build does not read.
    public static var unknownFormatVersion: Self { Self("unknownFormatVersion") }
    /// `@format` names something that is not a tapemu APDU trace.
    public static var notATrace: Self { Self("notATrace") }
    /// A malformed `@key value` line (bad key, or a second `@format`).
    public static var badHeader: Self { Self("badHeader") }
    /// A header after the first exchange: headers come first.
    public static var headerAfterExchange: Self { Self("headerAfterExchange") }
    /// A line that is none of comment, header, command, response, event.
    public static var badLine: Self { Self("badLine") }
    /// A timestamp that is not `<seconds>[.<fraction>]`.
    public static var badTimestamp: Self { Self("badTimestamp") }
    /// A timestamp earlier than the line before it.
    public static var timeGoesBackwards: Self { Self("timeGoesBackwards") }
    /// Hex that is not hex (odd digit count, stray characters).
    public static var badHex: Self { Self("badHex") }
    /// A command that is not an ISO 7816-4 command APDU.
    public static var badCommand: Self { Self("badCommand") }
    /// A response shorter than SW1 SW2.
    public static var badResponse: Self { Self("badResponse") }
    /// A response with no command waiting for it.
    public static var responseWithoutCommand: Self { Self("responseWithoutCommand") }
    /// A command never answered (by a response or an event) before the next command or the end.
    public static var commandWithoutResponse: Self { Self("commandWithoutResponse") }
    /// An event name other than `card-removed`, `timeout`, `reader-removed`, `transmit-error`.
    public static var unknownEvent: Self { Self("unknownEvent") }
    /// A binary or text capture (Proxmark3, pcsc-spy) that cannot be what it claims.
    public static var badCapture: Self { Self("badCapture") }
    /// A capture that holds no APDU exchange at all.
    public static var noExchanges: Self { Self("noExchanges") }
}
