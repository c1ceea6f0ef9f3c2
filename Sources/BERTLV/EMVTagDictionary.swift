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

    /// The entries (EMV Book 3 Annex A, Book B, Books C-2/C-3, scheme extensions), as data:
    /// `EMVTags.tsv`, compiled into the module and read once.
    static let entries: [TagInfo] = {
        var out: [TagInfo] = []
        for (n, line) in String(decoding: PackageResources.EMVTags_tsv, as: UTF8.self)
            .split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where !line.isEmpty && !line.hasPrefix("#") {
            guard let info = TagInfo(tableLine: line) else {
                preconditionFailure("EMVTags.tsv:\(n + 1) is not TAG FORMAT SOURCE LENGTH SENSITIVE NAME: \(line)")
            }
            out.append(info)
        }
        return out
    }()
}

extension TagInfo {
    /// A line of `EMVTags.tsv`: `TAG FORMAT SOURCE LENGTH SENSITIVE NAME`, tab-separated (LENGTH
    /// `N`, `MIN-MAX` or `-`; SENSITIVE `sensitive` or `-`); nil when it is not one.
    init?(tableLine line: Substring) {
        let f = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard f.count == 6, let tag = UInt32(f[0], radix: 16), let format = DataFormat(rawValue: String(f[1])),
              let source = DataSource(rawValue: String(f[2])), f[4] == "sensitive" || f[4] == "-", !f[5].isEmpty
        else { return nil }
        var length: ClosedRange<Int>?
        if f[3] != "-" {
            let bounds = f[3].split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
            guard bounds.count <= 2, let low = bounds.first ?? nil, let high = bounds.last ?? nil, low <= high else { return nil }
            length = low...high
        }
        self.init(Tag(tag), String(f[5]), format, source, length: length, sensitive: f[4] == "sensitive")
    }
}
