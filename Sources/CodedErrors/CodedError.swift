/// The one shape of tapemu's errors, after swift-asn1's `ASN1Error`: a ``code`` compared by
/// value, a ``reason`` for people that is never compared, and the source location where the
/// error was made (`#fileID`, `#line`), kept for diagnostics.
///
/// A conforming type holds its ``ErrorCore`` and whatever its layer adds (a byte offset, a
/// trace line, a kernel step); `==` and `hash(into:)` look at the code alone, so tests and
/// handlers compare codes, never reasons.
public protocol CodedError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong: ``ErrorCode`` for most layers, a layer's own type where the code is
    /// outside data (a PC/SC return code).
    associatedtype Code: Hashable, Sendable
    /// The code, the reason and the place, as made.
    var core: ErrorCore<Code> { get }
}

extension CodedError {
    public var code: Code { core.code }
    /// For people: never compared, never holds a full PAN, track 2 or PIN.
    public var reason: String { core.reason }
    /// The source file (`#fileID`) that made the error.
    public var file: String { core.file }
    /// The source line that made the error.
    public var line: Int { core.line }

    public var description: String { core.reason }

    /// Equal when the codes are: the reason, the place and a layer's details are for people.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// What every ``CodedError`` carries: its code, the reason, and where it was made.
public struct ErrorCore<Code: Hashable & Sendable>: Sendable {
    public let code: Code
    public let reason: String
    public let file: String
    public let line: Int

    /// Package-wide: errors are made by tapemu's modules, never by their callers.
    package init(_ code: Code, _ reason: String, file: String, line: Int) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }
}

/// A code of the error type `Owner`, named: compared by name, printed as its name.
///
/// Open: an owner's codes are its static members (`extension ErrorCode<TLVError>`), new ones
/// may be added, so switch with a `default`. Callers outside tapemu cannot invent one; a module
/// of tapemu may add codes to another's error (the trace library's replay codes of
/// `CardChannelError`).
public struct ErrorCode<Owner>: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    package init(_ name: String) { self.name = name }
    public var description: String { name }
}

/// A ``CodedError`` that carries nothing but its core (no byte offset, no trace line): made as
/// `StorageError(.busy, "the ledger is locked")`, the place filled in. Its type says only
/// `public let core: ErrorCore<ErrorCode<Self>>` and `public init(core:)`.
public protocol PlainCodedError: CodedError where Code == ErrorCode<Self> {
    init(core: ErrorCore<Code>)
}

extension PlainCodedError {
    /// The error `code`, for `reason`, made here.
    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.init(core: ErrorCore(code, reason, file: file, line: line))
    }
}
