/// A response APDU: the data the card returned and its status word SW1 SW2.
///
/// Shaped like CoreNFC's `sendCommand(apdu:)` result: payload, SW1, SW2.
public struct ResponseAPDU: Hashable, Sendable {
    public var data: [UInt8]
    public var statusWord: StatusWord

    public var sw1: UInt8 { statusWord.sw1 }
    public var sw2: UInt8 { statusWord.sw2 }

    public init(data: [UInt8] = [], statusWord: StatusWord) {
        self.data = data
        self.statusWord = statusWord
    }

    public init(data: [UInt8] = [], sw1: UInt8, sw2: UInt8) {
        self.init(data: data, statusWord: StatusWord(sw1: sw1, sw2: sw2))
    }

    /// Parses response bytes (data + SW1 SW2). Fewer than 2 bytes is an error: vpcd hands the
    /// reader an empty "success" when a card closes its socket.
    public init(bytes: some Collection<UInt8>) throws(ISO7816Error) {
        guard bytes.count >= 2 else {
            throw ISO7816Error(.missingStatusWord,
                               "response of \(bytes.count) byte(s) has no status word (needs at least SW1 SW2)")
        }
        let b = Array(bytes)
        self.init(data: Array(b[..<(b.count - 2)]), sw1: b[b.count - 2], sw2: b[b.count - 1])
    }

    /// ``init(bytes:)`` for an array (not called generically from other modules: every exchange
    /// parses one).
    public init(bytes: [UInt8]) throws(ISO7816Error) {
        guard bytes.count >= 2 else {
            throw ISO7816Error(.missingStatusWord,
                               "response of \(bytes.count) byte(s) has no status word (needs at least SW1 SW2)")
        }
        self.init(data: Array(bytes[..<(bytes.count - 2)]), sw1: bytes[bytes.count - 2], sw2: bytes[bytes.count - 1])
    }

    public var bytes: [UInt8] { data + [sw1, sw2] }
}

extension ResponseAPDU: CustomStringConvertible, CustomDebugStringConvertible {
    /// The length and status word only: response data can hold a PAN or track 2, so it never
    /// reaches a log through string interpolation. Use `Hex.encode(bytes)` where the bytes belong.
    public var description: String { "\(data.count) byte(s), SW \(statusWord.hex)" }
    public var debugDescription: String { "ResponseAPDU(\(description))" }
}
