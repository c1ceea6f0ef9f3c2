public import CodedErrors

/// An error of the BER-TLV layer: bytes that are not the TLV they claim to be.
///
/// Carries the byte offset where the problem was found. Tests compare ``code`` only.
public struct TLVError: CodedError {
    public typealias Code = ErrorCode<TLVError>
    public let core: ErrorCore<Code>
    /// Offset in the input where the problem was found, when known.
    public let offset: Int?

    public init(_ code: Code, _ reason: String, offset: Int? = nil, file: String = #fileID, line: Int = #line) {
        core = ErrorCore(code, reason, file: file, line: line)
        self.offset = offset
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
}

extension ErrorCode<TLVError> {
    /// The input ended inside a tag.
    public static var truncatedTag: Self { Self("truncatedTag") }
    /// The input ended inside a length field.
    public static var truncatedLength: Self { Self("truncatedLength") }
    /// The length announces more value bytes than the input holds.
    public static var truncatedValue: Self { Self("truncatedValue") }
    /// A tag longer than the rules allow.
    public static var tagTooLong: Self { Self("tagTooLong") }
    /// Indefinite length (`80`) or a length of more bytes than the rules allow.
    public static var unsupportedLength: Self { Self("unsupportedLength") }
    /// A length or tag not in its shortest form, under strict rules.
    public static var nonMinimalEncoding: Self { Self("nonMinimalEncoding") }
    /// Constructed objects nested deeper than the rules allow.
    public static var tooDeep: Self { Self("tooDeep") }
    /// More objects than the rules allow.
    public static var tooManyObjects: Self { Self("tooManyObjects") }
    /// Bytes left over after the object(s) that were asked for.
    public static var trailingBytes: Self { Self("trailingBytes") }
    /// `00` padding where the rules forbid it.
    public static var padding: Self { Self("padding") }
    /// A tag that is not allowed here (e.g. a data object list that names a zero tag).
    public static var invalidTag: Self { Self("invalidTag") }
    /// A mandatory object is missing.
    public static var missingObject: Self { Self("missingObject") }
    /// A value that does not fit its format (e.g. bad BCD digits).
    public static var badValue: Self { Self("badValue") }
}
