/// Hexadecimal text <-> bytes, the way traces and the command line write them.
public enum Hex {
    /// Upper-case hex with no separators: `00A40400`.
    public static func encode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        let digits: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses hex, case-insensitive; spaces, tabs, and `:` between bytes are allowed.
    public static func decode(_ text: some StringProtocol) throws(ISO7816Error) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count / 2)
        var high: UInt8? = nil
        var index = 0
        for c in text.utf8 {
            defer { index += 1 }
            let nibble: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = c - UInt8(ascii: "A") + 10
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: ":"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                if high != nil {
                    throw ISO7816Error(.badHex, "separator inside a byte at character \(index + 1)")
                }
                continue
            default:
                throw ISO7816Error(.badHex, "not a hex digit at character \(index + 1)")
            }
            if let h = high {
                out.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        if high != nil { throw ISO7816Error(.badHex, "odd number of hex digits") }
        return out
    }
}
