import Testing
@testable import BERTLV
import PaymentRules
@testable import EMVDisplay
import struct BERTLV.Tag

@Suite("EMV tag dictionary")
struct EMVTagDictionaryTests {
    @Test("every Book 3 Annex A data object and the contactless ones are named")
    func coverage() {
        let required: [Tag] = [
            0x42, 0x4F, 0x50, 0x56, 0x57, 0x5A, 0x5F20, 0x5F24, 0x5F25, 0x5F28, 0x5F2A, 0x5F2D, 0x5F30, 0x5F34,
            0x5F36, 0x5F50, 0x5F53, 0x5F54, 0x5F55, 0x5F56, 0x61, 0x6F, 0x70, 0x71, 0x72, 0x73, 0x77, 0x80, 0x81,
            0x82, 0x83, 0x84, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8C, 0x8D, 0x8E, 0x8F, 0x90, 0x91, 0x92, 0x93, 0x94,
            0x95, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F01, 0x9F02, 0x9F03, 0x9F04, 0x9F05, 0x9F06,
            0x9F07, 0x9F08, 0x9F09, 0x9F0B, 0x9F0D, 0x9F0E, 0x9F0F, 0x9F10, 0x9F11, 0x9F12, 0x9F13, 0x9F14,
            0x9F15, 0x9F16, 0x9F17, 0x9F18, 0x9F1A, 0x9F1B, 0x9F1C, 0x9F1D, 0x9F1E, 0x9F1F, 0x9F20, 0x9F21,
            0x9F22, 0x9F23, 0x9F26, 0x9F27, 0x9F2D, 0x9F2E, 0x9F2F, 0x9F32, 0x9F33, 0x9F34, 0x9F35, 0x9F36,
            0x9F37, 0x9F38, 0x9F39, 0x9F3A, 0x9F3B, 0x9F3C, 0x9F3D, 0x9F40, 0x9F41, 0x9F42, 0x9F43, 0x9F44,
            0x9F45, 0x9F46, 0x9F47, 0x9F48, 0x9F49, 0x9F4A, 0x9F4B, 0x9F4C, 0x9F4D, 0x9F4E, 0x9F4F, 0xA5, 0xBF0C,
            // Contactless and scheme tags.
            0x9F0A, 0x9F2A, 0x9F29, 0x9F5B, 0x9F5D, 0x9F66, 0x9F69, 0x9F6B, 0x9F6C, 0x9F6E, 0x9F7C, 0x9F24,
            0x9F19, 0x9F25, 0x9F5A, 0xDF8129, 0xDF8115, 0xDF8123, 0xDF8124, 0xDF8125, 0xDF8126,
        ]
        for tag in required {
            #expect(EMVTagDictionary.info(tag) != nil, "\(tag.hex) missing")
        }
        #expect(EMVTagDictionary.all.count > 230)
    }

    @Test("entries are consistent: unique tags, constructed tags are templates, lengths sane")
    func consistency() {
        var seen = Set<Tag>()
        for info in EMVTagDictionary.entries {
            #expect(seen.insert(info.tag).inserted, "\(info.tag.hex) listed twice")
            #expect(!info.name.isEmpty)
            #expect(info.tag.isConstructed == (info.format == .template), "\(info.tag.hex) format \(info.format)")
            if let r = info.length { #expect(r.lowerBound >= 0 && r.upperBound <= 261, "\(info.tag.hex)") }
        }
        #expect(EMVTagDictionary.all.map(\.tag) == EMVTagDictionary.all.map(\.tag).sorted())
    }

    @Test("a line of EMVTags.tsv reads: tag, format, source, length, sensitive, name")
    func tableLine() throws {
        let amount = try #require(TagInfo(tableLine: "9F02\tn\tTerminal\t6\t-\tAmount, Authorised (Numeric)"))
        #expect(amount == TagInfo(0x9F02, "Amount, Authorised (Numeric)", .n, .terminal, length: 6...6))
        let track = try #require(TagInfo(tableLine: "57\tb\tICC\t0-19\tsensitive\tTrack 2 Equivalent Data"))
        #expect(track == TagInfo(0x57, "Track 2 Equivalent Data", .b, .card, length: 0...19, sensitive: true))
        let open = try #require(TagInfo(tableLine: "71\ttemplate\tIssuer\t-\t-\tIssuer Script Template 1"))
        #expect(open.length == nil && open.format == .template && open.source == .issuer)
    }

    @Test("an almost-right line of EMVTags.tsv is refused", arguments: [
        "9F02\tn\tTerminal\t6\t-",                 // no name
        "9F02\tn\tTerminal\t6\t-\t",               // an empty name
        "9F02\tn\tTerminal\t6\t-\tAmount\textra",  // a seventh field
        "9G02\tn\tTerminal\t6\t-\tAmount",          // a tag that is not hex
        "9F02\tN\tTerminal\t6\t-\tAmount",          // a format by another name
        "9F02\tn\tterminal\t6\t-\tAmount",          // a source by another name
        "9F02\tn\tTerminal\t6-5\t-\tAmount",        // a range upside down
        "9F02\tn\tTerminal\t6-\t-\tAmount",         // half a range
        "9F02\tn\tTerminal\t1-2-3\t-\tAmount",      // three bounds
        "9F02\tn\tTerminal\t6\tyes\tAmount",        // a flag other than sensitive or -
        "9F02 n Terminal 6 - Amount",                // spaces for tabs
    ])
    func tableLineRefused(line: String) {
        #expect(TagInfo(tableLine: Substring(line)) == nil)
    }

    @Test("formats drive DOL padding; unknown tags are binary")
    func formats() {
        #expect(EMVTagDictionary.format(of: .amountAuthorised) == .n)
        #expect(EMVTagDictionary.format(of: .pan) == .cn)
        #expect(EMVTagDictionary.format(of: .terminalTransactionQualifiers) == .b)
        #expect(EMVTagDictionary.format(of: .applicationLabel) == .ans)
        #expect(EMVTagDictionary.format(of: 0xDF9999) == .b)
        #expect(EMVTagDictionary.info(.transactionDate)?.source == .terminal)
        #expect(EMVTagDictionary.info(.applicationCryptogram)?.source == .card)
    }

    @Test("PAN, track and PIN data are marked sensitive")
    func sensitive() {
        for tag: Tag in [0x5A, 0x57, 0x56, 0x9F6B, 0x99, 0x9F1F, 0x9F20] { #expect(EMVValueDecoder.isSensitive(tag)) }
        for tag: Tag in [0x5F20, 0x9F02, 0x5F24, 0x9F26] { #expect(!EMVValueDecoder.isSensitive(tag)) }
    }
}

@Suite("EMV value decoding")
struct EMVDecoderTests {
    func decode(_ tag: Tag, _ hex: String, context: [TLV] = []) -> DecodedValue? {
        EMVValueDecoder.decode(TLV(tag: tag, value: bytes(hex)), context: context)
    }

    static let recordTags: [Tag] = [0x57, 0x5F20, 0x9F1F, 0x5A, 0x5F24, 0x5F25, 0x5F28, 0x5F34, 0x9F07, 0x8E, 0x9F0D,
                                    0x9F0E, 0x9F0F, 0x9F4A, 0x8C, 0x8D, 0x9F08, 0x5F30, 0x9F42, 0x9F44]

    @Test("a real-shaped Visa record: every object named and decoded, the PAN never in full")
    func visaRecord() throws {
        let record = try BERTLV.parse(Fixtures.visaRecord)
        let ctx = EMVValueDecoder.Context(record)
        let objects = record[0].children
        #expect(objects.map(\.tag) == Self.recordTags)
        for o in objects {
            #expect(EMVValueDecoder.name(of: o.tag, in: ctx) != nil, "\(o.tag.hex) has no name")
            let d = try #require(EMVValueDecoder.decode(o, in: ctx), "\(o.tag.hex) not decoded")
            #expect(!d.description.contains(Fixtures.testPAN))
            #expect(!d.description.contains("malformed"), "\(o.tag.hex): \(d.text)")
        }
        func text(_ tag: Tag) -> String? { objects.first { $0.tag == tag }.flatMap { EMVValueDecoder.describe($0, context: record) } }
        #expect(text(0x5A) == "476173******0010 (16 digits, Luhn OK)")
        #expect(text(0x57) == "476173******0010, expires 2026-11, service code 201, discretionary data hidden")
        #expect(text(0x5F20) == "\"VISA TEST/CARD\"")
        #expect(text(0x5F24) == "2026-11-30")
        #expect(text(0x5F25) == "2021-01-01")
        #expect(text(0x5F28) == "USA (United States)")
        #expect(text(0x9F42) == "USD (US dollar)")
        #expect(text(0x9F44) == "2 decimal places")
        #expect(text(0x9F1F) == "redacted (16 bytes)")
        #expect(text(0x9F4A) == "82 Application Interchange Profile (AIP)")
        #expect(text(0x8E)?.hasPrefix("X = 0, Y = 0, 3 rules; Enciphered PIN verified online, if terminal supports the CVM; if unsuccessful, apply next rule") == true)
        #expect(text(0x8C)?.hasPrefix("8 data objects, 29 bytes of data; 9F02 Amount, Authorised (Numeric) [6]") == true)
        #expect(text(0x5F30)?.hasPrefix("201; international interchange, use IC where feasible") == true)
        #expect(text(0x9F0E) == "byte 2 bit 5: Requested service not allowed for card product")
    }

    @Test("a GPO format 2 response: ARQC, ATC, AIP, AFL, IAD, CTQ, form factor")
    func visaGPO() throws {
        let gpo = try BERTLV.parse(Fixtures.visaGPOFormat2)
        let ctx = EMVValueDecoder.Context(gpo)
        for o in gpo[0].children {
            #expect(EMVValueDecoder.name(of: o.tag, in: ctx) != nil)
            if o.tag != .applicationCryptogram { #expect(EMVValueDecoder.decode(o, in: ctx) != nil, "\(o.tag.hex)") }
        }
        func text(_ tag: Tag) -> String? { gpo.find(tag).flatMap { EMVValueDecoder.describe($0, context: gpo) } }
        #expect(text(0x9F27) == "ARQC (online authorisation requested)")
        #expect(text(0x9F36) == "66")
        #expect(text(0x82) == "byte 1 bit 6: DDA supported")
        #expect(text(0x94) == "SFI 1, record 1")
        #expect(text(0x9F10) == "Visa: CVN 12 (18), DKI 01, CVR 03A00000")
        #expect(text(0x9F6E)?.hasPrefix("standard card (form factor indicator version 1); byte 2 bit 7: Signature panel") == true)
        #expect(text(0x9F66)?.hasPrefix("4 set; byte 1 bit 6: EMV mode supported") == true)
        #expect(text(0x9F6C)?.contains("Switch interface for cash transactions") == true)
        #expect(text(0x57)?.contains(Fixtures.testPAN) == false)
    }

    @Test("the FCI: AIDs by brand, PPSE by name, the PDOL as a list, languages")
    func fci() throws {
        let ppse = try BERTLV.parse(Fixtures.ppseFCI)
        #expect(ppse.find(0x84).flatMap { EMVValueDecoder.describe($0) } == "\"2PAY.SYS.DDF01\" — Proximity Payment System Environment (PPSE)")
        #expect(ppse.find(0x4F).flatMap { EMVValueDecoder.describe($0) } == "Visa credit or debit")
        #expect(ppse.find(0x87).flatMap { EMVValueDecoder.describe($0) } == "priority 1")
        let fci = try BERTLV.parse(Fixtures.visaFCI)
        let pdol = try #require(fci.find(.pdol).flatMap { EMVValueDecoder.decode($0, context: fci) })
        #expect(pdol.text == "9 data objects, 33 bytes of data")
        // With a Visa AID in the context, shared tags take the Visa name.
        #expect(pdol.details.first == "9F66 Terminal Transaction Qualifiers (TTQ) (Visa) [4]")
        #expect(fci.find(0x5F2D).flatMap { EMVValueDecoder.describe($0) } == "en, fr")
        #expect(fci.find(0x50).flatMap { EMVValueDecoder.describe($0) } == "\"VISA CREDIT\"")
    }

    @Test("real captured FCIs (Apple Pay Visa): every EMV object named; the PDOL asks for 9F4E")
    func realFCIs() throws {
        let ppse = try BERTLV.parse(Fixtures.realPPSEFCI)
        let ctx = EMVValueDecoder.Context(ppse)
        for o in ppse.flattened { #expect(EMVValueDecoder.name(of: o.tag, in: ctx) != nil, "\(o.tag.hex)") }
        let fci = try BERTLV.parse(Fixtures.realVisaFCI)
        let fciContext = EMVValueDecoder.Context(fci)
        // BF63 and its DF20 are Visa-proprietary objects without a public name.
        let named = fci.flattened.filter { EMVValueDecoder.name(of: $0.tag, in: fciContext) != nil }.map(\.tag.hex)
        #expect(named == ["6F", "84", "A5", "9F38", "BF0C", "9F5A", "9F0A"])
        let pdol = try #require(fci.find(.pdol).flatMap { EMVValueDecoder.decode($0, in: fciContext) })
        #expect(pdol.text == "10 data objects, 53 bytes of data")
        #expect(pdol.details.last == "9F4E Merchant Name and Location [20]")
    }

    @Test("scheme-specific names when the context tells the scheme")
    func schemeNames() {
        let visa = EMVValueDecoder.Context([TLV(tag: 0x4F, value: bytes("A0000000031010"))])
        let mc = EMVValueDecoder.Context([TLV(tag: 0x84, value: bytes("A0000000041010"))])
        let none = EMVValueDecoder.Context([])
        #expect(EMVValueDecoder.name(of: 0x9F6C, in: visa) == "Card Transaction Qualifiers (CTQ) (Visa)")
        #expect(EMVValueDecoder.name(of: 0x9F6C, in: mc) == "Mag-stripe Application Version Number (Card) (Mastercard)")
        #expect(EMVValueDecoder.name(of: 0x9F6C, in: none)?.contains(" / ") == true)
        #expect(EMVValueDecoder.name(of: 0x9F02, in: mc) == "Amount, Authorised (Numeric)")
        #expect(EMVValueDecoder.name(of: 0xDF9999, in: mc) == nil)
        #expect(EMVValueDecoder.Context([], scheme: .amex).scheme == .amex)
        // The Mastercard meaning of 9F6C is not decoded as a CTQ.
        #expect(EMVValueDecoder.decode(TLV(tag: 0x9F6C, value: bytes("0001")), in: mc) == nil)
    }

    struct Case: Sendable, CustomStringConvertible {
        var tag: UInt32
        var hex: String
        var text: String
        var context: String = ""
        var description: String { "\(String(tag, radix: 16, uppercase: true)) \(hex)" }
    }

    static let cases: [Case] = [
        // Amounts with the currency from the context; exponents from ISO 4217 or 5F36.
        Case(tag: 0x9F02, hex: "000000001234", text: "EUR 12.34", context: "5F2A020978"),
        Case(tag: 0x9F02, hex: "000000001234", text: "JPY 1234", context: "5F2A020392"),
        Case(tag: 0x9F02, hex: "000000001234", text: "KWD 1.234", context: "5F2A020414"),
        Case(tag: 0x9F02, hex: "000000000005", text: "USD 0.05", context: "5F2A020840"),
        Case(tag: 0x9F02, hex: "000000001234", text: "EUR 1.234", context: "5F2A020978 5F360103"),
        Case(tag: 0x9F02, hex: "000000001234", text: "12.34 (no currency given; 2 decimals assumed)"),
        Case(tag: 0x9F02, hex: "000000001234", text: "999 12.34 (2 decimals assumed)", context: "5F2A020999"),
        Case(tag: 0x9F03, hex: "000000000000", text: "GBP 0.00", context: "5F2A020826"),
        Case(tag: 0x81, hex: "000004D2", text: "EUR 12.34", context: "5F2A020978"),
        Case(tag: 0x9F02, hex: "00000000123A", text: "malformed (expected BCD digits)"),
        Case(tag: 0xDF8124, hex: "000000005000", text: "EUR 50.00", context: "5F2A020978"),
        // Currencies and countries.
        Case(tag: 0x5F2A, hex: "0978", text: "EUR (Euro)"),
        Case(tag: 0x5F2A, hex: "0999", text: "currency 999"),
        Case(tag: 0x9F1A, hex: "0724", text: "ESP (Spain)"),
        Case(tag: 0x9F1A, hex: "0826", text: "GBR (United Kingdom)"),
        Case(tag: 0x5F28, hex: "0001", text: "country 001"),
        Case(tag: 0x9F1A, hex: "07", text: "malformed (expected a 3-digit BCD code)"),
        Case(tag: 0x5F2A, hex: "1000", text: "malformed (expected a 3-digit BCD code)"),
        Case(tag: 0x5F2A, hex: "10000000000000000000", text: "malformed (expected a 3-digit BCD code)"),
        Case(tag: 0x5F28, hex: "99999999999999999999", text: "malformed (expected a 3-digit BCD code)"),
        // An amount beside a currency code that is not one: the amount, and the code called malformed.
        Case(tag: 0x81, hex: "000004D2", text: "12.34 (currency code 5F2A malformed; 2 decimals assumed)",
             context: "5F2A0A10000000000000000000"),
        Case(tag: 0x9F02, hex: "000000001234", text: "1.234 (currency code 5F2A malformed)",
             context: "5F2A03000978 5F360103"),
        Case(tag: 0x9F3A, hex: "00000064", text: "1.00 (currency code 9F3C malformed; 2 decimals assumed)",
             context: "9F3C01FF"),
        // Dates and times.
        Case(tag: 0x9A, hex: "261130", text: "2026-11-30"),
        Case(tag: 0x9A, hex: "991231", text: "1999-12-31"),
        Case(tag: 0x9A, hex: "240229", text: "2024-02-29"),
        Case(tag: 0x9A, hex: "250229", text: "invalid date 250229 (YYMMDD)"),
        Case(tag: 0x5F24, hex: "261331", text: "invalid date 261331 (YYMMDD)"),
        Case(tag: 0x5F24, hex: "2611", text: "malformed (expected YYMMDD in BCD)"),
        Case(tag: 0x9F21, hex: "100000", text: "10:00:00"),
        Case(tag: 0x9F21, hex: "246000", text: "invalid time 246000 (HHMMSS)"),
        // Bit fields.
        Case(tag: 0x82, hex: "1980", text: "4 set"),
        Case(tag: 0x95, hex: "0000000000", text: "none set"),
        Case(tag: 0x95, hex: "0000008000", text: "byte 4 bit 8: Transaction exceeds floor limit"),
        Case(tag: 0x95, hex: "8000", text: "byte 1 bit 8: Offline data authentication was not performed (expected 5 bytes, got 2)"),
        Case(tag: 0x9B, hex: "E800", text: "4 set"),
        Case(tag: 0x9F66, hex: "B6204000", text: "7 set"),
        Case(tag: 0x9F33, hex: "E0F8C8", text: "11 set"),
        Case(tag: 0x9F40, hex: "6000F0A001", text: "9 set"),
        Case(tag: 0x9F6C, hex: "0080", text: "byte 2 bit 8: Consumer device CVM performed"),
        Case(tag: 0x9F6C, hex: "0001", text: "byte 2 bit 1: RFU"),
        // Codes.
        Case(tag: 0x9F27, hex: "40", text: "TC (approved offline)"),
        Case(tag: 0x9F27, hex: "00", text: "AAC (declined)"),
        Case(tag: 0x9F27, hex: "80", text: "ARQC (online authorisation requested)"),
        Case(tag: 0x9F34, hex: "1F0302", text: "No CVM required, if terminal supports the CVM: successful"),
        Case(tag: 0x9F34, hex: "420300", text: "Enciphered PIN verified online, if terminal supports the CVM: unknown"),
        Case(tag: 0x9F34, hex: "3F0000", text: "No CVM performed, always: unknown"),
        Case(tag: 0x9C, hex: "00", text: "purchase (goods and services)"),
        Case(tag: 0x9C, hex: "20", text: "refund / return"),
        Case(tag: 0x9F35, hex: "22", text: "merchant, attended, offline with online capability"),
        Case(tag: 0x9F39, hex: "07", text: "contactless chip (EMV)"),
        Case(tag: 0x9F2A, hex: "03", text: "kernel 3 (C-3, Visa)"),
        Case(tag: 0x87, hex: "81", text: "priority 1, cardholder confirmation required"),
        Case(tag: 0x88, hex: "01", text: "SFI 1"),
        Case(tag: 0x8A, hex: "3030", text: "\"00\" (approved)"),
        Case(tag: 0x9F11, hex: "01", text: "ISO/IEC 8859-1"),
        Case(tag: 0x9F4D, hex: "0B0A", text: "log in SFI 11, 10 record(s)"),
        Case(tag: 0x8F, hex: "92", text: "CA public key index 92"),
        Case(tag: 0x9F32, hex: "03", text: "public key exponent 3"),
        Case(tag: 0x9F47, hex: "010001", text: "public key exponent 65537"),
        // Structures.
        Case(tag: 0x94, hex: "08010100 10010301 18010200", text: "3 entries"),
        Case(tag: 0x94, hex: "080101", text: "malformed (expected 4-byte entries)"),
        Case(tag: 0x94, hex: "08020100", text: "SFI 1, records 2-1 (invalid entry) (malformed)"),
        Case(tag: 0x8E, hex: "000000000000000042", text: "malformed (expected amount X, amount Y and 2-byte rules)"),
        Case(tag: 0x9F38, hex: "9F02", text: "malformed (expected a data object list)"),
        Case(tag: 0x9F69, hex: "01A1B2C3D43000", text: "fDDA version 01, card unpredictable number A1B2C3D4, CTQ 3000"),
        Case(tag: 0x9F69, hex: "9F6A04", text: "1 data object, 4 bytes of data"),
        Case(tag: 0x80, hex: "1980 08010100", text: "GET PROCESSING OPTIONS response: AIP 1980, AFL SFI 1, record 1"),
        Case(tag: 0x80, hex: "80 0001 1122334455667788 06011203A00000",
             text: "GENERATE AC response: ARQC (online authorisation requested), ATC 1, AC 1122334455667788, IAD 06011203A00000"),
        // Text and digits.
        Case(tag: 0x50, hex: "56495341", text: "\"VISA\""),
        Case(tag: 0x50, hex: "56490A22", text: "\"VI\\x0A\\\"\""),
        Case(tag: 0x9F15, hex: "5411", text: "5411"),
        Case(tag: 0x9F25, hex: "0010", text: "0010"),
        Case(tag: 0x5F34, hex: "01", text: "1"),
        // PAN and tracks: masked, malformed ones redacted too.
        Case(tag: 0x5A, hex: "4761739001010011", text: "476173******0011 (16 digits, Luhn check FAILS)"),
        Case(tag: 0x5A, hex: "47617390010100A0", text: "malformed PAN (8 bytes, redacted)"),
        Case(tag: 0x57, hex: "4761739001010010", text: "malformed track 2 (8 bytes, redacted)"),
        Case(tag: 0x9F6B, hex: "4761739001010010D2611201", text: "476173******0010, expires 2026-11, service code 201, discretionary data hidden"),
        Case(tag: 0x56, hex: "42343736313733393030313031303031305E544553542F434152445E3236313132303131303030", // B4761…^TEST/CARD^2611201…
             text: "476173******0010, name \"TEST/CARD\", discretionary data hidden"),
        Case(tag: 0x99, hex: "0102030405060708", text: "redacted (8 bytes)"),
    ]

    @Test("values decode by tag", arguments: cases)
    func decodes(_ c: Case) throws {
        let context = try BERTLV.parse(bytes(c.context))
        let d = try #require(decode(Tag(c.tag), c.hex, context: context))
        #expect(d.text == c.text)
        #expect(!d.description.contains(Fixtures.testPAN))
    }

    @Test("bit fields list their set bits by name")
    func bitNames() throws {
        let tvr = try #require(decode(0x95, "8000048000"))
        #expect(tvr.details == ["byte 1 bit 8: Offline data authentication was not performed",
                                "byte 3 bit 3: Online PIN entered",
                                "byte 4 bit 8: Transaction exceeds floor limit"])
        let caps = try #require(decode(0x9F33, "E0F8C8"))
        #expect(caps.details.contains("byte 1 bit 8: Card data input: manual key entry"))
        #expect(caps.details.contains("byte 2 bit 7: CVM: enciphered PIN for online verification"))
        #expect(caps.details.contains("byte 3 bit 4: Security: CDA"))
        let ttq = try #require(decode(0x9F66, "B6204000"))
        #expect(ttq.details.contains("byte 2 bit 6: (Contact chip) offline PIN supported"))
        #expect(ttq.details.contains("byte 3 bit 7: Consumer device CVM supported"))
        let more = try #require(decode(0x9F40, "6000F0A001"))
        #expect(more.details.contains("byte 4 bit 8: Data output: print, attendant"))
        #expect(more.details.contains("byte 5 bit 1: Code table 1"))
        #expect(caps.fields != nil)
    }

    @Test("CVM list rules and AFL entries as lines")
    func lists() throws {
        let cvm = try #require(decode(0x8E, "000003E8 00000000 4103 0206 1F00"))
        #expect(cvm.details == [
            "Plaintext PIN verification performed by ICC, if terminal supports the CVM; if unsuccessful, apply next rule",
            "Enciphered PIN verified online, if transaction is in the application currency and is under X (1000); if unsuccessful, cardholder verification fails",
            "No CVM required, always; if unsuccessful, cardholder verification fails",
        ])
        let afl = try #require(decode(0x94, "08010100 10010301"))
        #expect(afl.details == ["SFI 1, record 1", "SFI 2, records 1-3, 1 for offline data authentication"])
    }

    @Test("constructed objects and tags with nothing to add decode to nil; unknown text tags fall back by format")
    func nothingToSay() {
        #expect(decode(0x9F26, "1122334455667788") == nil)
        #expect(decode(0xDF9999, "01") == nil)
        #expect(EMVValueDecoder.decode(TLV(tag: 0x70, children: [])) == nil)
        #expect(decode(0x9F4E, "53484F50")?.text == "\"SHOP\"")
        #expect(decode(0x9F01, "000000123456")?.text == "000000123456")
    }

    @Test("amount formatting")
    func amounts() {
        #expect(EMVValueDecoder.formatAmount(1234, exponent: 2) == "12.34")
        #expect(EMVValueDecoder.formatAmount(5, exponent: 2) == "0.05")
        #expect(EMVValueDecoder.formatAmount(5, exponent: 3) == "0.005")
        #expect(EMVValueDecoder.formatAmount(0, exponent: 2) == "0.00")
        #expect(EMVValueDecoder.formatAmount(1234, exponent: 0) == "1234")
        #expect(EMVValueDecoder.formatAmount(UInt64.max, exponent: 2) == "184467440737095516.15")
    }

    /// Issue 18: `tapemu tlv decode 8101ff5f2a0a10000000000000000000` trapped converting the
    /// currency's BCD value (above Int.max) to an Int while decoding the amount beside it.
    @Test("an amount beside a 20-digit currency code decodes, the code marked malformed")
    func hugeCurrencyCode() throws {
        // The issue's input: a 1-byte binary amount (itself malformed: 81 has 4 bytes) and the code.
        let objects = try BERTLV.parse(bytes("8101ff5f2a0a10000000000000000000"))
        let ctx = EMVValueDecoder.Context(objects)
        #expect(EMVValueDecoder.decode(objects[0], in: ctx)?.text == "malformed (expected four bytes)")
        let code = try #require(EMVValueDecoder.decode(objects[1], in: ctx))
        #expect(code.text == "malformed (expected a 3-digit BCD code)")
        #expect(code.fields == .object(["malformed": .bool(true)]))

        // A well-formed amount beside the same code: the amount, and the code called malformed.
        let amount = try #require(EMVValueDecoder.decode(TLV(tag: 0x81, value: bytes("000000FF")), context: objects))
        #expect(amount.text == "2.55 (currency code 5F2A malformed; 2 decimals assumed)")
        guard case .object(let fields)? = amount.fields else { Issue.record("no fields"); return }
        #expect(fields["currencyMalformed"] == .bool(true))
        #expect(fields["currency"] == nil)
    }

    @Test("numeric codes: exactly two BCD bytes of at most 3 digits, else nil",
          arguments: [("0978", 978), ("0000", 0), ("0999", 999), ("1000", nil), ("97", nil), ("09", nil),
                      ("0A78", nil), ("000978", nil), ("99999999999999999999", nil), ("", nil)] as [(String, Int?)])
    func numericCodes(hex: String, expected: Int?) {
        #expect(ISOCodes.numericCode(bcd: bytes(hex)) == expected)
    }

    @Test("ISO code tables")
    func isoCodes() {
        #expect(ISOCodes.currency(978)?.code == "EUR")
        #expect(ISOCodes.currency(code: "jpy")?.exponent == 0)
        #expect(ISOCodes.country(724)?.alpha3 == "ESP")
        #expect(ISOCodes.country(1) == nil)
    }
}
