/// What the EMV specifications say about one data object.
public struct TagInfo: Hashable, Sendable {
    public var tag: Tag
    public var name: String
    public var format: DataFormat
    public var source: DataSource
    /// Allowed value lengths in bytes, when the spec fixes them.
    public var length: ClosedRange<Int>?
    /// Whether the value holds a PAN, track data or PIN data: never printed in full.
    public var isSensitive: Bool

    public init(_ tag: Tag, _ name: String, _ format: DataFormat, _ source: DataSource,
                length: ClosedRange<Int>? = nil, sensitive: Bool = false) {
        self.tag = tag
        self.name = name
        self.format = format
        self.source = source
        self.length = length
        self.isSensitive = sensitive
    }
}

/// The EMV tag dictionary: every data object of EMV Book 3 Annex A plus the contactless ones.
public enum EMVTagDictionary {
    /// What is known of `tag`, or nil.
    public static func info(_ tag: Tag) -> TagInfo? { table[tag] }

    /// Every known tag, in tag order.
    public static var all: [TagInfo] { table.values.sorted { $0.tag < $1.tag } }

    /// The format of `tag`, or `.b` when unknown (DOL padding then uses zeros on the right).
    public static func format(of tag: Tag) -> DataFormat { table[tag]?.format ?? .b }

    static let table: [Tag: TagInfo] = {
        var t: [Tag: TagInfo] = [:]
        for info in entries { t[info.tag] = info }
        return t
    }()
}
