/// Splits one fuzz input into the messages a harness plays (a card's responses, a reader's
/// commands): each is a 2-byte big-endian length, then that many bytes (fewer at the end of the
/// input). Seeds written this way (``FuzzInput/messages(_:)``) read back message for message.
struct FuzzInput {
    private let bytes: [UInt8]
    private var position: Int

    init(_ bytes: [UInt8], from start: Int = 0) {
        self.bytes = bytes
        self.position = min(start, bytes.count)
    }

    var isAtEnd: Bool { position >= bytes.count }

    /// The next message, or nil when the input is used up.
    mutating func next() -> [UInt8]? {
        guard position < bytes.count else { return nil }
        var length = Int(bytes[position])
        position += 1
        if position < bytes.count {
            length = length << 8 | Int(bytes[position])
            position += 1
        }
        let end = min(bytes.count, position + length)
        defer { position = end }
        return Array(bytes[position..<end])
    }

    /// The encoding of `messages` as one input (each message at most 65535 bytes).
    static func messages(_ messages: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for m in messages {
            let n = min(m.count, 0xFFFF)
            out += [UInt8(n >> 8), UInt8(n & 0xFF)] + m.prefix(n)
        }
        return out
    }
}

/// Whether `needle` occurs in `haystack` (for "no full PAN in this text" checks).
func contains(_ haystack: String, _ needle: String) -> Bool {
    !needle.isEmpty && haystack.utf8.count >= needle.utf8.count && haystack.contains(needle)
}
