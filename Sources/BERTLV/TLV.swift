/// One BER-TLV data object: a tag and its value, with the children of a constructed object.
///
/// Parsed values are slices of the input: parsing copies no value bytes.
public struct TLV: Hashable, Sendable {
    public var tag: Tag
    /// The value bytes (for a constructed object, the encoded children).
    public var value: ArraySlice<UInt8>
    /// The children of a constructed object, in order; empty for a primitive one.
    public var children: [TLV]

    /// A primitive object.
    public init(tag: Tag, value: some Sequence<UInt8>) {
        self.tag = tag
        self.value = ArraySlice(value)
        self.children = []
    }

    /// A primitive object whose value is part of an array: the bytes are copied (the value's
    /// indices start at 0, as with any other sequence), without a generic copy.
    public init(tag: Tag, value: ArraySlice<UInt8>) {
        self.tag = tag
        self.value = Array(value)[...]
        self.children = []
    }

    /// A primitive object whose value is an array (the common case: no generic copy, the array's
    /// storage is shared).
    public init(tag: Tag, value: [UInt8]) {
        self.tag = tag
        self.value = value[...]
        self.children = []
    }

    /// A constructed object from its children.
    public init(tag: Tag, children: [TLV]) {
        self.tag = tag
        var v: [UInt8] = []
        for c in children { c.encode(into: &v) }
        self.value = v[...]
        self.children = children
    }

    init(tag: Tag, value: ArraySlice<UInt8>, children: [TLV]) {
        self.tag = tag
        self.value = value
        self.children = children
    }

    public var isConstructed: Bool { tag.isConstructed }

    /// The value as an array.
    public var valueBytes: [UInt8] { Array(value) }

    /// The direct child with `tag` (EMV templates are unordered: look children up by tag).
    public func child(_ tag: Tag) -> TLV? { children.first { $0.tag == tag } }

    /// The first object with `tag` in this subtree (self included), depth first.
    public func find(_ tag: Tag) -> TLV? {
        if self.tag == tag { return self }
        return children.find(tag)
    }

    /// The encoding, with minimal length.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(tag.byteCount + 4 + value.count)
        encode(into: &out)
        return out
    }

    public func encode(into out: inout [UInt8]) {
        let raw = tag.rawValue
        var shift = 8 * UInt32(tag.byteCount - 1)
        while true {
            out.append(UInt8(truncatingIfNeeded: raw >> shift))
            if shift == 0 { break }
            shift -= 8
        }
        BERTLV.appendLength(value.count, to: &out)
        out.append(contentsOf: value)
    }
}

extension Array where Element == TLV {
    /// The first object with `tag` among these, searching constructed ones depth first.
    public func find(_ tag: Tag) -> TLV? {
        for n in self {
            if let hit = n.find(tag) { return hit }
        }
        return nil
    }

    /// The first object with `tag` at this level only.
    public func first(_ tag: Tag) -> TLV? { first { $0.tag == tag } }

    /// Every object of this forest in document order, depth first.
    public var flattened: [TLV] {
        var out: [TLV] = []
        func walk(_ nodes: [TLV]) {
            for n in nodes {
                out.append(n)
                walk(n.children)
            }
        }
        walk(self)
        return out
    }

    /// The concatenated encodings.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        for n in self { n.encode(into: &out) }
        return out
    }
}

/// BER-TLV as EMV uses it (EMV Book 3 Annex B): parse and encode.
public enum BERTLV {
    /// Parses a sequence of TLV objects (and their children, eagerly, depth bounded).
    public static func parse(_ bytes: [UInt8], rules: EncodingRules = .emv) throws(TLVError) -> [TLV] {
        try parse(bytes[...], rules: rules)
    }

    /// Parses a sequence of TLV objects from a slice; offsets in errors are the slice's indices
    /// relative to its start.
    public static func parse(_ bytes: ArraySlice<UInt8>, rules: EncodingRules = .emv) throws(TLVError) -> [TLV] {
        var parser = Parser(input: bytes, rules: rules)
        return try parser.parseSequence(bytes.startIndex..<bytes.endIndex, depth: 1)
    }

    /// Parses exactly one object; anything after it other than padding is `trailingBytes`.
    public static func parseSingle(_ bytes: [UInt8], rules: EncodingRules = .emv) throws(TLVError) -> TLV {
        let all = try parse(bytes, rules: rules)
        guard let first = all.first else {
            throw TLVError(.missingObject, "no TLV object in \(bytes.count) byte(s)", offset: 0)
        }
        guard all.count == 1 else {
            throw TLVError(.trailingBytes, "\(all.count - 1) more object(s) after the first",
                           offset: first.encoded.count)
        }
        return first
    }

    /// Reads one tag at `offset`; returns it and the offset after it. Used by DOL parsing too.
    public static func readTag(_ bytes: ArraySlice<UInt8>, at offset: Int,
                               rules: EncodingRules = .emv) throws(TLVError) -> (Tag, Int) {
        var i = offset
        let base = bytes.startIndex
        guard i < bytes.endIndex else { throw TLVError(.truncatedTag, "input ends where a tag should start", offset: i - base) }
        let first = bytes[i]
        i += 1
        if first & 0x1F == 0x1F {
            var count = 1
            while true {
                guard i < bytes.endIndex else {
                    throw TLVError(.truncatedTag, "input ends inside a multi-byte tag", offset: offset - base)
                }
                let b = bytes[i]
                if count == 1 && b == 0x80 && !rules.allowsNonMinimalEncoding {
                    throw TLVError(.nonMinimalEncoding, "tag subsequent byte 80 is not minimal", offset: i - base)
                }
                i += 1
                count += 1
                // `Tag` holds at most 4 bytes, whatever the rules say.
                let limit = min(rules.maxTagBytes, 4)
                guard count <= limit else {
                    throw TLVError(.tagTooLong, "tag longer than \(limit) bytes", offset: offset - base)
                }
                if b & 0x80 == 0 { break }
            }
        }
        return (Tag(bytes: bytes[offset..<i])!, i)
    }

    /// Reads a length field at `offset`; returns the length and the offset after the field.
    public static func readLength(_ bytes: ArraySlice<UInt8>, at offset: Int,
                                  rules: EncodingRules = .emv) throws(TLVError) -> (Int, Int) {
        let base = bytes.startIndex
        guard offset < bytes.endIndex else {
            throw TLVError(.truncatedLength, "input ends where a length should start", offset: offset - base)
        }
        let first = bytes[offset]
        if first < 0x80 { return (Int(first), offset + 1) }
        if first == 0x80 {
            throw TLVError(.unsupportedLength, "indefinite length (80) is not allowed in EMV", offset: offset - base)
        }
        let n = Int(first & 0x7F)
        // At most 4 length bytes whatever the rules say, so the length always fits an `Int`.
        let limit = min(rules.maxLengthBytes, 4)
        guard n <= limit else {
            throw TLVError(.unsupportedLength, "length field of \(n) bytes (at most \(limit))",
                           offset: offset - base)
        }
        guard offset + n < bytes.endIndex else {
            throw TLVError(.truncatedLength, "input ends inside a \(n)-byte length field", offset: offset - base)
        }
        var value = 0
        for k in 1...n { value = value << 8 | Int(bytes[offset + k]) }
        if !rules.allowsNonMinimalEncoding {
            let minimal = value < 0x80 ? 0 : (value <= 0xFF ? 1 : (value <= 0xFFFF ? 2 : 3))
            if n != minimal {
                throw TLVError(.nonMinimalEncoding, "length \(value) encoded in \(n + 1) bytes", offset: offset - base)
            }
        }
        return (value, offset + 1 + n)
    }

    /// Appends a minimal BER length.
    public static func appendLength(_ length: Int, to out: inout [UInt8]) {
        precondition(length >= 0 && length <= 0xFF_FFFF, "TLV length out of range")
        if length < 0x80 {
            out.append(UInt8(length))
        } else if length <= 0xFF {
            out.append(0x81); out.append(UInt8(length))
        } else if length <= 0xFFFF {
            out.append(0x82); out.append(UInt8(length >> 8)); out.append(UInt8(length & 0xFF))
        } else {
            out.append(0x83); out.append(UInt8(length >> 16))
            out.append(UInt8((length >> 8) & 0xFF)); out.append(UInt8(length & 0xFF))
        }
    }

    struct Parser {
        let input: ArraySlice<UInt8>
        let rules: EncodingRules
        var objects = 0

        init(input: ArraySlice<UInt8>, rules: EncodingRules) {
            self.input = input
            self.rules = rules
        }

        /// How many objects `region` seems to hold at its top level, from their headers alone
        /// (stops at the first that does not fit; the parse proper finds what is wrong): the
        /// result array is allocated once.
        static func count(_ region: ArraySlice<UInt8>) -> Int {
            region.withUnsafeBufferPointer { p in
                var n = 0, i = 0
                while i < p.count {
                    if p[i] == 0x00 { i += 1; continue }
                    if p[i] & 0x1F == 0x1F {
                        repeat { i += 1 } while i < p.count && p[i] & 0x80 != 0
                    }
                    i += 1
                    guard i < p.count else { break }
                    var length = Int(p[i])
                    i += 1
                    if length > 0x80 {
                        let bytes = length & 0x7F
                        guard bytes <= 4, i + bytes <= p.count else { break }
                        length = 0
                        for _ in 0..<bytes { length = length << 8 | Int(p[i]); i += 1 }
                    } else if length == 0x80 {
                        break
                    }
                    n += 1
                    guard length <= p.count - i else { break }
                    i += length
                }
                return n
            }
        }

        mutating func parseSequence(_ range: Range<Int>, depth: Int) throws(TLVError) -> [TLV] {
            guard depth <= rules.maxDepth else {
                throw TLVError(.tooDeep, "constructed objects nested deeper than \(rules.maxDepth)",
                               offset: range.lowerBound - input.startIndex)
            }
            let region = input[range]
            var out: [TLV] = []
            out.reserveCapacity(Self.count(region))
            var i = range.lowerBound
            while i < range.upperBound {
                if region[i] == 0x00 {
                    guard rules.allowsPadding else {
                        throw TLVError(.padding, "00 padding byte", offset: i - input.startIndex)
                    }
                    i += 1
                    continue
                }
                // Errors from the readers are relative to `region`; report them relative to the input.
                let shift = range.lowerBound - input.startIndex
                let (tag, afterTag): (Tag, Int)
                do {
                    (tag, afterTag) = try BERTLV.readTag(region, at: i, rules: rules)
                } catch {
                    throw TLVError(error.code, error.reason, offset: (error.offset ?? 0) + shift)
                }
                let (length, afterLength): (Int, Int)
                do {
                    (length, afterLength) = try BERTLV.readLength(region, at: afterTag, rules: rules)
                } catch {
                    throw TLVError(error.code, "\(error.reason) (tag \(tag.hex))",
                                   offset: (error.offset ?? 0) + shift)
                }
                let remaining = range.upperBound - afterLength
                guard length <= remaining else {
                    throw TLVError(.truncatedValue,
                                   "tag \(tag.hex) announces \(length) byte(s) but only \(remaining) remain",
                                   offset: i - input.startIndex)
                }
                objects += 1
                guard objects <= rules.maxObjects else {
                    throw TLVError(.tooManyObjects, "more than \(rules.maxObjects) objects",
                                   offset: i - input.startIndex)
                }
                let valueRange = afterLength..<(afterLength + length)
                let children = tag.isConstructed ? try parseSequence(valueRange, depth: depth + 1) : []
                out.append(TLV(tag: tag, value: input[valueRange], children: children))
                i = valueRange.upperBound
            }
            return out
        }
    }
}
