import Testing
@testable import BERTLV
import PaymentRules
import struct BERTLV.Tag

@Suite("PAN, track 2, BCD and Luhn")
struct PANTrack2Tests {
    struct LuhnCase: Sendable, CustomStringConvertible {
        var digits: String
        var valid: Bool
        var description: String { "\(digits.prefix(6))…\(valid)" }
    }

    @Test("Luhn check", arguments: [
        LuhnCase(digits: "4761739001010010", valid: true),
        LuhnCase(digits: "4111111111111111", valid: true),
        LuhnCase(digits: "374245455400001", valid: true),
        LuhnCase(digits: "5413330089000013", valid: true),
        LuhnCase(digits: "4761739001010011", valid: false),
        LuhnCase(digits: "4111111111111112", valid: false),
        LuhnCase(digits: "0", valid: true),
        LuhnCase(digits: "", valid: false),
        LuhnCase(digits: "41111111111111x1", valid: false),
    ])
    func luhn(_ c: LuhnCase) {
        #expect(Luhn.isValid(c.digits) == c.valid)
    }

    @Test("one Luhn for text and for the digit runs the masking looks at: both forms agree")
    func luhnOnDigits() {
        for text in ["4761739001010010", "4111111111111111", "374245455400001", "4761739001010011", "0", "18", "19"] {
            let digits = text.map { $0.wholeNumberValue! }
            #expect(Luhn.isValid(digits: digits) == Luhn.isValid(text), "\(text)")
            #expect(Luhn.isValid(digits: digits[1...]) == Luhn.isValid(text.dropFirst()), "\(text) without its first digit")
        }
        #expect(!Luhn.isValid(digits: [Int]()))
        // The masking finds exactly the Luhn-valid window: one digit off and the run stays as it is.
        #expect(SensitiveData.maskedText("x4761739001010010x") == "x476173******0010x")
        #expect(SensitiveData.maskedText("x4761739001010011x") == "x4761739001010011x")
    }

    @Test("check digit")
    func checkDigit() {
        #expect(Luhn.checkDigit("476173900101001") == 0)
        #expect(Luhn.checkDigit("411111111111111") == 1)
        #expect(Luhn.checkDigit("41a") == nil)
    }

    struct MaskCase: Sendable, CustomStringConvertible {
        var digits: String
        var masked: String
        var description: String { masked }
    }

    @Test("masking keeps the first 6 and last 4", arguments: [
        MaskCase(digits: "4761739001010010", masked: "476173******0010"),
        MaskCase(digits: "374245455400001", masked: "374245*****0001"),
        MaskCase(digits: "4761739001010010123", masked: "476173*********0123"),
        MaskCase(digits: "476173900101", masked: "476173**0101"),
    ])
    func masking(_ c: MaskCase) throws {
        let pan = try #require(PAN(c.digits))
        #expect(pan.masked == c.masked)
        #expect(pan.description == c.masked)
        #expect("\(pan)" == c.masked)
        #expect(!pan.debugDescription.contains(c.digits))
        #expect(!String(reflecting: pan).contains(c.digits))
        #expect(pan.first6 == String(c.digits.prefix(6)) && pan.last4 == String(c.digits.suffix(4)))
    }

    @Test("PANs of the wrong shape are refused", arguments: ["", "12345678901", "12345678901234567890", "4761 7390 0101 0010", "476173900101001a", "٤٧٦١٧٣٩٠٠١٠١٠٠١٠"])
    func refused(_ s: String) {
        #expect(PAN(s) == nil)
    }

    @Test("PAN from tag 5A (cn), both ways")
    func bcd() throws {
        let pan = try PAN(bcd: bytes("4761739001010010"))
        #expect(pan.digits == Fixtures.testPAN)
        #expect(pan.isLuhnValid)
        let odd = try PAN(bcd: bytes("374245455400001F"))
        #expect(odd.digits == "374245455400001")
        #expect(odd.bcd == bytes("374245455400001F"))
        #expect { try PAN(bcd: bytes("47617390010100A0")) } throws: { ($0 as? TLVError)?.code == .badValue }
        #expect { try PAN(bcd: bytes("4761F39001010010")) } throws: { ($0 as? TLVError)?.code == .badValue }
        #expect { try PAN(bcd: bytes("476173")) } throws: { ($0 as? TLVError)?.code == .badValue }
    }

    @Test("track 2 parses into PAN, expiry, service code; its description is redacted")
    func track2() throws {
        let t = try Track2(bytes: bytes("4761739001010010D26112011000012300000F"))
        #expect(t.pan.digits == Fixtures.testPAN)
        #expect(t.expiry == "2611")
        #expect(t.serviceCode == "201")
        #expect(t.discretionaryData == "1000012300000")
        #expect(t.expiryIsPlausible)
        for text in [t.description, t.debugDescription, "\(t)", String(reflecting: t)] {
            #expect(!text.contains(Fixtures.testPAN))
            #expect(!text.contains("1000012300000"))
            #expect(text.contains("476173******0010"))
        }
    }

    @Test("malformed track 2 throws badValue", arguments: [
        "4761739001010010",                 // no separator
        "4761739001010010D2611F",           // too short after the separator
        "4761739001010010D261120110A0",     // nibble A
        "47617390D2611201100001",           // PAN too short
        "4761739001010010D2611201F00F",     // F inside
        "4761739001010010D2611201D0",       // second separator
        "",
    ])
    func malformedTrack2(_ hex: String) {
        #expect { try Track2(bytes: bytes(hex)) } throws: { ($0 as? TLVError)?.code == .badValue }
    }

    @Test("BCD digits, values and encodings")
    func bcdHelpers() throws {
        #expect(try BCD.digits(bytes("0978")) == "0978")
        #expect(try BCD.digits(bytes("12FF"), allowingTrailingF: true) == "12")
        #expect(throws: TLVError.self) { try BCD.digits(bytes("12F0"), allowingTrailingF: true) }
        #expect(throws: TLVError.self) { try BCD.digits(bytes("12F0")) }
        #expect(BCD.value(bytes("000000001234")) == 1234)
        #expect(BCD.value(bytes("1A")) == nil)
        #expect(BCD.value(bytes("09999999999999999999")) == 9_999_999_999_999_999_999 as UInt64?)
        #expect(BCD.value(bytes("99999999999999999999")) == nil)  // overflows UInt64
        #expect(BCD.encodeNumeric(1234, length: 6) == bytes("000000001234"))
        #expect(BCD.encodeNumeric(digits: "978", length: 2) == bytes("0978"))
        #expect(BCD.encodeCompressed("123") == bytes("123F"))
    }
}
