import Cryptography

/// Small encoders the gateway needs (hex for the ledger and signatures, base64url for tokens)
/// and its random identifiers; the gateway service's wire shares its hex.
package enum Encoding {
    /// Lower-case hex (upper with `uppercase`), no separators.
    package static func hex(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
        let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var out: [UInt8] = []
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Hex digits (either case, no separators) to bytes; nil for anything else.
    package static func unhex(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let h = nibble(utf8[i]), let l = nibble(utf8[i + 1]) else { return nil }
            out.append(h << 4 | l)
            i += 2
        }
        return out
    }

    private static let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Base64url without padding (RFC 4648 §5).
    static func base64url(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            var v: UInt32 = 0
            for k in 0..<3 { v = v << 8 | UInt32(k < n ? bytes[i + k] : 0) }
            for k in 0..<(n + 1) { out.append(base64Alphabet[Int((v >> UInt32(18 - 6 * k)) & 0x3F)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url without padding; nil for any other character or a bad length.
    static func unbase64url(_ text: some StringProtocol) -> [UInt8]? {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in base64Alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        let chars = Array(text.utf8)
        guard chars.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        var acc: UInt32 = 0, bits = 0
        for c in chars {
            let v = table[Int(c)]
            guard v != 0xFF else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((acc >> UInt32(bits)) & 0xFF))
            }
        }
        // Leftover bits must be zero (canonical encoding).
        guard acc & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }

    /// `count` random characters from `alphabet`, without modulo bias.
    static func randomString(_ count: Int, alphabet: String) -> String {
        let chars = Array(alphabet)
        let limit = 256 - 256 % chars.count
        var out = ""
        while out.count < count {
            for b in Crypto.randomBytes(count * 2) where Int(b) < limit && out.count < count {
                out.append(chars[Int(b) % chars.count])
            }
        }
        return out
    }

    /// A payment id: 32 lower-case hex digits.
    static func paymentId() -> String { hex(Crypto.randomBytes(16)) }
    /// A uniqueRef: 10 upper-case letters and digits.
    static func uniqueRef() -> String { randomString(10, alphabet: "ABCDEFGHJKLMNPQRSTUVWXYZ23456789") }
    /// An authorisation code: 6 upper-case letters and digits.
    static func authorisationCode() -> String { randomString(6, alphabet: "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") }
}
