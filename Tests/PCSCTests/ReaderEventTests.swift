import PCSC
import Testing

/// What `readers --watch` reports between two views of pcscd's readers (no pcscd needed).
@Suite("Reader events from two views of pcscd")
struct ReaderEventTests {
    static let atr: [UInt8] = [0x3B, 0x80, 0x80, 0x01, 0x01]

    static func state(_ reader: String, _ flags: ReaderState.Flags, count: Int = 0, atr: [UInt8] = []) -> ReaderState {
        ReaderState(reader: reader, rawEventState: flags.rawValue | UInt(count) << 16, atr: atr)
    }

    static func kinds(_ old: [ReaderState], _ new: [ReaderState]) -> [String] {
        ReaderEvent.changes(from: old, to: new).map { "\($0.kind.rawValue) \($0.report.name)" }
    }

    @Test("a card inserted, removed, swapped between two looks, falling mute")
    func cards() {
        let empty = Self.state("A", .empty, count: 1)
        let card = Self.state("A", [.present, .inUse], count: 2, atr: Self.atr)
        #expect(Self.kinds([empty], [card]) == ["cardInserted A"])
        #expect(ReaderEvent.changes(from: [empty], to: [card]).first?.report.readerATR?.canCarryAPDUs == true)
        #expect(Self.kinds([card], [Self.state("A", .empty, count: 3)]) == ["cardRemoved A"])
        #expect(Self.kinds([card], [Self.state("A", .present, count: 4, atr: Self.atr)]) == ["cardRemoved A", "cardInserted A"])
        #expect(Self.kinds([empty], [Self.state("A", [.present, .mute], count: 2)]) == ["cardMute A"])
        // A program connecting to the card changes pcscd's flags, not the card: no event.
        #expect(Self.kinds([Self.state("A", .present, count: 2, atr: Self.atr)], [card]).isEmpty)
        #expect(Self.kinds([empty], [empty]).isEmpty)
    }

    @Test("readers plugged in and out, with the card they hold")
    func readers() {
        let a = Self.state("A", .empty), b = Self.state("B", .present, count: 1, atr: Self.atr)
        #expect(Self.kinds([a], [a, b]) == ["readerAdded B", "cardInserted B"])
        #expect(Self.kinds([a, b], [a]) == ["cardRemoved B", "readerRemoved B"])
        // A reader pcscd reports gone (SCARD_STATE_UNKNOWN) is removed too.
        #expect(Self.kinds([a, b], [a, Self.state("B", .unknown)]) == ["cardRemoved B", "readerRemoved B"])
        let indexes = ReaderEvent.changes(from: [a], to: [a, b]).map(\.report.index)
        #expect(indexes == [1, 1])
    }
}
