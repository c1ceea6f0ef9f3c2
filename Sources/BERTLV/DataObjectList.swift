/// A data object list (PDOL, CDOL1, CDOL2, DDOL, …): tags and lengths the card asks the
/// terminal to send, concatenated without tags (EMV Book 3 §5.4).
public struct DataObjectList: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
        public var tag: Tag
        public var length: Int
        public init(tag: Tag, length: Int) { self.tag = tag; self.length = length }
    }

    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    /// Parses a DOL: tag, then a one-byte length (0 to 255, EMV Book 3 §5.4: not a BER length
    /// field, so `DF01FF` asks for 255 bytes of DF01), repeated.
    public init(bytes: some Collection<UInt8>) throws(TLVError) {
        try self.init(parsing: bytes)
    }

    /// ``init(bytes:)`` for an array (specialised here, not called generically from other modules).
    public init(bytes: [UInt8]) throws(TLVError) {
        try self.init(parsing: bytes)
    }

    /// ``init(bytes:)`` for part of an array, as a TLV's value is.
    public init(bytes: ArraySlice<UInt8>) throws(TLVError) {
        try self.init(parsing: bytes)
    }

    private init<C: Collection<UInt8>>(parsing bytes: C) throws(TLVError) {
        let b = ArraySlice(Array(bytes))
        var i = b.startIndex
        var out: [Entry] = []
        out.reserveCapacity(b.count / 2)   // an entry is 2 bytes at least
        while i < b.endIndex {
            if b[i] == 0x00 {
                throw TLVError(.invalidTag, "a data object list names tag 00", offset: i)
            }
            let (tag, afterTag) = try BERTLV.readTag(b, at: i)
            guard afterTag < b.endIndex else {
                throw TLVError(.truncatedLength, "data object list ends after tag \(tag.hex) without a length",
                               offset: afterTag)
            }
            // A DOL entry's length is one byte (EMV Book 3 §5.4), so at most 255: a card cannot
            // make the terminal build more.
            let length = Int(b[afterTag])
            let next = afterTag + 1
            out.append(Entry(tag: tag, length: length))
            i = next
        }
        self.entries = out
    }

    /// Total length of the data this DOL asks for.
    public var dataLength: Int { entries.reduce(0) { $0 + $1.length } }

    /// Whether the DOL asks for `tag`.
    public func contains(_ tag: Tag) -> Bool { entries.contains { $0.tag == tag } }

    /// The encoding of the list itself.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        for e in entries {
            out += e.tag.bytes
            out.append(UInt8(clamping: e.length))
        }
        return out
    }

    /// Builds the data for this DOL, taking each value from `source` (nil: unknown, zeros) and
    /// fitting it to the requested length by the rules of its format (EMV Book 3 §5.4):
    /// numeric (n) is cut or padded on the left with zeros; compressed numeric (cn) is padded on
    /// the right with `F`; everything else is cut or padded on the right with zeros. Constructed
    /// tags are filled with zeros.
    public func build(format: (Tag) -> DataFormat = EMVTagDictionary.format(of:),
                      _ source: (Tag) -> [UInt8]?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(dataLength)
        for e in entries {
            guard !e.tag.isConstructed, let value = source(e.tag) else {
                out.append(contentsOf: repeatElement(0, count: e.length))
                continue
            }
            if value.count == e.length {
                out.append(contentsOf: value)   // fits as it is, whatever the format
            } else {
                out.append(contentsOf: Self.fit(value, to: e.length, format: format(e.tag)))
            }
        }
        return out
    }

    /// One value fitted to `length` by its format.
    public static func fit(_ value: [UInt8], to length: Int, format: DataFormat) -> [UInt8] {
        if value.count == length { return value }
        switch format {
        case .n:
            if value.count > length { return Array(value.suffix(length)) }
            return Array(repeating: 0, count: length - value.count) + value
        case .cn:
            if value.count > length { return Array(value.prefix(length)) }
            return value + Array(repeating: 0xFF, count: length - value.count)
        case .a, .an, .ans, .b, .template, .variable:
            if value.count > length { return Array(value.prefix(length)) }
            return value + Array(repeating: 0, count: length - value.count)
        }
    }

    /// Splits DOL data back into the values for each entry (as a card does), or nil when the
    /// data's length differs from ``dataLength``.
    public func split(_ data: some Collection<UInt8>) -> [Tag: [UInt8]]? {
        values(of: data)
    }

    /// ``split(_:)`` for an array (specialised here, not called generically from other modules).
    public func split(_ data: [UInt8]) -> [Tag: [UInt8]]? { values(of: data) }

    /// ``split(_:)`` for an array slice.
    public func split(_ data: ArraySlice<UInt8>) -> [Tag: [UInt8]]? { values(of: data) }

    private func values<C: Collection<UInt8>>(of data: C) -> [Tag: [UInt8]]? {
        guard data.count == dataLength else { return nil }
        let d = Array(data)
        var out: [Tag: [UInt8]] = [:]
        out.reserveCapacity(entries.count)
        var i = 0
        for e in entries {
            out[e.tag] = Array(d[i..<(i + e.length)])
            i += e.length
        }
        return out
    }
}
