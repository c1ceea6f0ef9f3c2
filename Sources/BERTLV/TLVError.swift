/// An error of the BER-TLV layer: bytes that are not the TLV they claim to be.
///
/// Carries the byte offset where the problem was found. Tests compare ``code`` only.
public struct TLVError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. Open: new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The input ended inside a tag.
        public static let truncatedTag = Code("truncatedTag")
        /// The input ended inside a length field.
        public static let truncatedLength = Code("truncatedLength")
        /// The length announces more value bytes than the input holds.
        public static let truncatedValue = Code("truncatedValue")
        /// A tag longer than the rules allow.
        public static let tagTooLong = Code("tagTooLong")
        /// Indefinite length (`80`) or a length of more bytes than the rules allow.
        public static let unsupportedLength = Code("unsupportedLength")
        /// A length or tag not in its shortest form, under strict rules.
        public static let nonMinimalEncoding = Code("nonMinimalEncoding")
        /// Constructed objects nested deeper than the rules allow.
        public static let tooDeep = Code("tooDeep")
        /// More objects than the rules allow.
        public static let tooManyObjects = Code("tooManyObjects")
        /// Bytes left over after the object(s) that were asked for.
        public static let trailingBytes = Code("trailingBytes")
        /// `00` padding where the rules forbid it.
        public static let padding = Code("padding")
        /// A tag that is not allowed here (e.g. a data object list that names a zero tag).
        public static let invalidTag = Code("invalidTag")
        /// A mandatory object is missing.
        public static let missingObject = Code("missingObject")
        /// A value that does not fit its format (e.g. bad BCD digits).
        public static let badValue = Code("badValue")
    }

    private struct Backing: Sendable {
        var code: Code
        var reason: String
        var offset: Int?
        var file: String
        var line: Int
    }
    private var backing: Backing

    public var code: Code { backing.code }
    public var reason: String { backing.reason }
    /// Offset in the input where the problem was found, when known.
    public var offset: Int? { backing.offset }
    public var file: String { backing.file }
    public var line: Int { backing.line }

    public init(_ code: Code, _ reason: String, offset: Int? = nil, file: String = #fileID, line: Int = #line) {
        backing = Backing(code: code, reason: reason, offset: offset, file: file, line: line)
    }

    /// Whether the input simply ended too early: more bytes could make it valid (a streaming
    /// reader waits for them; any other code means the bytes already read are wrong).
    public var isTruncation: Bool {
        code == .truncatedTag || code == .truncatedLength || code == .truncatedValue || code == .missingObject
    }

    public var description: String {
        if let offset { return "\(reason) (at byte offset \(offset))" }
        return reason
    }

    /// Equal when the codes are: the reason, the offset and the place are for people.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
