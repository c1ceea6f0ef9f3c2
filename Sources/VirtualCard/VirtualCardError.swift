public import CodedErrors

/// An error of the virtual card layer: a profile that cannot be read or does not make a card.
///
/// Tests compare ``code`` only; ``reason`` is for people (it never holds a full PAN).
public struct VirtualCardError: PlainCodedError {
    public typealias Code = ErrorCode<VirtualCardError>
    public let core: ErrorCore<Code>
    public init(core: ErrorCore<Code>) { self.core = core }
}

extension ErrorCode<VirtualCardError> {
    /// The profile file could not be read (missing, unreadable). Retry after fixing the path.
    public static var unreadableFile: Self { Self("unreadableFile") }
    /// The file is not JSON at all.
    public static var malformedJSON: Self { Self("malformedJSON") }
    /// JSON, but not a profile: a missing field, a wrong type, bad hex, a bad tag.
    public static var invalidProfile: Self { Self("invalidProfile") }
    /// A well-formed profile whose data contradict each other or EMV (a PDOL that does not
    /// parse, an AFL naming a missing record, a PAN that fails Luhn, a key of the wrong size, …).
    public static var inconsistentProfile: Self { Self("inconsistentProfile") }
    /// No built-in profile has that name.
    public static var unknownProfile: Self { Self("unknownProfile") }
}
