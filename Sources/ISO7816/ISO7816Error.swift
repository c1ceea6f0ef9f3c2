public import CodedErrors

/// An error of the ISO 7816-4 layer: a command or response APDU that cannot be what it claims.
///
/// Tests compare ``code`` only; ``reason`` is for people.
public struct ISO7816Error: PlainCodedError {
    public typealias Code = ErrorCode<ISO7816Error>
    public let core: ErrorCore<Code>
    public init(core: ErrorCore<Code>) { self.core = core }
}

extension ErrorCode<ISO7816Error> {
    /// Fewer than the 4 header bytes CLA INS P1 P2.
    public static var tooShort: Self { Self("tooShort") }
    /// Lc says one length, the bytes hold another.
    public static var lengthMismatch: Self { Self("lengthMismatch") }
    /// An extended-length field that is malformed (e.g. extended Lc with a short Le).
    public static var badExtendedLength: Self { Self("badExtendedLength") }
    /// Lc of zero in a form that forbids it, or a length out of range.
    public static var badLength: Self { Self("badLength") }
    /// A response shorter than the two status bytes.
    public static var missingStatusWord: Self { Self("missingStatusWord") }
    /// Hex text that is not hex.
    public static var badHex: Self { Self("badHex") }
}
