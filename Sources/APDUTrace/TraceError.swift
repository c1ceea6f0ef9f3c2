/// An error of a trace file or a capture being imported: what is wrong, in which file, on
/// which line (or at which byte offset of a binary capture).
///
/// Tests compare ``code`` only; ``reason`` is for people. `description` reads like a compiler
/// diagnostic: `visa.apdu:12: a response without a command before it`.
public struct TraceError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. Open: new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The file could not be read (or written).
        public static let unreadable = Code("unreadable")
        /// The text is not UTF-8.
        public static let notUTF8 = Code("notUTF8")
        /// No `@format` line before the first header or exchange (or the file is empty).
        public static let missingFormat = Code("missingFormat")
        /// `@format` names a tapemu trace of a version this build does not read.
        public static let unknownFormatVersion = Code("unknownFormatVersion")
        /// `@format` names something that is not a tapemu APDU trace.
        public static let notATrace = Code("notATrace")
        /// A malformed `@key value` line (bad key, or a second `@format`).
        public static let badHeader = Code("badHeader")
        /// A header after the first exchange: headers come first.
        public static let headerAfterExchange = Code("headerAfterExchange")
        /// A line that is none of comment, header, command, response, event.
        public static let badLine = Code("badLine")
        /// A timestamp that is not `<seconds>[.<fraction>]`.
        public static let badTimestamp = Code("badTimestamp")
        /// A timestamp earlier than the line before it.
        public static let timeGoesBackwards = Code("timeGoesBackwards")
        /// Hex that is not hex (odd digit count, stray characters).
        public static let badHex = Code("badHex")
        /// A command that is not an ISO 7816-4 command APDU.
        public static let badCommand = Code("badCommand")
        /// A response shorter than SW1 SW2.
        public static let badResponse = Code("badResponse")
        /// A response with no command waiting for it.
        public static let responseWithoutCommand = Code("responseWithoutCommand")
        /// A command never answered (by a response or an event) before the next command or the end.
        public static let commandWithoutResponse = Code("commandWithoutResponse")
        /// An event name other than `card-removed`, `timeout`, `reader-removed`, `transmit-error`.
        public static let unknownEvent = Code("unknownEvent")
        /// A binary or text capture (Proxmark3, pcsc-spy) that cannot be what it claims.
        public static let badCapture = Code("badCapture")
        /// A capture that holds no APDU exchange at all.
        public static let noExchanges = Code("noExchanges")
    }

    private struct Backing: Sendable {
        var code: Code
        var reason: String
        var path: String?
        var lineNumber: Int?
        var file: String
        var line: Int
    }
    private var backing: Backing

    public var code: Code { backing.code }
    public var reason: String { backing.reason }
    /// The trace or capture file, when known.
    public var path: String? { backing.path }
    /// The 1-based line in ``path`` (text formats), when known.
    public var lineNumber: Int? { backing.lineNumber }
    public var file: String { backing.file }
    public var line: Int { backing.line }

    public init(_ code: Code, _ reason: String, path: String? = nil, lineNumber: Int? = nil,
                file: String = #fileID, line: Int = #line) {
        backing = Backing(code: code, reason: reason, path: path, lineNumber: lineNumber, file: file, line: line)
    }

    public var description: String {
        switch (path, lineNumber) {
        case let (p?, l?): return "\(p):\(l): \(reason)"
        case let (p?, nil): return "\(p): \(reason)"
        case let (nil, l?): return "line \(l): \(reason)"
        case (nil, nil): return reason
        }
    }

    /// Equal when the codes are: the reason, the place in the file and in the source are for people.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
