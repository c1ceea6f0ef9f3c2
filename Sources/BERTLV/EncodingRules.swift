/// How strictly BER-TLV is read: strictness is data, not scattered `if strict`.
public struct EncodingRules: Hashable, Sendable {
    /// Skip `00` bytes before, between and after objects (EMV Book 3 Annex B).
    public var allowsPadding: Bool
    /// Accept lengths and tags not in their shortest form (`81 05`, `82 00 05`).
    public var allowsNonMinimalEncoding: Bool
    /// Deepest nesting of constructed objects accepted (top level is depth 1).
    public var maxDepth: Int
    /// Most bytes a length field may have after its `8x` byte (values above 4 act as 4).
    public var maxLengthBytes: Int
    /// Most bytes a tag may have (values above 4 act as 4: ``Tag`` holds 4 bytes).
    public var maxTagBytes: Int
    /// Most objects in one parse, children included.
    public var maxObjects: Int

    public init(allowsPadding: Bool, allowsNonMinimalEncoding: Bool, maxDepth: Int = 16,
                maxLengthBytes: Int = 3, maxTagBytes: Int = 4, maxObjects: Int = 10_000) {
        self.allowsPadding = allowsPadding
        self.allowsNonMinimalEncoding = allowsNonMinimalEncoding
        self.maxDepth = maxDepth
        self.maxLengthBytes = maxLengthBytes
        self.maxTagBytes = maxTagBytes
        self.maxObjects = maxObjects
    }

    /// What cards send: `00` padding allowed, non-minimal lengths tolerated.
    public static let emv = EncodingRules(allowsPadding: true, allowsNonMinimalEncoding: true)
    /// DER-like: no padding, shortest lengths and tags only.
    public static let strict = EncodingRules(allowsPadding: false, allowsNonMinimalEncoding: false)
}
