import Testing
@testable import BERTLV
import struct BERTLV.Tag

/// A valid single TLV object and what parsing must find in it.
struct TLVCase: Sendable, CustomStringConvertible {
    var name: String
    var hex: String
    /// Tags in document order, depth first, with their depth: "9F02@1".
    var outline: [String]
    /// Whether the encoding is minimal, so encoding the parse gives the same bytes.
    var minimal: Bool = true
    var description: String { name }
}

@Suite("BER-TLV parsing")
struct TLVParsingTests {
    static let cases: [TLVCase] = [
        TLVCase(name: "one-byte tag, short length", hex: "9A03261130", outline: ["9A@1"]),
        TLVCase(name: "two-byte tag", hex: "9F0206000000001234", outline: ["9F02@1"]),
        TLVCase(name: "three-byte tag", hex: "DF81290830F0F00098F0FF00", outline: ["DF8129@1"]),
        TLVCase(name: "four-byte tag", hex: "DF81810101AA", outline: ["DF818101@1"]),
        TLVCase(name: "empty value", hex: "8400", outline: ["84@1"]),
        TLVCase(name: "81 length", hex: "9081" + "80" + String(repeating: "11", count: 128), outline: ["90@1"]),
        TLVCase(name: "82 length", hex: "9082" + "0100" + String(repeating: "22", count: 256), outline: ["90@1"]),
        TLVCase(name: "83 length", hex: "9083" + "010000" + String(repeating: "33", count: 65536), outline: ["90@1"]),
        TLVCase(name: "constructed with children", hex: "6F09 8407A0000000031010",
                outline: ["6F@1", "84@2"]),
        TLVCase(name: "nested templates", hex: "A50BBF0C0861064F04A0000000", outline: ["A5@1", "BF0C@2", "61@3", "4F@4"]),
        TLVCase(name: "empty constructed", hex: "7000", outline: ["70@1"]),
        TLVCase(name: "PPSE FCI", hex: hexString(Fixtures.ppseFCI),
                outline: ["6F@1", "84@2", "A5@2", "BF0C@3", "61@4", "4F@5", "87@5", "9F0A@5"]),
        TLVCase(name: "Visa FCI", hex: hexString(Fixtures.visaFCI),
                outline: ["6F@1", "84@2", "A5@2", "50@3", "87@3", "9F38@3", "5F2D@3"]),
        TLVCase(name: "Visa record", hex: hexString(Fixtures.visaRecord),
                outline: ["70@1"] + ["57", "5F20", "9F1F", "5A", "5F24", "5F25", "5F28", "5F34", "9F07", "8E", "9F0D",
                                     "9F0E", "9F0F", "9F4A", "8C", "8D", "9F08", "5F30", "9F42", "9F44"].map { "\($0)@2" }),
        TLVCase(name: "Visa GPO format 2", hex: hexString(Fixtures.visaGPOFormat2),
                outline: ["77@1"] + ["82", "94", "57", "5F34", "9F10", "9F26", "9F27", "9F36", "9F6C", "9F6E", "5F20",
                                     "9F66"].map { "\($0)@2" }),
        TLVCase(name: "real PPSE FCI", hex: hexString(Fixtures.realPPSEFCI),
                outline: ["6F@1", "84@2", "A5@2", "BF0C@3", "61@4", "4F@5", "87@5", "9F0A@5"]),
        TLVCase(name: "real Visa FCI", hex: hexString(Fixtures.realVisaFCI),
                outline: ["6F@1", "84@2", "A5@2", "9F38@3", "BF0C@3", "9F5A@4", "BF63@4", "DF20@5", "9F0A@4"]),
        TLVCase(name: "non-minimal 81 length (EMV rules)", hex: "5A8108" + "4761739001010010", outline: ["5A@1"],
                minimal: false),
        TLVCase(name: "non-minimal 82 length (EMV rules)", hex: "9A820003261130", outline: ["9A@1"], minimal: false),
    ]

    static func outline(_ objects: [TLV]) -> [String] {
        var out: [String] = []
        func walk(_ nodes: [TLV], _ depth: Int) {
            for n in nodes {
                out.append("\(n.tag.hex)@\(depth)")
                walk(n.children, depth + 1)
            }
        }
        walk(objects, 1)
        return out
    }

    @Test("parses the tree", arguments: cases)
    func parses(_ c: TLVCase) throws {
        let objects = try BERTLV.parse(bytes(c.hex))
        #expect(Self.outline(objects) == c.outline)
        let single = try BERTLV.parseSingle(bytes(c.hex))
        #expect(single == objects[0])
    }

    @Test("encoding the parse gives the same bytes when the input was minimal", arguments: cases)
    func roundTrips(_ c: TLVCase) throws {
        let input = bytes(c.hex)
        let objects = try BERTLV.parse(input)
        if c.minimal {
            #expect(objects.encoded == input)
            // And under strict rules too.
            #expect(try BERTLV.parse(input, rules: .strict) == objects)
        } else {
            #expect(objects.encoded.count < input.count)
            #expect(try BERTLV.parse(objects.encoded) == objects.map { TLV(tag: $0.tag, value: Array($0.value)) })
        }
        // Rebuilding constructed objects from their children gives the same encoding.
        func rebuild(_ t: TLV) -> TLV {
            t.isConstructed ? TLV(tag: t.tag, children: t.children.map(rebuild)) : TLV(tag: t.tag, value: Array(t.value))
        }
        #expect(objects.map(rebuild).encoded == objects.encoded)
    }

    @Test("every proper prefix throws a truncation error, never crashes", arguments: cases)
    func truncatedAtEveryPrefix(_ c: TLVCase) {
        let input = bytes(c.hex)
        // The 64 KiB case: every prefix near the ends and a sample in between keeps this fast.
        let cuts = input.count < 2000 ? Array(0..<input.count)
            : Array(0..<64) + Array(stride(from: 64, to: input.count - 64, by: 997)) + Array((input.count - 64)..<input.count)
        for n in cuts {
            #expect(throws: TLVError.self) { try BERTLV.parseSingle(Array(input.prefix(n))) }
            do {
                _ = try BERTLV.parseSingle(Array(input.prefix(n)))
            } catch {
                #expect(error.isTruncation, "prefix \(n) of \(input.count): \(error.code)")
                if n > 0 { #expect(error.offset != nil) }
            }
        }
    }

    @Test("drip-fed byte by byte: needs more input until the last byte, then the same tree", arguments: cases)
    func dripFed(_ c: TLVCase) throws {
        let input = bytes(c.hex)
        guard input.count < 2000 else { return }
        var buffer: [UInt8] = []
        var completed: TLV?
        for b in input {
            #expect(completed == nil, "parsed before the last byte")
            buffer.append(b)
            do {
                completed = try BERTLV.parseSingle(buffer)
            } catch {
                #expect(error.isTruncation)
            }
        }
        #expect(try completed == BERTLV.parseSingle(input))
    }

    @Test("00 padding before, between and after objects (EMV Book 3 Annex B)")
    func padding() throws {
        let input = bytes("00 00 9A03261130 00 9C0100 0000 70 05 00 5F340101 00")
        let objects = try BERTLV.parse(input)
        #expect(Self.outline(objects) == ["9A@1", "9C@1", "70@1", "5F34@2"])
        #expect(try BERTLV.parseSingle(bytes("00 9A03261130 00 00")).tag == .transactionDate)
        #expect { try BERTLV.parse(input, rules: .strict) } throws: { ($0 as? TLVError)?.code == .padding }
        #expect(try BERTLV.parse(bytes("0000")).isEmpty)
    }

    @Test("strict rules reject non-minimal lengths and tags; EMV rules accept them")
    func strictVersusEMV() throws {
        for hex in ["5A8108 4761739001010010", "9A820003261130", "9A83000003261130", "9F800201AA"] {
            let input = bytes(hex)
            #expect(throws: Never.self) { try BERTLV.parse(input, rules: .emv) }
            #expect { try BERTLV.parse(input, rules: .strict) } throws: { ($0 as? TLVError)?.code == .nonMinimalEncoding }
        }
        let value = try BERTLV.parseSingle(bytes("5A8108 4761739001010010"))
        #expect(value.value.count == 8)
    }

    struct ErrorCase: Sendable, CustomStringConvertible {
        var hex: String
        var code: TLVError.Code
        var offset: Int?
        var rules: EncodingRules = .emv
        var single = false
        var description: String { "\(code) \(hex.prefix(24))" }
    }

    static let errors: [ErrorCase] = [
        ErrorCase(hex: "9F", code: .truncatedTag, offset: 0),
        ErrorCase(hex: "9F0206000000001234 DF81", code: .truncatedTag, offset: 9),
        ErrorCase(hex: "5A", code: .truncatedLength, offset: 1),
        ErrorCase(hex: "5A81", code: .truncatedLength, offset: 1),
        ErrorCase(hex: "5A8200", code: .truncatedLength, offset: 1),
        ErrorCase(hex: "5A0547617390", code: .truncatedValue, offset: 0),
        ErrorCase(hex: "70 06 5A0847617390", code: .truncatedValue, offset: 2),
        ErrorCase(hex: "DF8181818101AA", code: .tagTooLong, offset: 0),
        ErrorCase(hex: "5A80", code: .unsupportedLength, offset: 1),
        ErrorCase(hex: "5A84000000010A", code: .unsupportedLength, offset: 1),
        ErrorCase(hex: "5A8108" + "4761739001010010", code: .nonMinimalEncoding, offset: 1, rules: .strict),
        ErrorCase(hex: "0000 9A03261130", code: .padding, offset: 0, rules: .strict),
        ErrorCase(hex: "9A03261130 9C0100", code: .trailingBytes, offset: 5, single: true),
        ErrorCase(hex: "", code: .missingObject, offset: 0, single: true),
        ErrorCase(hex: "00 00", code: .missingObject, offset: 0, single: true),
        ErrorCase(hex: "9A00 9A00 9A00", code: .tooManyObjects, offset: 4,
                  rules: EncodingRules(allowsPadding: true, allowsNonMinimalEncoding: true, maxObjects: 2)),
    ]

    @Test("malformed input throws its code with the offset", arguments: errors)
    func errorCodes(_ e: ErrorCase) {
        do {
            if e.single {
                _ = try BERTLV.parseSingle(bytes(e.hex), rules: e.rules)
            } else {
                _ = try BERTLV.parse(bytes(e.hex), rules: e.rules)
            }
            Issue.record("no error")
        } catch {
            #expect(error.code == e.code)
            #expect(error.offset == e.offset)
            #expect(!error.description.isEmpty)
        }
    }

    @Test("nesting is bounded: 16 levels parse, 17 throw tooDeep")
    func nestingBound() throws {
        func nested(_ depth: Int) -> [UInt8] {
            var inner: [UInt8] = [0x80, 0x00]  // primitive leaf
            for _ in 0..<(depth - 1) { inner = [0xE1, UInt8(inner.count)] + inner }
            return inner
        }
        #expect(throws: Never.self) { try BERTLV.parse(nested(16)) }
        #expect { try BERTLV.parse(nested(17)) } throws: { ($0 as? TLVError)?.code == .tooDeep }
        // 5000 nested levels: bounded, no stack overflow.
        var deep: [UInt8] = [0x80, 0x00]
        for _ in 0..<5000 { deep = [0xE1, 0x82, UInt8(deep.count >> 8), UInt8(deep.count & 0xFF)] + deep }
        #expect { try BERTLV.parse(deep) } throws: { $0 is TLVError }
        let shallow = EncodingRules(allowsPadding: true, allowsNonMinimalEncoding: true, maxDepth: 2)
        #expect { try BERTLV.parse(nested(3), rules: shallow) } throws: { ($0 as? TLVError)?.code == .tooDeep }
    }

    @Test("rules asking for more than 4 tag or length bytes still cannot overflow")
    func absurdRules() {
        let loose = EncodingRules(allowsPadding: true, allowsNonMinimalEncoding: true, maxLengthBytes: 9, maxTagBytes: 9)
        #expect { try BERTLV.parse(bytes("5A88FFFFFFFFFFFFFFFF00"), rules: loose) }
            throws: { ($0 as? TLVError)?.code == .unsupportedLength }
        #expect { try BERTLV.parse(bytes("5A84FFFFFFFF00"), rules: loose) }
            throws: { ($0 as? TLVError)?.code == .truncatedValue }
        #expect { try BERTLV.parse(bytes("DF818181818101AA"), rules: loose) }
            throws: { ($0 as? TLVError)?.code == .tagTooLong }
    }

    @Test("lookup by tag: child, find, first")
    func lookup() throws {
        let record = try BERTLV.parseSingle(Fixtures.visaRecord)
        #expect(record.child(.pan)?.value.count == 8)
        #expect(record.child(.amountAuthorised) == nil)
        #expect(record.find(.cardholderName)?.valueBytes == Array("VISA TEST/CARD".utf8))
        let fci = try BERTLV.parse(Fixtures.ppseFCI)
        #expect(fci.find(.applicationIdentifier)?.valueBytes == bytes("A0000000031010"))
        #expect(fci.first(.fciTemplate) != nil)
        #expect(fci.first(.applicationIdentifier) == nil)  // not at the top level
        #expect(fci.flattened.count == 8)
    }

    @Test("parsing a slice reports offsets relative to the slice")
    func sliceOffsets() {
        let input = bytes("FFFF 5A05 4761")
        #expect { try BERTLV.parse(input[2...]) } throws: { ($0 as? TLVError)?.offset == 0 }
    }
}

@Suite("Tags")
struct TagTests {
    @Test("raw values read like the spec")
    func shape() {
        let t: Tag = 0x9F02
        #expect(t.bytes == [0x9F, 0x02])
        #expect(t.hex == "9F02")
        #expect(!t.isConstructed)
        #expect(t.tagClass == .contextSpecific)
        #expect(Tag.fciTemplate.isConstructed)
        #expect(Tag.fciTemplate.tagClass == .application)
        #expect(Tag(0xBF0C).isConstructed && Tag(0xBF0C).tagClass == .contextSpecific)
        #expect(Tag(0xDF8129).bytes == [0xDF, 0x81, 0x29])
        #expect(Tag(0xDF8129).tagClass == .private)
        #expect(Tag(bytes: [0x5F, 0x2A]) == .transactionCurrencyCode)
        #expect(Tag(bytes: []) == nil && Tag(bytes: [1, 2, 3, 4, 5]) == nil)
        #expect(Tag(0x5A) < Tag(0x9F02))
        #expect("\(Tag.amountAuthorised)" == "9F02")
    }
}

