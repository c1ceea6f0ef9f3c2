/// The one strict JSON reader (RFC 8259) of tapemu: every request body, GraphQL variables, card
/// profiles and webhook bodies go through it. Objects keep their member order, integers that fit
/// an `Int` stay integers, nesting is bounded, a name repeated in one object is refused (readers
/// disagree on which copy wins: `{"amount":1000,"amount":999999}` must not mean 1000 to one
/// and 999999 to another), and every error is a ``JSONParseError`` with the byte offset — never
/// a trap. A valid number is never an error: one too large for a `Double` (`1e400`) is read as
/// an infinite `.double`, which ``JSONValueDecoder`` refuses as out of range for its field.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    /// The member name, when the error is a name repeated in one object.
    public var duplicateKey: String?
    public init(message: String, offset: Int, duplicateKey: String? = nil) {
        self.message = message
        self.offset = offset
        self.duplicateKey = duplicateKey
    }
    public var description: String { "\(message) at byte \(offset)" }
}

extension JSONValue {
    public static func parse(_ bytes: some Collection<UInt8>, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        var r = JSONReader(bytes: Array(bytes), maxDepth: maxDepth)
        r.skipSpace()
        let v = try r.value(depth: 0)
        r.skipSpace()
        guard r.i == r.bytes.count else { throw JSONParseError(message: "trailing bytes after the JSON value", offset: r.i) }
        return v
    }

    public static func parse(_ text: String, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), maxDepth: maxDepth)
    }
}

private struct JSONReader {
    let bytes: [UInt8]
    let maxDepth: Int
    var i = 0

    func fail(_ m: String) -> JSONParseError { JSONParseError(message: m, offset: i) }

    mutating func skipSpace() {
        while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
    }

    mutating func literal(_ word: String, _ v: JSONValue) throws(JSONParseError) -> JSONValue {
        let w = Array(word.utf8)
        guard i + w.count <= bytes.count, Array(bytes[i..<i + w.count]) == w else { throw fail("invalid literal") }
        i += w.count
        return v
    }

    mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw fail("JSON nests deeper than \(maxDepth) levels") }
        guard i < bytes.count else { throw fail("unexpected end of JSON") }
        switch bytes[i] {
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "["):
            i += 1
            var out: [JSONValue] = []
            skipSpace()
            if i < bytes.count && bytes[i] == UInt8(ascii: "]") { i += 1; return .array(out) }
            while true {
                skipSpace()
                out.append(try value(depth: depth + 1))
                skipSpace()
                guard i < bytes.count else { throw fail("unterminated array") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(out) }
                throw fail("expected , or ] in an array")
            }
        case UInt8(ascii: "{"):
            i += 1
            var out: [(String, JSONValue)] = []
            var names = Set<String>()
            skipSpace()
            if i < bytes.count && bytes[i] == UInt8(ascii: "}") { i += 1; return .object(out) }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                let keyOffset = i
                let key = try string()
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected : after a member name") }
                i += 1
                skipSpace()
                if names.contains(key) {
                    throw JSONParseError(message: "the key \"\(key)\" appears more than once in one object",
                                         offset: keyOffset, duplicateKey: key)
                }
                names.insert(key)
                let v = try value(depth: depth + 1)
                out.append((key, v))
                skipSpace()
                guard i < bytes.count else { throw fail("unterminated object") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(out) }
                throw fail("expected , or } in an object")
            }
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try number()
        default:
            throw fail("unexpected byte")
        }
    }

    mutating func number() throws(JSONParseError) -> JSONValue {
        let start = i
        func digits() -> Int {
            let s = i
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1 }
            return i - s
        }
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count else { throw fail("invalid number") }
        if bytes[i] == UInt8(ascii: "0") { i += 1 } else if digits() == 0 { throw fail("invalid number") }
        var integral = true
        if i < bytes.count && bytes[i] == UInt8(ascii: ".") {
            integral = false
            i += 1
            guard digits() > 0 else { throw fail("invalid number") }
        }
        if i < bytes.count && (bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E")) {
            integral = false
            i += 1
            if i < bytes.count && (bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-")) { i += 1 }
            guard digits() > 0 else { throw fail("invalid number") }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if integral, let n = Int(text) { return .int(n) }
        // Valid JSON past a Double's range (1e400) is infinite here, past its precision
        // (2^63, 12.50) rounded: the decoder decides per field whether that is acceptable.
        guard let d = Double(text) else {
            return .double(bytes[start] == UInt8(ascii: "-") ? -.infinity : .infinity)
        }
        return .double(d)
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("a \\u escape needs four hex digits") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[i]
            let h: UInt32
            switch b {
            case 0x30...0x39: h = UInt32(b - 0x30)
            case 0x41...0x46: h = UInt32(b - 0x41 + 10)
            case 0x61...0x66: h = UInt32(b - 0x61 + 10)
            default: throw fail("a \\u escape needs four hex digits")
            }
            v = v << 4 | h
            i += 1
        }
        return v
    }

    mutating func string() throws(JSONParseError) -> String {
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") { i += 1; break }
            guard b >= 0x20 else { throw fail("a control character in a string") }
            if b != UInt8(ascii: "\\") { out.append(b); i += 1; continue }
            i += 1
            guard i < bytes.count else { throw fail("unterminated string") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var v = try hex4()
                if (0xD800...0xDBFF).contains(v) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw fail("a lone surrogate")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("a lone surrogate") }
                    v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let s = Unicode.Scalar(v) else { throw fail("a lone surrogate") }
                out.append(contentsOf: Array(String(Character(s)).utf8))
            default: throw fail("an invalid escape")
            }
        }
        // Invalid UTF-8 is refused, not repaired.
        guard let s = String(validating: out, as: UTF8.self) else { throw fail("a string that is not valid UTF-8") }
        return s
    }
}
