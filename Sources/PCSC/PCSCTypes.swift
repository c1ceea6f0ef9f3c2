/// The transmission protocol of a connection (`SCARD_PROTOCOL_*`).
public enum PCSCProtocol: String, Sendable, Hashable, Codable {
    case t0 = "T=0"
    case t1 = "T=1"
    case raw = "RAW"
    case undefined = "undefined"
}

/// The protocols a connection accepts (`SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1`).
public struct PCSCProtocols: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// T=0 or T=1, whichever the card and reader agree on.
    public static let any: PCSCProtocols = [.t0, .t1]
}

/// How a connection shares the card (`SCARD_SHARE_*`).
public enum PCSCShareMode: String, Sendable, Hashable {
    /// Other applications may talk to the card between our commands.
    case shared
    /// Nobody else may connect while we hold the card.
    case exclusive
    /// Talk to the reader without a card (control commands only).
    case direct
}

/// What happens to the card when a connection ends (`SCARD_*_CARD`).
public enum PCSCDisposition: String, Sendable, Hashable {
    /// Leave the card as it is.
    case leave
    /// Warm-reset the card.
    case reset
    /// Power the card down.
    case unpower
    /// Eject the card (readers that can).
    case eject
}

/// One reader and its card as pcscd reports them (`SCARD_READERSTATE`).
public struct ReaderState: Sendable, Hashable {
    /// `SCARD_STATE_*` flags.
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
    }

    public var reader: String
    /// The full `dwEventState`: flags in the low 16 bits, pcscd's card event counter in the high 16.
    public var rawEventState: UInt
    /// The ATR of the card in the reader; empty when there is none.
    public var atr: [UInt8]

    public init(reader: String, rawEventState: UInt, atr: [UInt8]) {
        self.reader = reader
        self.rawEventState = rawEventState
        self.atr = atr
    }

    public var flags: Flags { Flags(rawValue: rawEventState & 0xFFFF) }
    /// How many times a card was inserted or removed (pcscd counts; it changes on every event).
    public var eventCount: Int { Int((rawEventState >> 16) & 0xFFFF) }

    /// A card is present and answered (not mute).
    public var hasCard: Bool { flags.contains(.present) && !flags.contains(.mute) }
    /// The reader went away.
    public var isGone: Bool { flags.contains(.unknown) }
    /// A card is present but did not answer to reset.
    public var isMute: Bool { flags.contains(.present) && flags.contains(.mute) }
    /// Another application holds the card exclusively.
    public var isExclusive: Bool { flags.contains(.exclusive) }
    /// The reader's state cannot be read.
    public var isUnavailable: Bool { flags.contains(.unavailable) }
    /// This is the plug-and-play pseudo reader (reader list changes).
    public var isPlugAndPlay: Bool { reader == PCSCLite.plugAndPlayReader }

    /// Words for the flags: `present`, `empty`, `exclusive`, `in use`, `mute`, `unpowered`, …
    public var flagNames: [String] {
        let names: [(Flags, String)] = [
            (.present, "present"), (.empty, "empty"), (.exclusive, "exclusive"), (.inUse, "in use"),
            (.mute, "mute"), (.unpowered, "unpowered"), (.unavailable, "unavailable"),
            (.unknown, "unknown"), (.atrMatch, "ATR match"), (.ignore, "ignored"),
        ]
        return names.filter { flags.contains($0.0) }.map(\.1)
    }
}
