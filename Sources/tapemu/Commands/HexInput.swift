import BERTLV
import ISO7816

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
                throw CommandFailure.ioError("cannot read stdin: \(error)")
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
