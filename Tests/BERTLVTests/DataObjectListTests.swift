import Testing
@testable import BERTLV
import struct BERTLV.Tag

@Suite("Data object lists")
struct DataObjectListTests {
    static let visaPDOL = bytes("9F6604 9F0206 9F0306 9F1A02 9505 5F2A02 9A03 9C01 9F3704")

    @Test("parses tags and lengths, and encodes back")
    func parses() throws {
        let dol = try DataObjectList(bytes: Self.visaPDOL)
        #expect(dol.entries.map(\.tag.hex) == ["9F66", "9F02", "9F03", "9F1A", "95", "5F2A", "9A", "9C", "9F37"])
        #expect(dol.entries.map(\.length) == [4, 6, 6, 2, 5, 2, 3, 1, 4])
        #expect(dol.dataLength == 33)
        #expect(dol.bytes == Self.visaPDOL)
        #expect(dol.contains(.unpredictableNumber) && !dol.contains(.pan))
        #expect(try DataObjectList(bytes: []).entries.isEmpty)
    }

    /// EMV Book 3 §5.4: a DOL entry's length is one byte, not a BER length field. `DF01FF` is
    /// DF01 asking for 255 bytes (it was refused as "a length field of 127 bytes"), `81` is 129
    /// bytes and `80` is 128, each followed by the next entry.
    @Test("a DOL entry's length is one byte (0 to 255), not a BER length field", arguments: [
        ("DF01FF", [255]), ("DF01FF 9F3704", [255, 4]), ("9F0281 9505", [129, 5]), ("9F0280", [128]),
        ("9F0200 9A03", [0, 3]), ("9F02 82 01 00", [130, 0]),
    ])
    func oneByteLengths(_ hex: String, _ lengths: [Int]) throws {
        let dol = try DataObjectList(bytes: bytes(hex))
        #expect(dol.entries.map(\.length) == lengths)
        #expect(dol.bytes == bytes(hex))
        #expect(dol.build { _ in nil }.count == lengths.reduce(0, +))
    }

    struct BadDOL: Sendable, CustomStringConvertible {
        var hex: String
        var code: TLVError.Code
        var description: String { hex }
    }

    @Test("malformed lists throw their code", arguments: [
        BadDOL(hex: "9F02", code: .truncatedLength),
        BadDOL(hex: "9F", code: .truncatedTag),
        BadDOL(hex: "9F0206 00 04", code: .invalidTag),
        BadDOL(hex: "9F0206 9F", code: .truncatedTag),
        BadDOL(hex: "9F0206 DF01", code: .truncatedLength),
    ])
    func malformed(_ c: BadDOL) {
        #expect { try DataObjectList(bytes: bytes(c.hex)) } throws: { ($0 as? TLVError)?.code == c.code }
    }

    struct FitCase: Sendable, CustomStringConvertible {
        var value: String
        var length: Int
        var format: DataFormat
        var expected: String
        var description: String { "\(format) \(value) -> \(length)" }
    }

    /// EMV Book 3 §5.4: n is right-justified (cut and padded on the left), cn is left-justified
    /// and padded with F, everything else is left-justified, cut and padded on the right with 00.
    static let fits: [FitCase] = [
        FitCase(value: "1234", length: 6, format: .n, expected: "000000001234"),
        FitCase(value: "000000001234", length: 4, format: .n, expected: "00001234"),
        FitCase(value: "0978", length: 2, format: .n, expected: "0978"),
        FitCase(value: "99001234", length: 2, format: .n, expected: "1234"),
        FitCase(value: "4761739001", length: 8, format: .cn, expected: "4761739001FFFFFF"),
        FitCase(value: "4761739001010010", length: 4, format: .cn, expected: "47617390"),
        FitCase(value: "AABB", length: 4, format: .b, expected: "AABB0000"),
        FitCase(value: "AABBCCDD", length: 2, format: .b, expected: "AABB"),
        FitCase(value: "414243", length: 5, format: .ans, expected: "4142430000"),
        FitCase(value: "41424344", length: 2, format: .an, expected: "4142"),
        FitCase(value: "", length: 3, format: .b, expected: "000000"),
        FitCase(value: "", length: 2, format: .cn, expected: "FFFF"),
        FitCase(value: "AA", length: 0, format: .n, expected: ""),
    ]

    @Test("values fit by format", arguments: fits)
    func fit(_ c: FitCase) {
        #expect(hexString(DataObjectList.fit(bytes(c.value), to: c.length, format: c.format)) == c.expected)
    }

    @Test("build: each value from the source, fitted by its dictionary format; unknown tags give zeros")
    func build() throws {
        let dol = try DataObjectList(bytes: bytes("9F0206 5F2A02 9F3704 DF991203 9F1A03 5A0A 7002"))
        let source: [Tag: [UInt8]] = [
            .amountAuthorised: bytes("1234"),        // n: left-padded
            .transactionCurrencyCode: bytes("0978"),
            .unpredictableNumber: bytes("0102030405"), // b: cut on the right
            .terminalCountryCode: bytes("0724"),     // n given 2 for 3: left-padded
            .pan: bytes("4761739001010010"),          // cn: F-padded on the right
            0x70: bytes("AABB"),                      // constructed: zeros
        ]
        let data = dol.build { source[$0] }
        #expect(data.count == dol.dataLength)
        #expect(hexString(data) == "000000001234" + "0978" + "01020304" + "000000" + "000724"
                + "4761739001010010FFFF" + "0000")
        let split = try #require(dol.split(data))
        #expect(split[.transactionCurrencyCode] == bytes("0978"))
        #expect(split[0xDF9912] == [0, 0, 0])
        #expect(dol.split(data.dropLast()) == nil)
    }

    @Test("a custom format function overrides the dictionary")
    func customFormat() throws {
        let dol = try DataObjectList(bytes: bytes("9F3704"))
        let data = dol.build(format: { _ in .n }) { _ in bytes("0102") }
        #expect(data == bytes("00000102"))
    }
}
