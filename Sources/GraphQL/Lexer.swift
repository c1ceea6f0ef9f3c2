/// The lexer of GraphQL's executable documents (GraphQL spec, October 2021, §2.1 "Source Text":
/// punctuators, names, Int/Float values, strings and block strings; white space, line
/// terminators, commas and comments are ignored tokens).
///
/// It reads UTF-8 bytes, never a regular expression, and counts lines and columns (both from 1;
/// a column counts Unicode scalars, so a position matches what an editor shows). It stops with a
/// ``GraphQLError`` at the first byte it cannot read, and at ``GraphQLLimits/maxTokens``.

/// A line and a column in the query text, both from 1.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }
    public var description: String { "\(line):\(column)" }
}

/// Bounds on hostile input, checked while reading (before any work proportional to them).
public struct GraphQLLimits: Sendable, Hashable {
    /// Bytes of query text.
    public var maxDocumentBytes: Int
    /// Tokens in the document (punctuators, names, values).
    public var maxTokens: Int
    /// Nesting of selection sets, list/object values and list types together.
    public var maxDepth: Int
    /// Fields resolved in one execution (aliases × list items × selections): a small query
    /// cannot ask for an unbounded answer.
    public var maxResolvedFields: Int

    public init(maxDocumentBytes: Int = 64 * 1024, maxTokens: Int = 8_000, maxDepth: Int = 32,
                maxResolvedFields: Int = 200_000) {
        self.maxDocumentBytes = maxDocumentBytes
        self.maxTokens = maxTokens
        self.maxDepth = maxDepth
        self.maxResolvedFields = maxResolvedFields
    }

    public static let `default` = GraphQLLimits()
}

struct Token: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case bang, dollar, ampersand, parenL, parenR, spread, colon, equals, at, bracketL, bracketR
        case braceL, pipe, braceR
        case name, int, float, string, blockString
        case end
    }
    var kind: Kind
    /// The name, the digits of a number, or the decoded string value.
    var value: String
    var location: SourceLocation

    var describe: String {
        switch kind {
        case .bang: return "\"!\""
        case .dollar: return "\"$\""
        case .ampersand: return "\"&\""
        case .parenL: return "\"(\""
        case .parenR: return "\")\""
        case .spread: return "\"...\""
        case .colon: return "\":\""
        case .equals: return "\"=\""
        case .at: return "\"@\""
        case .bracketL: return "\"[\""
        case .bracketR: return "\"]\""
        case .braceL: return "\"{\""
        case .pipe: return "\"|\""
        case .braceR: return "\"}\""
        case .name: return "name \"\(value)\""
        case .int: return "Int \(value)"
        case .float: return "Float \(value)"
        case .string, .blockString: return "a string"
        case .end: return "the end of the document"
        }
    }
}

struct Lexer {
    private let bytes: [UInt8]
    private var i = 0
    private var line = 1
    private var lineStart = 0
    private var tokenCount = 0
    private var cacheOffset = 0
    private var cacheColumn = 1
    private let limits: GraphQLLimits

    init(_ bytes: [UInt8], limits: GraphQLLimits) throws(GraphQLError) {
        guard bytes.count <= limits.maxDocumentBytes else {
            throw GraphQLError("the document is \(bytes.count) bytes; the limit is \(limits.maxDocumentBytes)",
                               at: SourceLocation(line: 1, column: 1))
        }
        self.bytes = bytes
        self.limits = limits
        // A byte-order mark is ignored (§2.1.1).
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3; lineStart = 3 }
    }

    /// The column of byte offset `at`: Unicode scalars since the line's start, from 1.
    private mutating func location(_ at: Int) -> SourceLocation {
        // Positions are asked for in increasing order: continue from the last one on this line,
        // so a long single-line document costs linear time.
        if cacheOffset < lineStart || cacheOffset > at { cacheOffset = lineStart; cacheColumn = 1 }
        var column = cacheColumn
        var k = cacheOffset
        defer { cacheOffset = at; cacheColumn = column }
        while k < at {
            // Count lead bytes only (not 10xxxxxx continuation bytes).
            if bytes[k] & 0xC0 != 0x80 { column += 1 }
            k += 1
        }
        return SourceLocation(line: line, column: column)
    }

    private mutating func fail(_ message: String, _ at: Int) -> GraphQLError {
        GraphQLError("Syntax Error: \(message)", at: location(at))
    }

    private mutating func newline(after k: Int) {
        line += 1
        lineStart = k
    }

    /// Skips ignored tokens: white space, line terminators, commas, comments, BOMs.
    private mutating func skipIgnored() {
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x2C: i += 1
            case 0x0A: i += 1; newline(after: i)
            case 0x0D:
                i += 1
                if i < bytes.count && bytes[i] == 0x0A { i += 1 }
                newline(after: i)
            case 0x23:   // # comment to the end of the line
                while i < bytes.count && bytes[i] != 0x0A && bytes[i] != 0x0D { i += 1 }
            case 0xEF where i + 2 < bytes.count && bytes[i + 1] == 0xBB && bytes[i + 2] == 0xBF: i += 3
            default: return
            }
        }
    }

    mutating func next() throws(GraphQLError) -> Token {
        skipIgnored()
        let start = i
        guard i < bytes.count else { return Token(kind: .end, value: "", location: location(start)) }
        tokenCount += 1
        guard tokenCount <= limits.maxTokens else {
            throw fail("the document has more than \(limits.maxTokens) tokens", start)
        }
        let b = bytes[i]
        let startLocation = location(start)
        func punct(_ k: Token.Kind) -> Token { Token(kind: k, value: "", location: startLocation) }
        switch b {
        case UInt8(ascii: "!"): i += 1; return punct(.bang)
        case UInt8(ascii: "$"): i += 1; return punct(.dollar)
        case UInt8(ascii: "&"): i += 1; return punct(.ampersand)
        case UInt8(ascii: "("): i += 1; return punct(.parenL)
        case UInt8(ascii: ")"): i += 1; return punct(.parenR)
        case UInt8(ascii: ":"): i += 1; return punct(.colon)
        case UInt8(ascii: "="): i += 1; return punct(.equals)
        case UInt8(ascii: "@"): i += 1; return punct(.at)
        case UInt8(ascii: "["): i += 1; return punct(.bracketL)
        case UInt8(ascii: "]"): i += 1; return punct(.bracketR)
        case UInt8(ascii: "{"): i += 1; return punct(.braceL)
        case UInt8(ascii: "|"): i += 1; return punct(.pipe)
        case UInt8(ascii: "}"): i += 1; return punct(.braceR)
        case UInt8(ascii: "."):
            guard i + 2 < bytes.count, bytes[i + 1] == b, bytes[i + 2] == b else {
                throw fail("unexpected \".\" (a spread is \"...\")", start)
            }
            i += 3
            return punct(.spread)
        case UInt8(ascii: "\""):
            if i + 2 < bytes.count && bytes[i + 1] == b && bytes[i + 2] == b {
                return Token(kind: .blockString, value: try readBlockString(), location: startLocation)
            }
            return Token(kind: .string, value: try readString(), location: startLocation)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try readNumber(startLocation)
        default:
            if Self.isNameStart(b) {
                while i < bytes.count && Self.isNameContinue(bytes[i]) { i += 1 }
                return Token(kind: .name, value: String(decoding: bytes[start..<i], as: UTF8.self),
                             location: startLocation)
            }
            throw fail("unexpected character \(Self.show(b))", start)
        }
    }

    static func isNameStart(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
    }
    static func isNameContinue(_ b: UInt8) -> Bool { isNameStart(b) || (b >= 0x30 && b <= 0x39) }
    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    private static func show(_ b: UInt8) -> String {
        if b >= 0x20 && b < 0x7F { return "\"\(Character(Unicode.Scalar(b)))\"" }
        let hex = String(b, radix: 16, uppercase: true)
        return "0x" + (hex.count == 1 ? "0" + hex : hex)
    }

    /// IntValue / FloatValue (§2.9.1, §2.9.2): no leading zeros, and no name start or "."
    /// right after the number.
    private mutating func readNumber(_ startLocation: SourceLocation) throws(GraphQLError) -> Token {
        let start = i
        var isFloat = false
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count, Self.isDigit(bytes[i]) else { throw fail("a \"-\" must be followed by a digit", start) }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if i < bytes.count && Self.isDigit(bytes[i]) { throw fail("a number cannot start with 0 then a digit", start) }
        } else {
            while i < bytes.count && Self.isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count && bytes[i] == UInt8(ascii: ".") {
            isFloat = true
            i += 1
            guard i < bytes.count, Self.isDigit(bytes[i]) else { throw fail("a \".\" in a number must be followed by a digit", start) }
            while i < bytes.count && Self.isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count && (bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E")) {
            isFloat = true
            i += 1
            if i < bytes.count && (bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-")) { i += 1 }
            guard i < bytes.count, Self.isDigit(bytes[i]) else { throw fail("an exponent needs a digit", start) }
            while i < bytes.count && Self.isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count && (bytes[i] == UInt8(ascii: ".") || Self.isNameStart(bytes[i])) {
            throw fail("a number is followed by \(Self.show(bytes[i]))", start)
        }
        return Token(kind: isFloat ? .float : .int, value: String(decoding: bytes[start..<i], as: UTF8.self),
                     location: startLocation)
    }

    /// The next Unicode scalar of a string at `i` (valid UTF-8 only), advancing past it.
    private mutating func scalar() throws(GraphQLError) -> Unicode.Scalar {
        let start = i
        let b0 = bytes[i]
        let length: Int
        var value: UInt32
        switch b0 {
        case 0x00..<0x80: length = 1; value = UInt32(b0)
        case 0xC2..<0xE0: length = 2; value = UInt32(b0 & 0x1F)
        case 0xE0..<0xF0: length = 3; value = UInt32(b0 & 0x0F)
        case 0xF0..<0xF5: length = 4; value = UInt32(b0 & 0x07)
        default: throw fail("the text is not valid UTF-8", start)
        }
        guard start + length <= bytes.count else { throw fail("the text is not valid UTF-8", start) }
        for k in 1..<max(length, 1) where length > 1 {
            let c = bytes[start + k]
            guard c & 0xC0 == 0x80 else { throw fail("the text is not valid UTF-8", start) }
            value = value << 6 | UInt32(c & 0x3F)
        }
        let minimum: UInt32 = [0, 0, 0x80, 0x800, 0x10000][length]
        guard value >= minimum, let s = Unicode.Scalar(value) else { throw fail("the text is not valid UTF-8", start) }
        i += length
        return s
    }

    /// StringValue (§2.9.4): escapes \" \\ \/ \b \f \n \r \t \uXXXX and \u{X…}, surrogate pairs
    /// joined; no line terminator inside.
    private mutating func readString() throws(GraphQLError) -> String {
        let start = i
        i += 1
        var out = String.UnicodeScalarView()
        while true {
            guard i < bytes.count else { throw fail("unterminated string", start) }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") { i += 1; return String(out) }
            if b == 0x0A || b == 0x0D { throw fail("unterminated string (a line ends inside it)", start) }
            if b < 0x20 && b != 0x09 { throw fail("invalid character \(Self.show(b)) in a string", i) }
            if b != UInt8(ascii: "\\") { out.append(try scalar()); continue }
            let escape = i
            i += 1
            guard i < bytes.count else { throw fail("unterminated string", start) }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append("\"")
            case UInt8(ascii: "\\"): out.append("\\")
            case UInt8(ascii: "/"): out.append("/")
            case UInt8(ascii: "b"): out.append("\u{08}")
            case UInt8(ascii: "f"): out.append("\u{0C}")
            case UInt8(ascii: "n"): out.append("\n")
            case UInt8(ascii: "r"): out.append("\r")
            case UInt8(ascii: "t"): out.append("\t")
            case UInt8(ascii: "u"):
                var value = try readUnicodeEscape(escape)
                if (0xD800...0xDBFF).contains(value) {
                    // A leading surrogate must be followed by \u of a trailing one.
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw fail("a lone surrogate in a \\u escape", escape)
                    }
                    i += 2
                    let low = try readUnicodeEscape(escape)
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("a lone surrogate in a \\u escape", escape) }
                    value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let s = Unicode.Scalar(value) else { throw fail("\\u escape of a surrogate or beyond U+10FFFF", escape) }
                out.append(s)
            default:
                throw fail("invalid escape \\\(Self.show(e))", escape)
            }
        }
    }

    /// After `\u`: four hex digits, or `{` hex digits `}` (at most U+10FFFF).
    private mutating func readUnicodeEscape(_ escape: Int) throws(GraphQLError) -> UInt32 {
        func hex(_ b: UInt8) -> UInt32? {
            switch b {
            case 0x30...0x39: return UInt32(b - 0x30)
            case 0x41...0x46: return UInt32(b - 0x41 + 10)
            case 0x61...0x66: return UInt32(b - 0x61 + 10)
            default: return nil
            }
        }
        var value: UInt32 = 0
        if i < bytes.count && bytes[i] == UInt8(ascii: "{") {
            i += 1
            var digits = 0
            while i < bytes.count, let h = hex(bytes[i]) {
                value = value << 4 | h
                digits += 1
                guard value <= 0x10FFFF else { throw fail("\\u{…} beyond U+10FFFF", escape) }
                i += 1
            }
            guard digits > 0, i < bytes.count, bytes[i] == UInt8(ascii: "}") else { throw fail("invalid \\u{…} escape", escape) }
            i += 1
            return value
        }
        for _ in 0..<4 {
            guard i < bytes.count, let h = hex(bytes[i]) else { throw fail("a \\u escape needs four hex digits", escape) }
            value = value << 4 | h
            i += 1
        }
        return value
    }

    /// BlockString (§2.9.4): raw text between `"""` pairs, `\"""` the only escape, then
    /// BlockStringValue(): common indentation and blank first/last lines removed.
    private mutating func readBlockString() throws(GraphQLError) -> String {
        let start = i
        i += 3
        var raw = String.UnicodeScalarView()
        while true {
            guard i < bytes.count else { throw fail("unterminated block string", start) }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") && i + 2 < bytes.count && bytes[i + 1] == b && bytes[i + 2] == b {
                i += 3
                return Self.blockStringValue(String(raw))
            }
            if b == UInt8(ascii: "\\") && i + 3 < bytes.count && bytes[i + 1] == UInt8(ascii: "\"")
                && bytes[i + 2] == UInt8(ascii: "\"") && bytes[i + 3] == UInt8(ascii: "\"") {
                raw.append(contentsOf: "\"\"\"".unicodeScalars)
                i += 4
                continue
            }
            if b == 0x0A { raw.append("\n"); i += 1; newline(after: i); continue }
            if b == 0x0D {
                raw.append("\n")
                i += 1
                if i < bytes.count && bytes[i] == 0x0A { i += 1 }
                newline(after: i)
                continue
            }
            if b < 0x20 && b != 0x09 { throw fail("invalid character \(Self.show(b)) in a block string", i) }
            raw.append(try scalar())
        }
    }

    static func blockStringValue(_ raw: String) -> String {
        var lines = raw.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        func indent(_ l: String) -> Int { l.prefix { $0 == " " || $0 == "\t" }.count }
        func isBlank(_ l: String) -> Bool { indent(l) == l.count }
        var common: Int?
        for l in lines.dropFirst() where !isBlank(l) {
            let n = indent(l)
            if common == nil || n < common! { common = n }
        }
        if let common, common > 0 {
            for k in lines.indices.dropFirst() { lines[k] = String(lines[k].dropFirst(min(common, lines[k].count))) }
        }
        while let f = lines.first, isBlank(f) { lines.removeFirst() }
        while let l = lines.last, isBlank(l) { lines.removeLast() }
        return lines.joined(separator: "\n")
    }
}
