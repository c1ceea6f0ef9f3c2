import BERTLV
import ISO7816

/// `tapemu tlv decode HEX|-`: the tree of a BER-TLV blob with EMV names and decoded values.
struct TLVDecodeCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "tlv decode",
        abstract: "Decode BER-TLV: the tree with EMV tag names and decoded values.",
        arguments: OutputOptions.arguments + [Self.strict, Self.input],
        discussion: """
            Reads hex (spaces and colons between bytes are fine) from the argument, or from
            stdin when it is '-'. Prints each data object as tag, name, length and its decoded
            value, indented by depth. PANs and track data are always shown masked (first 6 and
            last 4 digits); their raw bytes are never printed.
            """,
        exitCodes: [(ExitCode.dataError, "the input is not valid hex or not valid BER-TLV, or it is larger than \(HexInput.limit / 1024) KiB of hex"),
                    (ExitCode.ioError, "stdin cannot be read")])

    static let input = Positional("<hex>|-", help: "The TLV bytes in hex, or '-' to read them from stdin.",
                                  missing: "<hex> (or '-' for stdin)")
    static let strict = Flag("--strict", help: "Reject 00 padding and non-minimal lengths (default: EMV rules).")

    var input: String
    var strict: Bool
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        strict = arguments.isSet(Self.strict)
        input = try arguments.value(Self.input)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let bytes = try HexInput.read(input, console: console)
        let objects: [TLV]
        do {
            objects = try BERTLV.parse(bytes, rules: strict ? .strict : .emv)
        } catch {
            throw CommandFailure.dataError("not valid BER-TLV: \(error)")
        }
        guard !objects.isEmpty else { throw CommandFailure.dataError("no TLV object in \(bytes.count) byte(s)") }
        if bytes.suffix(2) == [0x90, 0x00], let last = objects.last, last.tag == 0x90, last.value.isEmpty {
            console.printError("tapemu: note: the last bytes 9000 look like a status word; "
                               + "'tapemu apdu decode --response' decodes a whole response")
        }
        if output.json {
            try JSONOutput.print(TLVRender.json(objects), to: console)
        } else {
            console.write(TLVRender.text(objects))
        }
        return ExitCode.success
    }
}

/// Hex from an argument or stdin (`-`), with data errors that say what is wrong.
enum HexInput {
    /// The most hex characters (with separators) read from stdin: 1 MiB, far more than any APDU
    /// (65,544 bytes at most) or card answer.
    static let limit = 1 << 20

    /// stdin, read in chunks until its end: stops at the first byte that cannot be hex or a
    /// separator, and once the input passes ``limit`` (`tlv decode - </dev/zero` fails at once).
    static func readBoundedHex(_ console: Console) throws -> String {
        var text: [UInt8] = []
        while true {
            let chunk: [UInt8]
            do { chunk = try console.readStandardInputChunk(64 * 1024) } catch {
                throw CommandFailure(exitCode: ExitCode.ioError, "cannot read stdin: \(error)")
            }
            if chunk.isEmpty { break }
            for (i, b) in chunk.enumerated() where !isHexOrSeparator(b) {
                let at = text.count + i
                let shown = (0x21...0x7E).contains(b) ? "'\(Character(Unicode.Scalar(b)))'" : String(format: "byte 0x%02X", b)
                throw CommandFailure.dataError("stdin is not hex: \(shown) at offset \(at)")
            }
            text += chunk
            guard text.count <= limit else {
                throw CommandFailure.dataError("stdin holds more than \(limit / 1024) KiB of hex; tapemu reads at most that")
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Hex digits and what may stand between bytes (spaces, colons, line breaks).
    static func isHexOrSeparator(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"),
             UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
            return true
        default:
            return false
        }
    }

    static func read(_ argument: String, console: Console) throws -> [UInt8] {
        let text: String
        if argument == "-" {
            text = try readBoundedHex(console)
        } else {
            text = argument
        }
        let bytes: [UInt8]
        do {
            bytes = try Hex.decode(text.trimmingWhitespace)
        } catch {
            throw CommandFailure.dataError("not valid hex: \(error.reason)")
        }
        guard !bytes.isEmpty else { throw CommandFailure.dataError("no bytes given") }
        return bytes
    }
}

extension String {
    var trimmingWhitespace: Substring {
        var s = self[...]
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return s
    }
}

/// How a TLV tree is shown, in text and JSON. Shared by `tlv decode` and `apdu decode`.
enum TLVRender {
    /// One line per object: `9F02 Amount, Authorised (Numeric) [6] 000000001234 = 12.34 EUR`,
    /// children indented by two spaces, details of a decoded value further indented.
    static func text(_ objects: [TLV], indent: Int = 0, context: EMVValueDecoder.Context? = nil) -> String {
        let context = context ?? EMVValueDecoder.Context(objects)
        var s = ""
        for o in objects {
            let pad = String(repeating: "  ", count: indent)
            let name = EMVValueDecoder.name(of: o.tag, in: context) ?? "unknown tag"
            var line = "\(pad)\(o.tag.hex) \(name) [\(o.value.count)]"
            let decoded = EMVValueDecoder.decode(o, in: context)
            if !o.isConstructed {
                if !EMVValueDecoder.isSensitive(o.tag), !o.value.isEmpty {
                    line += " \(SensitiveData.maskedHex(Array(o.value), tag: o.tag))"
                }
                if let decoded { line += " = \(SensitiveData.maskedText(decoded.text))" }
            }
            s += line + "\n"
            if !o.isConstructed, let decoded {
                for d in decoded.details { s += "\(pad)    \(SensitiveData.maskedText(d))\n" }
            }
            if o.isConstructed { s += text(o.children, indent: indent + 1, context: context) }
        }
        return s
    }

    static func json(_ objects: [TLV], context: EMVValueDecoder.Context? = nil) -> JSONValue {
        let context = context ?? EMVValueDecoder.Context(objects)
        return .array(objects.map { node($0, context: context) })
    }

    private static func node(_ o: TLV, context: EMVValueDecoder.Context) -> JSONValue {
        var d: [String: JSONValue] = [
            "tag": .string(o.tag.hex),
            "name": EMVValueDecoder.name(of: o.tag, in: context).map { .string($0) } ?? .null,
            "length": .int(o.value.count),
            "constructed": .bool(o.isConstructed),
        ]
        if let info = EMVTagDictionary.info(o.tag) {
            d["format"] = .string(info.format.rawValue)
            d["source"] = .string(info.source.rawValue)
        }
        // A constructed value is its children (which may hold a PAN): only primitives carry hex.
        if EMVValueDecoder.isSensitive(o.tag) {
            d["redacted"] = .bool(true)
        } else if !o.isConstructed {
            d["value"] = .string(SensitiveData.maskedHex(Array(o.value), tag: o.tag))
        }
        if o.isConstructed {
            d["children"] = .array(o.children.map { node($0, context: context) })
        } else if let decoded = EMVValueDecoder.decode(o, in: context) {
            d["decoded"] = json(decoded)
        }
        return .object(d)
    }

    static func json(_ v: DecodedValue) -> JSONValue {
        var d: [String: JSONValue] = ["text": .string(SensitiveData.maskedText(v.text))]
        if !v.details.isEmpty { d["details"] = .array(v.details.map { .string(SensitiveData.maskedText($0)) }) }
        if let f = v.fields { d["fields"] = json(f) }
        return .object(d)
    }

    static func json(_ v: StructuredValue) -> JSONValue {
        switch v {
        case .string(let s): return .string(SensitiveData.maskedText(s))
        case .int(let i): return .int(i)
        case .bool(let b): return .bool(b)
        case .array(let a): return .array(a.map(json))
        case .object(let o): return .object(o.mapValues(json))
        }
    }
}
