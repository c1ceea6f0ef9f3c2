/// An error of the ISO 7816-4 layer: a command or response APDU that cannot be what it claims.
///
/// Tests compare ``code`` only; ``reason`` is for people.
public struct ISO7816Error: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. Open: new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Fewer than the 4 header bytes CLA INS P1 P2.
        public static let tooShort = Code("tooShort")
        /// Lc says one length, the bytes hold another.
        public static let lengthMismatch = Code("lengthMismatch")
        /// An extended-length field that is malformed (e.g. extended Lc with a short Le).
        public static let badExtendedLength = Code("badExtendedLength")
        /// Lc of zero in a form that forbids it, or a length out of range.
        public static let badLength = Code("badLength")
        /// A response shorter than the two status bytes.
        public static let missingStatusWord = Code("missingStatusWord")
        /// Hex text that is not hex.
        public static let badHex = Code("badHex")
    }

    private struct Backing: Sendable {
        var code: Code
        var reason: String
        var file: String
        var line: Int
    }
    private var backing: Backing

    public var code: Code { backing.code }
    public var reason: String { backing.reason }
    public var file: String { backing.file }
    public var line: Int { backing.line }

    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        backing = Backing(code: code, reason: reason, file: file, line: line)
    }

    public var description: String { reason }

    /// Equal when the codes are: the reason and the place are for people.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
