import Testing
@testable import ISO7816

/// One well-formed command APDU and what it holds.
struct CommandCase: Sendable, CustomStringConvertible {
    var hex: String
    var isoCase: Int
    var extended: Bool
    var dataCount: Int
    /// -1 absent, 1...65536.
    var le: Int
    var description: String { hex.count > 40 ? String(hex.prefix(40)) + "…" : hex }
}

private func hex(_ s: String) -> [UInt8] { try! Hex.decode(s) }

@Suite("Command APDUs")
struct CommandAPDUTests {
    static let longData = String(repeating: "AB", count: 300)
    static let cases: [CommandCase] = [
        // Case 1.
        CommandCase(hex: "00840000", isoCase: 1, extended: false, dataCount: 0, le: -1),
        // Case 2 short: Le 01, Le FF, Le 00 = 256.
        CommandCase(hex: "00B2010C01", isoCase: 2, extended: false, dataCount: 0, le: 1),
        CommandCase(hex: "00B2010CFF", isoCase: 2, extended: false, dataCount: 0, le: 255),
        CommandCase(hex: "00B2010C00", isoCase: 2, extended: false, dataCount: 0, le: 256),
        // Case 3 short.
        CommandCase(hex: "0020008008241234FFFFFFFFFF", isoCase: 3, extended: false, dataCount: 8, le: -1),
        CommandCase(hex: "00A4040001AA", isoCase: 3, extended: false, dataCount: 1, le: -1),
        // Case 4 short.
        CommandCase(hex: "00A404000E325041592E5359532E444446303100", isoCase: 4, extended: false, dataCount: 14, le: 256),
        CommandCase(hex: "80A8000002830010", isoCase: 4, extended: false, dataCount: 2, le: 16),
        // Case 2 extended: Le 0101 = 257, Le 0000 = 65536, Le FFFF.
        CommandCase(hex: "00B0000000" + "0101", isoCase: 2, extended: true, dataCount: 0, le: 257),
        CommandCase(hex: "00B0000000" + "0000", isoCase: 2, extended: true, dataCount: 0, le: 65536),
        CommandCase(hex: "00B0000000" + "FFFF", isoCase: 2, extended: true, dataCount: 0, le: 65535),
        // Case 3 extended: 300 data bytes.
        CommandCase(hex: "00D60000" + "00012C" + longData, isoCase: 3, extended: true, dataCount: 300, le: -1),
        // Case 4 extended: 300 data bytes, Le 0000 = 65536; and Le 0100 = 256 with long data.
        CommandCase(hex: "00D60000" + "00012C" + longData + "0000", isoCase: 4, extended: true, dataCount: 300, le: 65536),
        CommandCase(hex: "00D60000" + "00012C" + longData + "0100", isoCase: 4, extended: true, dataCount: 300, le: 256),
        // Case 4 extended because Le > 256 with short data.
        CommandCase(hex: "80CA9F36" + "000002" + "AABB" + "0200", isoCase: 4, extended: true, dataCount: 2, le: 512),
    ]

    @Test("parses every case, short and extended", arguments: cases)
    func parses(_ c: CommandCase) throws {
        let apdu = try CommandAPDU(bytes: hex(c.hex))
        #expect(apdu.isoCase == c.isoCase)
        #expect(apdu.data.count == c.dataCount)
        #expect(apdu.expectedResponseLength == c.le)
        #expect(apdu.needsExtendedLength == c.extended)
    }

    @Test("encodes back to the same bytes", arguments: cases)
    func roundTrips(_ c: CommandCase) throws {
        let apdu = try CommandAPDU(bytes: hex(c.hex))
        #expect(Hex.encode(apdu.bytes) == c.hex)
        #expect(try CommandAPDU(bytes: apdu.bytes) == apdu)
    }

    @Test("encodes into a caller's buffer: the same bytes, their exact count, nothing past them", arguments: cases)
    func encodesIntoABuffer(_ c: CommandCase) throws {
        let apdu = try CommandAPDU(bytes: hex(c.hex))
        #expect(apdu.encodingProblem == nil)
        #expect(apdu.encodedCount == c.hex.count / 2)
        // A buffer longer than needed, filled with a marker: the tail must keep it.
        var buffer = [UInt8](repeating: 0xEE, count: apdu.encodedCount + 8)
        let written = buffer.withUnsafeMutableBufferPointer { apdu.encode(into: $0) }
        #expect(written == apdu.encodedCount)
        #expect(Hex.encode(Array(buffer.prefix(written))) == c.hex)
        #expect(buffer.suffix(8).allSatisfy { $0 == 0xEE })
    }

    /// Built commands at the length boundaries (not parsed ones: those only reach what a parser
    /// accepts), each expected encoding assembled here byte by byte.
    struct Boundary: Sendable, CustomStringConvertible {
        var name: String
        var dataCount: Int
        var le: Int
        var extended = false
        /// The length fields: Lc (with its 00 marker when extended) before the data, Le after.
        var lc: [UInt8]
        var leField: [UInt8]
        var description: String { name }
    }

    static let boundaries: [Boundary] = [
        Boundary(name: "case 3S, 255 data bytes", dataCount: 255, le: -1, lc: [0xFF], leField: []),
        Boundary(name: "case 4S, 255 data bytes, Le 256", dataCount: 255, le: 256, lc: [0xFF], leField: [0x00]),
        Boundary(name: "case 4S, 255 data bytes, Le 1", dataCount: 255, le: 1, lc: [0xFF], leField: [0x01]),
        Boundary(name: "case 3E, 256 data bytes", dataCount: 256, le: -1, lc: [0x00, 0x01, 0x00], leField: []),
        Boundary(name: "case 4E, 256 data bytes, Le 256", dataCount: 256, le: 256, lc: [0x00, 0x01, 0x00], leField: [0x01, 0x00]),
        Boundary(name: "case 4E, 256 data bytes, Le 1", dataCount: 256, le: 1, lc: [0x00, 0x01, 0x00], leField: [0x00, 0x01]),
        Boundary(name: "case 3E, 65535 data bytes", dataCount: 65535, le: -1, lc: [0x00, 0xFF, 0xFF], leField: []),
        Boundary(name: "case 4E, 65535 data bytes, Le 65536", dataCount: 65535, le: 65536, lc: [0x00, 0xFF, 0xFF], leField: [0x00, 0x00]),
        Boundary(name: "case 4E, 65535 data bytes, Le 65535", dataCount: 65535, le: 65535, lc: [0x00, 0xFF, 0xFF], leField: [0xFF, 0xFF]),
        Boundary(name: "case 4E, 1 data byte, Le 257", dataCount: 1, le: 257, lc: [0x00, 0x00, 0x01], leField: [0x01, 0x01]),
        Boundary(name: "case 2S, Le 256", dataCount: 0, le: 256, lc: [], leField: [0x00]),
        Boundary(name: "case 2E, Le 257", dataCount: 0, le: 257, lc: [], leField: [0x00, 0x01, 0x01]),
        Boundary(name: "case 2E, Le 65536", dataCount: 0, le: 65536, lc: [], leField: [0x00, 0x00, 0x00]),
        Boundary(name: "case 2E chosen, Le 1", dataCount: 0, le: 1, extended: true, lc: [], leField: [0x00, 0x00, 0x01]),
        Boundary(name: "case 2E chosen, Le 256", dataCount: 0, le: 256, extended: true, lc: [], leField: [0x00, 0x01, 0x00]),
        Boundary(name: "case 3E chosen, 1 data byte", dataCount: 1, le: -1, extended: true, lc: [0x00, 0x00, 0x01], leField: []),
        Boundary(name: "case 4E chosen, 1 data byte, Le 256", dataCount: 1, le: 256, extended: true, lc: [0x00, 0x00, 0x01], leField: [0x01, 0x00]),
        Boundary(name: "case 1", dataCount: 0, le: -1, lc: [], leField: []),
        Boundary(name: "case 1 chosen extended (no length field to extend)", dataCount: 0, le: -1, extended: true, lc: [], leField: []),
    ]

    @Test("encodes built commands at the length boundaries, into an exact buffer and into an array", arguments: boundaries)
    func encodesBoundaries(_ b: Boundary) throws {
        let data = (0..<b.dataCount).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        var apdu = CommandAPDU(instructionClass: 0x80, instructionCode: 0xD6, p1Parameter: 0x12, p2Parameter: 0x34,
                               data: data, expectedResponseLength: b.le)
        apdu.usesExtendedLength = b.extended
        let expected = [0x80, 0xD6, 0x12, 0x34] + b.lc + data + b.leField
        #expect(apdu.encodedCount == expected.count)
        #expect(apdu.bytes == expected)
        // A buffer of exactly encodedCount bytes, in the middle of guard bytes that must survive.
        let guardCount = 16
        var memory = [UInt8](repeating: 0xEE, count: guardCount + apdu.encodedCount + guardCount)
        let written = memory.withUnsafeMutableBufferPointer { all in
            apdu.encode(into: UnsafeMutableBufferPointer(rebasing: all[guardCount..<(guardCount + apdu.encodedCount)]))
        }
        #expect(written == expected.count)
        #expect(Array(memory[guardCount..<(guardCount + written)]) == expected)
        #expect(memory.prefix(guardCount).allSatisfy { $0 == 0xEE })
        #expect(memory.suffix(guardCount).allSatisfy { $0 == 0xEE })
        // And it reads back as the same command (a chosen extended case 1 has nothing to show it).
        let back = try CommandAPDU(bytes: expected)
        #expect(back.data == data && back.expectedResponseLength == b.le)
        if b.dataCount > 0 || b.le != -1 { #expect(back.needsExtendedLength == apdu.needsExtendedLength) }
    }

    @Test("every prefix either parses or throws a typed error", arguments: cases)
    func prefixesNeverCrash(_ c: CommandCase) {
        let bytes = hex(c.hex)
        for n in 0...bytes.count {
            do {
                let apdu = try CommandAPDU(bytes: bytes.prefix(n))
                #expect(apdu.bytes.count <= n)
            } catch {
                #expect(n < bytes.count || error.code != .tooShort)
            }
        }
    }

    struct ErrorCase: Sendable, CustomStringConvertible {
        var hex: String
        var code: ISO7816Error.Code
        var why: String
        var description: String { why }
    }

    static let errors: [ErrorCase] = [
        ErrorCase(hex: "", code: .tooShort, why: "empty"),
        ErrorCase(hex: "00A404", code: .tooShort, why: "3-byte header"),
        ErrorCase(hex: "00A4040005A0000000", code: .lengthMismatch, why: "Lc 5 with 4 data bytes"),
        ErrorCase(hex: "00A4040002A0000000", code: .lengthMismatch, why: "Lc 2 with 4 bytes after it"),
        ErrorCase(hex: "00B000000001", code: .badExtendedLength, why: "extended marker with one length byte"),
        ErrorCase(hex: "00D60000000000AA", code: .badExtendedLength, why: "extended Lc 0000 with data"),
        ErrorCase(hex: "00D60000" + "000002" + "0102" + "00", code: .badExtendedLength, why: "extended Lc with a short Le"),
        ErrorCase(hex: "00D6000000000301" + "02", code: .lengthMismatch, why: "extended Lc 3 with 2 data bytes"),
    ]

    @Test("malformed commands throw their code", arguments: errors)
    func errorCodes(_ e: ErrorCase) {
        #expect { try CommandAPDU(bytes: hex(e.hex)) } throws: { error in
            (error as? ISO7816Error)?.code == e.code
        }
    }

    @Test("CoreNFC and CryptoTokenKit shapes of Le")
    func leSemantics() {
        #expect(CommandAPDU(ins: 0xB2, p1: 1, p2: 0x0C).expectedResponseLength == -1)
        #expect(CommandAPDU(ins: 0xB2, p1: 1, p2: 0x0C, le: 0).expectedResponseLength == 256)
        #expect(CommandAPDU(ins: 0xB2, p1: 1, p2: 0x0C, le: 0).bytes == [0x00, 0xB2, 0x01, 0x0C, 0x00])
        let long = [UInt8](repeating: 1, count: 256)
        let ext = CommandAPDU(ins: 0xD6, p1: 0, p2: 0, data: long, le: 0)
        #expect(ext.expectedResponseLength == 65536)
        #expect(ext.bytes.suffix(2) == [0x00, 0x00])
        #expect(ext.bytes[4...6] == [0x00, 0x01, 0x00])
        let coreNFC = CommandAPDU(instructionClass: 0, instructionCode: 0xB0, p1Parameter: 0, p2Parameter: 0,
                                  expectedResponseLength: 65536)
        #expect(coreNFC.bytes == [0x00, 0xB0, 0x00, 0x00, 0x00, 0x00, 0x00])
        #expect(coreNFC.isoCase == 2)
    }

    @Test("values from outside get badLength, not a trap")
    func validatingInit() throws {
        for le in [0, -2, 65537, Int.max] {
            #expect { try CommandAPDU(validatingClass: 0, instruction: 0xB0, p1: 0, p2: 0, expectedResponseLength: le) }
                throws: { ($0 as? ISO7816Error)?.code == .badLength }
        }
        #expect { try CommandAPDU(validatingClass: 0, instruction: 0xD6, p1: 0, p2: 0,
                                  data: [UInt8](repeating: 0, count: 65536)) }
            throws: { ($0 as? ISO7816Error)?.code == .badLength }
        let ok = try CommandAPDU(validatingClass: 0, instruction: 0xB0, p1: 0, p2: 0, expectedResponseLength: 65536)
        #expect(ok.expectedResponseLength == 65536)
    }

    @Test("the EMV commands encode as the specs write them")
    func emvCommands() {
        #expect(Hex.encode(CommandAPDU.selectPPSE.bytes) == "00A404000E325041592E5359532E444446303100")
        #expect(Hex.encode(CommandAPDU.select(name: [0xA0, 0, 0, 0, 0x03, 0x10, 0x10]).bytes) == "00A4040007A000000003101000")
        #expect(Hex.encode(CommandAPDU.select(name: [0xA0, 0, 0, 0, 0x03], nextOccurrence: true).bytes) == "00A4040205A00000000300")
        #expect(Hex.encode(CommandAPDU.getProcessingOptions(pdolData: []).bytes) == "80A80000028300" + "00")
        #expect(Hex.encode(CommandAPDU.getProcessingOptions(pdolData: [0x12, 0x34]).bytes) == "80A8000004" + "83021234" + "00")
        // From 128 bytes the template length takes the 81 form.
        let long = CommandAPDU.getProcessingOptions(pdolData: [UInt8](repeating: 0xAA, count: 200))
        #expect(long.data.prefix(3) == [0x83, 0x81, 0xC8])
        #expect(long.data.count == 203 && !long.needsExtendedLength)
        #expect(CommandAPDU.getProcessingOptions(pdolData: [UInt8](repeating: 0, count: 253)).needsExtendedLength)
        #expect(Hex.encode(CommandAPDU.readRecord(2, sfi: 1).bytes) == "00B2020C00")
        #expect(Hex.encode(CommandAPDU.readRecord(1, sfi: 3).bytes) == "00B2011C00")
        #expect(Hex.encode(CommandAPDU.generateAC(.arqc, cda: true, cdolData: [1, 2]).bytes) == "80AE9000020102" + "00")
        #expect(Hex.encode(CommandAPDU.generateAC(.tc, cdolData: [1]).bytes) == "80AE40000101" + "00")
        #expect(Hex.encode(CommandAPDU.getResponse(0x1A).bytes) == "00C000001A")
        #expect(Hex.encode(CommandAPDU.getResponse(0).bytes) == "00C0000000")
        #expect(Hex.encode(CommandAPDU.getData(tag: 0x9F36).bytes) == "80CA9F3600")
        #expect(CommandAPDU.readRecord(1, sfi: 1).withExpectedLength(0x1C).expectedResponseLength == 0x1C)
    }
}

@Suite("Command explanations")
struct CommandExplanationTests {
    struct Case: Sendable, CustomStringConvertible {
        var hex: String
        var summary: String
        var meanings: [String]
        var description: String { summary }
    }

    static let cases: [Case] = [
        Case(hex: "00A404000E325041592E5359532E444446303100", summary: "SELECT 2PAY.SYS.DDF01",
             meanings: ["P1 04: select by DF name (AID)", "P2 00: first or only occurrence, return FCI"]),
        Case(hex: "00A4040207A000000003101000", summary: "SELECT A0000000031010 (next occurrence)",
             meanings: ["P1 04: select by DF name (AID)", "P2 02: next occurrence, return FCI"]),
        Case(hex: "00B2021400", summary: "READ RECORD SFI 2 record 2",
             meanings: ["P1 02: record number 2", "P2 14: SFI 2, read record number P1"]),
        Case(hex: "00B2010400", summary: "READ RECORD SFI 0 record 1",
             meanings: ["P1 01: record number 1", "P2 04: currently selected EF, read record number P1"]),
        Case(hex: "80AE8000020102" + "00", summary: "GENERATE AC ARQC",
             meanings: ["P1 80: request ARQC, no CDA signature", "P2 00: 00"]),
        Case(hex: "80AE5000020102" + "00", summary: "GENERATE AC TC with CDA",
             meanings: ["P1 50: request TC, CDA signature requested", "P2 00: 00"]),
        Case(hex: "80AE0000020102" + "00", summary: "GENERATE AC AAC",
             meanings: ["P1 00: request AAC, no CDA signature", "P2 00: 00"]),
        Case(hex: "80A8000002830000", summary: "GET PROCESSING OPTIONS", meanings: ["P1 00 P2 00: always 00 00"]),
        Case(hex: "80CA9F1700", summary: "GET DATA 9F17", meanings: ["P1 9F P2 17: data object 9F17"]),
        Case(hex: "00C0000010", summary: "GET RESPONSE", meanings: ["P1 00 P2 00: always 00 00"]),
        Case(hex: "0084000008", summary: "GET CHALLENGE", meanings: []),
        Case(hex: "00EE000000", summary: "INS EE", meanings: []),
    ]

    @Test("summaries and P1/P2 meanings", arguments: cases)
    func explains(_ c: Case) throws {
        let apdu = try CommandAPDU(bytes: Hex.decode(c.hex))
        #expect(apdu.summary == c.summary)
        #expect(apdu.parameterMeanings == c.meanings)
    }

    @Test("instruction names depend on the class where EMV reuses codes")
    func instructionNames() {
        #expect(Instruction.name(cla: 0x00, ins: 0xA4) == "SELECT")
        #expect(Instruction.name(cla: 0x80, ins: 0xA8) == "GET PROCESSING OPTIONS")
        #expect(Instruction.name(cla: 0x00, ins: 0xA8) == nil)
        #expect(Instruction.name(cla: 0x80, ins: 0xAE) == "GENERATE AC")
        #expect(Instruction.name(cla: 0xFF, ins: 0xCA) == "GET DATA (PC/SC pseudo-APDU)")
        #expect(Instruction.name(cla: 0x00, ins: 0xEE) == nil)
    }
}
