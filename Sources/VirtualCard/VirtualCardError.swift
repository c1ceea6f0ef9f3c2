/// An error of the virtual card layer: a profile that cannot be read or does not make a card.
///
/// Tests compare ``code`` only; ``reason`` is for people (it never holds a full PAN).
public struct VirtualCardError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. Open: new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The profile file could not be read (missing, unreadable). Retry after fixing the path.
        public static let unreadableFile = Code("unreadableFile")
        /// The file is not JSON at all.
        public static let malformedJSON = Code("malformedJSON")
        /// JSON, but not a profile: a missing field, a wrong type, bad hex, a bad tag.
        public static let invalidProfile = Code("invalidProfile")
        /// A well-formed profile whose data contradict each other or EMV (a PDOL that does not
        /// parse, an AFL naming a missing record, a PAN that fails Luhn, a key of the wrong size, …).
        public static let inconsistentProfile = Code("inconsistentProfile")
        /// No built-in profile has that name.
        public static let unknownProfile = Code("unknownProfile")
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
