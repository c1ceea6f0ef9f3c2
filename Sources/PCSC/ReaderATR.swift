import ISO7816

/// What the ATR a PC/SC reader reports says about the card, after PC/SC part 3 §3.1.3.2.3.
///
/// A contactless reader has no real ATR to pass on, so it synthesises one:
/// - an ISO 14443-4 card (what payment cards are) gets `3B 8n 80 01` + the historical bytes of
///   its ATS (type A) or its ATQB application data and protocol info (type B) + TCK;
/// - a storage card (MIFARE Classic, Ultralight, FeliCa, …) gets
///   `3B 8F 80 01 80 4F 0C A0 00 00 03 06 SS NN NN 00 00 00 00 TCK`, where `A0 00 00 03 06` is
///   the PC/SC workgroup's RID, `SS` the standard and `NN NN` the card name.
/// Any other ATR comes from a contact card (or a reader that does its own thing).
public struct ReaderATR: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// An ISO 14443-4 card: it speaks APDUs, EMV may go on.
        case iso14443_4
        /// A storage (memory) card: no APDUs, not a payment card. `standard` is the SS byte,
        /// `cardName` the NN NN code.
        case storage(standard: UInt8, cardName: UInt16)
        /// A contact card's ATR, or one this reader made up differently.
        case other
        /// No ATR at all.
        case none
    }

    public let bytes: [UInt8]
    public let kind: Kind
    /// The historical bytes (T1…TK), when the ATR is well formed.
    public let historicalBytes: [UInt8]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        let parsed = Self.parse(bytes)
        historicalBytes = parsed?.historical ?? []
        guard !bytes.isEmpty else { kind = .none; return }
        guard let parsed, parsed.interfaceBytes == [0x80, 0x01], bytes.first == 0x3B else { kind = .other; return }
        let h = parsed.historical
        let pcscRID: [UInt8] = [0xA0, 0x00, 0x00, 0x03, 0x06]
        if h.count >= 11, h[0] == 0x80, h[1] == 0x4F, h[2] >= 0x0C, Array(h[3..<8]) == pcscRID {
            kind = .storage(standard: h[8], cardName: UInt16(h[9]) << 8 | UInt16(h[10]))
        } else {
            kind = .iso14443_4
        }
    }

    /// Whether EMV can go on with this card (an ISO 14443-4 card, or a contact card).
    public var canCarryAPDUs: Bool {
        switch kind {
        case .iso14443_4, .other: true
        case .storage, .none: false
        }
    }

    /// Whether the card says it takes extended Lc/Le (card capabilities, third software function
    /// table byte, bit 7 — ISO 7816-4 §8.1.1.2.7, compact-TLV tag 7 in historical bytes starting
    /// with category 80).
    public var supportsExtendedLength: Bool {
        let h = historicalBytes
        guard h.first == 0x80 else { return false }
        var i = 1
        while i < h.count {
            let tag = h[i] >> 4, length = Int(h[i] & 0x0F)
            guard i + 1 + length <= h.count else { return false }
            if tag == 0x7, length >= 3 { return h[i + 3] & 0x40 != 0 }
            i += 1 + length
        }
        return false
    }

    /// The standard named by a storage card's SS byte.
    public static func standardName(_ ss: UInt8) -> String {
        switch ss {
        case 0x01, 0x02, 0x03: "ISO 14443 A"
        case 0x05, 0x06, 0x07: "ISO 14443 B"
        case 0x09, 0x0A, 0x0B, 0x0C: "ISO 15693"
        case 0x11: "FeliCa"
        case 0x40: "low-frequency"
        default: "standard 0x" + Hex.encode([ss])
        }
    }

    /// The name of a storage card's NN NN code (PC/SC part 3 supplement), or a hex code.
    public static func cardName(_ nn: UInt16) -> String {
        let names: [UInt16: String] = [
            0x0001: "MIFARE Classic 1K", 0x0002: "MIFARE Classic 4K", 0x0003: "MIFARE Ultralight",
            0x0006: "SR176", 0x0007: "SRIX4K", 0x0014: "ICODE SLI", 0x0016: "ICODE1",
            0x0026: "MIFARE Mini", 0x002F: "Jewel", 0x0030: "Topaz",
            0x0036: "MIFARE Plus SL1 2K", 0x0037: "MIFARE Plus SL1 4K", 0x0038: "MIFARE Plus SL2 2K",
            0x0039: "MIFARE Plus SL2 4K", 0x003A: "MIFARE Ultralight C", 0x003B: "FeliCa",
            0x003D: "MIFARE Ultralight EV1",
        ]
        return names[nn] ?? "storage card 0x" + Hex.encode([UInt8(nn >> 8), UInt8(nn & 0xFF)])
    }

    public var description: String {
        switch kind {
        case .iso14443_4: "ISO 14443-4 card"
        case .storage(let ss, let nn): "\(Self.cardName(nn)) (\(Self.standardName(ss)) storage card)"
        case .other: "contact card or non-standard ATR"
        case .none: "no ATR"
        }
    }

    /// Interface bytes TD1, TD2, … (the protocol chain) and the historical bytes, or nil when the
    /// ATR is too short for what it announces.
    static func parse(_ atr: [UInt8]) -> (interfaceBytes: [UInt8], historical: [UInt8])? {
        guard atr.count >= 2 else { return nil }
        var y = atr[1] >> 4
        let k = Int(atr[1] & 0x0F)
        var tds: [UInt8] = []
        var i = 2
        while true {
            // TA, TB, TC present per the high nibble; TD says whether another group follows.
            for bit in [0x1, 0x2, 0x4] as [UInt8] where y & bit != 0 { i += 1 }
            guard y & 0x8 != 0 else { break }
            guard i < atr.count else { return nil }
            let td = atr[i]
            tds.append(td)
            i += 1
            y = td >> 4
        }
        guard i + k <= atr.count else { return nil }
        return (tds, Array(atr[i..<(i + k)]))
    }
}
