/// A BER-TLV tag, held as its raw encoded bytes (big-endian in ``rawValue``), so `0x9F02`
/// reads like the spec. Up to 4 bytes.
public struct Tag: Hashable, Sendable, Comparable, RawRepresentable, ExpressibleByIntegerLiteral {
    /// The encoded tag, e.g. `0x9F02` for Amount, Authorised.
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt32) { self.rawValue = value }

    /// The tag from its encoded bytes (1...4), as found in TLV or a DOL.
    public init?(bytes: some Collection<UInt8>) {
        guard (1...4).contains(bytes.count) else { return nil }
        var v: UInt32 = 0
        for b in bytes { v = v << 8 | UInt32(b) }
        self.rawValue = v
    }

    /// The encoded bytes.
    public var bytes: [UInt8] {
        let count = byteCount
        return (0..<count).map { UInt8(truncatingIfNeeded: rawValue >> (8 * UInt32(count - 1 - $0))) }
    }

    /// How many bytes the encoding has (1...4).
    public var byteCount: Int {
        rawValue > 0xFF_FFFF ? 4 : rawValue > 0xFFFF ? 3 : rawValue > 0xFF ? 2 : 1
    }

    /// The first byte of the encoding.
    public var firstByte: UInt8 { UInt8(truncatingIfNeeded: rawValue >> (8 * UInt32(byteCount - 1))) }

    /// Bit 6 of the first byte: the value holds TLV objects.
    public var isConstructed: Bool { firstByte & 0x20 != 0 }

    /// Bits 8-7 of the first byte.
    public enum Class: UInt8, Sendable {
        case universal = 0, application = 1, contextSpecific = 2, `private` = 3
    }
    public var tagClass: Class { Class(rawValue: firstByte >> 6)! }

    /// Upper-case hex of the encoding, e.g. `9F02`.
    public var hex: String {
        let digits = Array("0123456789ABCDEF")
        var s = ""
        for b in bytes { s.append(digits[Int(b >> 4)]); s.append(digits[Int(b & 0xF)]) }
        return s
    }

    public static func < (lhs: Tag, rhs: Tag) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension Tag: CustomStringConvertible {
    public var description: String { hex }
}
