import CardChannel
import ISO7816
import PCSC
import VPCD
import Testing
import VirtualCard
import APDUTrace

@Suite("ATR interpretation (PC/SC part 3)")
struct ReaderATRTests {
    static func hex(_ s: String) -> [UInt8] { (try? Hex.decode(s)) ?? [] }

    /// (ATR, expected kind, what the description mentions)
    static let cases: [(String, ReaderATR.Kind, String)] = [
        // Storage cards: RID A0 00 00 03 06, SS = 03 (ISO 14443 A part 3), NN NN = card name.
        ("3B8F8001804F0CA000000306030001000000006A", .storage(standard: 0x03, cardName: 0x0001), "MIFARE Classic 1K"),
        ("3B8F8001804F0CA0000003060300020000000069", .storage(standard: 0x03, cardName: 0x0002), "MIFARE Classic 4K"),
        ("3B8F8001804F0CA0000003060300030000000068", .storage(standard: 0x03, cardName: 0x0003), "MIFARE Ultralight"),
        ("3B8F8001804F0CA00000030611003B0000000042", .storage(standard: 0x11, cardName: 0x003B), "FeliCa"),
        // ISO 14443-4 type A with ATS historical bytes, type B with ATQB data, and none at all.
        ("3B8880010000000071810000F9", .iso14443_4, "ISO 14443-4"),
        ("3B8E800180318066B1840C016E01830090001C", .iso14443_4, "ISO 14443-4"),
        ("3B80800101", .iso14443_4, "ISO 14443-4"),
        // A contact EMV card.
        ("3B6800000073C84012009000", .other, "contact"),
        // Truncated: announces more than it has.
        ("3B8F800180", .other, "contact"),
        ("", .none, "no ATR"),
    ]

    @Test("classifies the ATR a reader synthesises", arguments: cases)
    func classify(atr: String, kind: ReaderATR.Kind, mention: String) {
        let r = ReaderATR(Self.hex(atr))
        #expect(r.kind == kind)
        #expect(r.description.contains(mention))
        if case .storage = kind { #expect(!r.canCarryAPDUs) } else if kind != .none { #expect(r.canCarryAPDUs) }
    }

    @Test("every virtual card's ATR is an ISO 14443-4 card", arguments: CardProfiles.all.map(\.name))
    func virtualCards(profile: String) throws {
        let card = EmulatedCard(profile: try #require(CardProfiles.named(profile)))
        #expect(ReaderATR(card.atr).kind == .iso14443_4)
    }

    @Test("historical bytes and the extended-length capability")
    func extendedLength() {
        // Category 80, card capabilities 73 with the third byte's bit 7 (extended Lc/Le) set.
        let withExtended = ReaderATR(ContactlessATR.typeA(historicalBytes: [0x80, 0x73, 0x00, 0x00, 0x40]))
        #expect(withExtended.historicalBytes == [0x80, 0x73, 0x00, 0x00, 0x40])
        #expect(withExtended.supportsExtendedLength)
        let without = ReaderATR(ContactlessATR.typeA(historicalBytes: [0x80, 0x73, 0x00, 0x00, 0x00]))
        #expect(!without.supportsExtendedLength)
        #expect(!ReaderATR(Self.hex("3B8880010000000071810000F9")).supportsExtendedLength)
        // A compact-TLV object that runs past the end is no capability.
        #expect(!ReaderATR(ContactlessATR.typeA(historicalBytes: [0x80, 0x73, 0x00])).supportsExtendedLength)
    }

    @Test("no ATR prefix crashes the parser")
    func prefixes() {
        let atr = Self.hex("3B8F8001804F0CA000000306030001000000006A")
        for n in 0...atr.count { _ = ReaderATR(Array(atr.prefix(n))).description }
        for n in 0..<40 { _ = ReaderATR([UInt8](repeating: 0xFF, count: n)).kind }
    }
}

@Suite("Reader selection")
struct ReaderSelectionTests {
    static let readers = [
        "ACS ACR1252 1S CL Reader [ACR1252 Dual Reader PICC] 00 00",
        "ACS ACR1252 1S CL Reader [ACR1252 Dual Reader SAM] 00 01",
        "Virtual PCD 00 00",
        "Virtual PCD 00 01",
    ]

    static let good: [(String, String)] = [
        ("Virtual PCD 00 01", "Virtual PCD 00 01"),
        ("2", "Virtual PCD 00 00"),
        ("0", readers[0]),
        ("PCD 00 01", "Virtual PCD 00 01"),
        ("virtual pcd 00 00", "Virtual PCD 00 00"),
        ("ACR1252", readers[0]),        // two slots match: the contactless (PICC) one
        ("SAM", readers[1]),
    ]

    @Test("on a dual-interface reader, the contactless slot wins")
    func omnikey() throws {
        let readers = ["HID Global OMNIKEY 5422 Smartcard Reader 00 00", "HID Global OMNIKEY 5422CL Smartcard Reader 01 00"]
        #expect(try ReaderSelection.resolve("OMNIKEY", among: readers) == readers[1])
        #expect(try ReaderSelection.resolve("", among: readers) == readers[1])
        #expect(try ReaderSelection.resolve("", among: ["Virtual PCD 00 00"]) == "Virtual PCD 00 00")
    }

    @Test("picks one reader", arguments: good)
    func resolves(query: String, expected: String) throws {
        #expect(try ReaderSelection.resolve(query, among: Self.readers) == expected)
    }

    @Test("says why it cannot pick")
    func failures() {
        #expect(throws: ReaderSelection.Failure.ambiguous(query: "Virtual", candidates: ["Virtual PCD 00 00", "Virtual PCD 00 01"])) {
            try ReaderSelection.resolve("Virtual", among: Self.readers)
        }
        #expect(throws: ReaderSelection.Failure.indexOutOfRange(4, count: 4)) {
            try ReaderSelection.resolve("4", among: Self.readers)
        }
        #expect(throws: ReaderSelection.Failure.noMatch(query: "Omnikey", readers: Self.readers)) {
            try ReaderSelection.resolve("Omnikey", among: Self.readers)
        }
        #expect(throws: ReaderSelection.Failure.ambiguous(query: "00 01", candidates: [Self.readers[1], "Virtual PCD 00 01"])) {
            try ReaderSelection.resolve("00 01", among: Self.readers)
        }
        #expect(throws: ReaderSelection.Failure.noReaders) { try ReaderSelection.resolve("0", among: []) }
    }

    @Test("contactless interface names", arguments: [
        ("ACS ACR122U PICC Interface 00 00", true), ("OMNIKEY 5422 CL 00 01", true),
        ("Generic Contactless Reader", true), ("OMNIKEY 5422 Smartcard Reader 00 00", false),
        ("Clever Reader", false), ("Virtual PCD 00 00", false),
        ("HID Global OMNIKEY 5422CL Smartcard Reader 01 00", true), ("Uncle Reader", false),
    ])
    func contactless(name: String, expected: Bool) {
        #expect(ReaderSelection.isContactless(name) == expected)
    }
}

@Suite("vpcd endpoints")
struct VPCDEndpointTests {
    static let cases: [(String, VPCDEndpoint?)] = [
        ("127.0.0.1:35963", VPCDEndpoint(host: "127.0.0.1", port: 35963)),
        ("localhost", VPCDEndpoint(host: "localhost", port: 35963)),
        (":35964", VPCDEndpoint(host: "127.0.0.1", port: 35964)),
        ("[::1]:35965", VPCDEndpoint(host: "::1", port: 35965)),
        ("[::1]", VPCDEndpoint(host: "::1", port: 35963)),
        ("host:0", nil), ("host:70000", nil), ("host:x", nil), ("[]:1", nil), ("[::1]x", nil),
    ]

    @Test("parses HOST:PORT", arguments: cases)
    func parse(text: String, expected: VPCDEndpoint?) {
        #expect(VPCDEndpoint.parse(text) == expected)
    }

    @Test("slot N is port 35963 + N, reader Virtual PCD 00 0N")
    func slots() {
        #expect(VPCDEndpoint(slot: 1).port == 35964)
        #expect(VPCDEndpoint.readerName(slot: 1) == "Virtual PCD 00 01")
        #expect(VPCDEndpoint(slot: 0).description == "127.0.0.1:35963")
    }
}

/// `tapemu emulate --trace`: pcscd keeps the card powered between two reads, so the card side
/// of a trace starts over on the trace's first command, as a real card answers SELECT PPSE
/// whenever it comes (issue 12: a second read got 6F00 to everything).
@Suite("The card side of a trace, read twice")
struct TraceCardResponderRestartTests {
    @Test func theFirstCommandStartsTheTraceOver() throws {
        let trace = try APDUTrace(parsing: """
            @format tapemu-apdu-trace/1
            0.000000 > 00A404000E325041592E5359532E444446303100
            0.000400 < 6F0A840E325041592E5359539000
            0.001000 > 00B2010C00
            0.001200 < 70039F0801029000
            """)
        let responder = TraceCardResponder(trace: trace)
        let ppse = try Hex.decode("00A404000E325041592E5359532E444446303100")
        let record = try Hex.decode("00B2010C00")
        for _ in 0..<3 {   // three reads, no power cycle between them
            guard case .response(let a, _) = responder.process(ppse) else { Issue.record("no answer"); return }
            #expect(Hex.encode(a) == "6F0A840E325041592E5359539000")
            guard case .response(let b, _) = responder.process(record) else { Issue.record("no answer"); return }
            #expect(Hex.encode(b) == "70039F0801029000")
        }
        // A stray command is still a stray command.
        guard case .response(let stray, _) = responder.process(try Hex.decode("00B2020C00")) else { return }
        #expect(Hex.encode(stray) == "6F00")
    }
}
