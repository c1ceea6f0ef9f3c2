import BERTLV
import PaymentRules
@testable import EMVKernel
import ISO7816
import Testing

/// Texts the kernel builds only when someone reads them (the CVM decision's reason): each must be,
/// word for word, what the kernel built eagerly before.
@Suite struct LazyTextTests {
    func store(_ objects: TLV...) throws -> CardDataStore {
        var s = CardDataStore()
        try s.add(objects, step: .cardData)
        return s
    }

    static func configuration(capabilities: [UInt8]? = nil, exponent: UInt8? = nil, ttq: [UInt8]? = nil,
                              terminalType: UInt8? = nil, limits: [UInt8: UInt64] = [:]) -> TerminalConfiguration {
        var c = TerminalConfiguration.default
        if let capabilities { c.terminalCapabilities = capabilities }
        if let exponent { c.currencyExponent = exponent }
        if let ttq { c.terminalTransactionQualifiers = ttq }
        if let terminalType { c.terminalType = terminalType }
        c.cvmRequiredLimits = limits
        return c
    }

    static var noMethod: TerminalConfiguration {
        var c = configuration(capabilities: [0xE0, 0x00, 0x08])
        c.cvmCapabilityNoCVMRequired = 0
        return c
    }

    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var objects: [(UInt32, String)]
        var aip: String
        var kernel: ContactlessKernel
        var configuration: TerminalConfiguration
        var amount: UInt64
        var type: TransactionType = .purchase
        var description: String { name }
    }

    static let cases: [Case] = [
        // The card transaction qualifiers (C-1, C-3, C-7).
        Case(name: "ctq none below", objects: [(0x9F6C, "0000")], aip: "0000", kernel: .c3,
             configuration: .default, amount: 100),
        Case(name: "ctq online PIN", objects: [(0x9F6C, "8000")], aip: "0000", kernel: .c3,
             configuration: .default, amount: 100),
        Case(name: "ctq consumer device", objects: [(0x9F6C, "0080")], aip: "0000", kernel: .c3,
             configuration: .default, amount: 9000),
        Case(name: "ctq signature asked, PIN instead", objects: [(0x9F6C, "4000")], aip: "0000", kernel: .c3,
             configuration: .default, amount: 100),
        Case(name: "ctq none above", objects: [(0x9F6C, "0000")], aip: "0000", kernel: .c3,
             configuration: .default, amount: 9000),
        Case(name: "ctq signature", objects: [(0x9F6C, "4000")], aip: "0000", kernel: .c1,
             configuration: configuration(capabilities: [0xE0, 0x28, 0x08]), amount: 9000),
        Case(name: "ctq none above, signature", objects: [(0x9F6C, "0000")], aip: "0000", kernel: .c7,
             configuration: configuration(capabilities: [0xE0, 0x28, 0x08]), amount: 9000),
        Case(name: "ctq asked, nothing", objects: [(0x9F6C, "C0001234")], aip: "0000", kernel: .c3,
             configuration: configuration(capabilities: [0xE0, 0x08, 0x08], ttq: [0x36, 0, 0, 0]), amount: 9000),
        Case(name: "ctq exponent 0, own limit", objects: [(0x9F6C, "0000")], aip: "0000", kernel: .c3,
             configuration: configuration(exponent: 0, limits: [3: 7]), amount: 7),
        Case(name: "ctq exponent 3", objects: [(0x9F6C, "0000")], aip: "0000", kernel: .c3,
             configuration: configuration(exponent: 3, limits: [3: 123_456]), amount: 5),
        // The CVM list (the other kernels).
        Case(name: "no CVM list", objects: [], aip: "1000", kernel: .c2, configuration: .default, amount: 9000),
        Case(name: "no CVM support", objects: [(0x8E, "000000000000000042031F03")], aip: "0000", kernel: .c2,
             configuration: .default, amount: 9000),
        Case(name: "on device", objects: [], aip: "1A00", kernel: .c2, configuration: .default, amount: 9000),
        Case(name: "list PIN", objects: [(0x8E, "000000000000000042031E031F03"), (0x9F42, "0978")], aip: "1800",
             kernel: .c2, configuration: .default, amount: 9000),
        Case(name: "list at limit", objects: [(0x8E, "000000000000000042031E031F03"), (0x9F42, "0978")], aip: "1800",
             kernel: .c2, configuration: .default, amount: 5000),
        Case(name: "list no fallback", objects: [(0x8E, "000000000000000001001E03")], aip: "1800", kernel: .c2,
             configuration: .default, amount: 9000),
        Case(name: "list fall through", objects: [(0x8E, "000000000000000041000200")], aip: "1800", kernel: .c2,
             configuration: .default, amount: 9000),
        Case(name: "list under X", objects: [(0x8E, "000027100000000042061F00"), (0x9F42, "0978")], aip: "1800",
             kernel: .c2, configuration: .default, amount: 9000),
        Case(name: "list over X", objects: [(0x8E, "00000BB80000000042071F00"), (0x9F42, "0978")], aip: "1800",
             kernel: .c2, configuration: .default, amount: 9000),
        Case(name: "list over Y", objects: [(0x8E, "000000000000138802095F081F00"), (0x9F42, "0978")], aip: "1800",
             kernel: .c2, configuration: .default, amount: 9000),
        Case(name: "list under Y", objects: [(0x8E, "000000000000138802085F081F00"), (0x9F42, "0978")], aip: "1800",
             kernel: .c2, configuration: .default, amount: 100),
        Case(name: "list fail CVM", objects: [(0x8E, "00000000000000000000")], aip: "1800", kernel: .c2,
             configuration: .default, amount: 9000),
        Case(name: "list no rule", objects: [(0x8E, "00000000000000001E031F03")], aip: "1800", kernel: .c2,
             configuration: .default, amount: 9000),
        Case(name: "list empty", objects: [(0x8E, "0000000000000000")], aip: "1800", kernel: .c2,
             configuration: .default, amount: 9000),
        Case(name: "list names", objects: [(0x8E, "0000000000000000430144024503460444054A0A7E0001031F00")],
             aip: "1800", kernel: .c4, configuration: configuration(terminalType: 0x25), amount: 9000,
             type: .cashAdvance),
        Case(name: "list cashback", objects: [(0x8E, "000000000000000042051F00")], aip: "1800", kernel: .c5,
             configuration: configuration(capabilities: [0xE0, 0x68, 0x08]), amount: 100, type: .purchaseWithCashback),
        Case(name: "list exponent 0", objects: [(0x8E, "000000640000000A42061F00"), (0x9F42, "0978")], aip: "1800",
             kernel: .c2, configuration: configuration(exponent: 0), amount: 9),
        Case(name: "list unattended cash", objects: [(0x8E, "00000000000000000401")], aip: "1800", kernel: .c2,
             configuration: configuration(terminalType: 0x25), amount: 9000, type: .cashAdvance),
        Case(name: "list manual cash", objects: [(0x8E, "00000000000000000504")], aip: "1800", kernel: .c2,
             configuration: .default, amount: 9000, type: .cashAdvance),
        Case(name: "list cashback rule", objects: [(0x8E, "00000000000000000305")], aip: "1800", kernel: .c2,
             configuration: .default, amount: 100, type: .purchaseWithCashback),
        Case(name: "list unknown method", objects: [(0x8E, "00000000000000003E00")], aip: "1800", kernel: .c2,
             configuration: .default, amount: 100),
        Case(name: "list no method offered", objects: [(0x8E, "00000000000000001E00")], aip: "1800", kernel: .c2,
             configuration: noMethod, amount: 100),
    ]

    static let expected: [String: String] = [
        "ctq asked, nothing":
            "card transaction qualifiers 9F6C C000: the card asks for a CVM this reader cannot do, and the reader has none to offer",
        "ctq consumer device":
            "card transaction qualifiers 9F6C 0080: consumer device CVM performed (byte 2 bit 8)",
        "ctq exponent 0, own limit":
            "card transaction qualifiers 9F6C 0000: 7 is at or above the 7 CVM required limit and the card names no CVM: online PIN",
        "ctq exponent 3":
            "card transaction qualifiers 9F6C 0000: the card asks for no CVM, and 0.005 is below the 123.456 CVM required limit",
        "ctq none above":
            "card transaction qualifiers 9F6C 0000: 90.00 is at or above the 50.00 CVM required limit and the card names no CVM: online PIN",
        "ctq none above, signature":
            "card transaction qualifiers 9F6C 0000: 90.00 is at or above the 50.00 CVM required limit and the card names no CVM: signature",
        "ctq none below":
            "card transaction qualifiers 9F6C 0000: the card asks for no CVM, and 1.00 is below the 50.00 CVM required limit",
        "ctq online PIN":
            "card transaction qualifiers 9F6C 8000: online PIN required (byte 1 bit 8)",
        "ctq signature":
            "card transaction qualifiers 9F6C 4000: signature required (byte 1 bit 7)",
        "ctq signature asked, PIN instead":
            "card transaction qualifiers 9F6C 4000: the card asks for a CVM this reader cannot do: online PIN",
        "list PIN":
            "CVM list rule 1 of 3 (42 03: online PIN, if the terminal supports the CVM); above the 50.00 CVM required limit the reader offers online PIN",
        "list at limit":
            "CVM list rule 3 of 3 (1F 03: no CVM required, if the terminal supports the CVM); at or below the 50.00 CVM required limit the reader offers no CVM",
        "list cashback":
            "CVM list rule 2 of 2 (1F 00: no CVM required, always); at or below the 50.00 CVM required limit the reader offers no CVM",
        "list cashback rule":
            "CVM list rule 1 of 1 (03 05: plaintext offline PIN and signature, if purchase with cashback): the reader does not offer it, and the rule says not to go on; at or below the 50.00 CVM required limit the reader offers no CVM",
        "list empty":
            "no rule of the CVM list applies; above the 50.00 CVM required limit the reader offers online PIN",
        "list exponent 0":
            "CVM list rule 2 of 2 (1F 00: no CVM required, always); at or below the 5000 CVM required limit the reader offers no CVM",
        "list fail CVM":
            "CVM list rule 1 of 1 (00 00: fail CVM processing, always): fail CVM processing; above the 50.00 CVM required limit the reader offers online PIN",
        "list fall through":
            "CVM list rule 2 of 2 (02 00: online PIN, always); above the 50.00 CVM required limit the reader offers online PIN",
        "list manual cash":
            "CVM list rule 1 of 1 (05 04: enciphered offline PIN and signature, if manual cash): the reader does not offer it, and the rule says not to go on; above the 50.00 CVM required limit the reader offers online PIN",
        "list names":
            "CVM list rule 9 of 9 (1F 00: no CVM required, always): the reader does not offer it, and the rule says not to go on; above the 50.00 CVM required limit the reader offers online PIN",
        "list no fallback":
            "CVM list rule 1 of 2 (01 00: plaintext PIN verified offline, always): the reader does not offer it, and the rule says not to go on; above the 50.00 CVM required limit the reader offers online PIN",
        "list no method offered":
            "CVM list rule 1 of 1 (1E 00: signature, always): the reader does not offer it, and the rule says not to go on; at or below the 50.00 CVM required limit the reader offers no method",
        "list no rule":
            "no rule of the CVM list applies; above the 50.00 CVM required limit the reader offers online PIN",
        "list over X":
            "CVM list rule 1 of 2 (42 07: online PIN, if over X = 30.00); above the 50.00 CVM required limit the reader offers online PIN",
        "list over Y":
            "CVM list rule 1 of 3 (02 09: online PIN, if over Y = 50.00); above the 50.00 CVM required limit the reader offers online PIN",
        "list unattended cash":
            "CVM list rule 1 of 1 (04 01: enciphered PIN verified offline, if unattended cash): the reader does not offer it, and the rule says not to go on; above the 50.00 CVM required limit the reader offers online PIN",
        "list under X":
            "CVM list rule 1 of 2 (42 06: online PIN, if under X = 100.00); above the 50.00 CVM required limit the reader offers online PIN",
        "list under Y":
            "CVM list rule 1 of 3 (02 08: online PIN, if under Y = 50.00): the reader does not offer it, and the rule says not to go on; at or below the 50.00 CVM required limit the reader offers no CVM",
        "list unknown method":
            "CVM list rule 1 of 1 (3E 00: method 3E, always): the reader does not offer it, and the rule says not to go on; at or below the 50.00 CVM required limit the reader offers no CVM",
        "no CVM list":
            "the card has no CVM list (8E): none performed",
        "no CVM support":
            "the card does not support cardholder verification (AIP byte 1 bit 5): none performed",
        "on device":
            "90.00 is above the 50.00 CVM required limit, and the card supports on-device cardholder verification (AIP byte 1 bit 2)",
    ]

    @Test(arguments: cases)
    func cvmReasonIsTheOldText(_ c: Case) throws {
        var s = CardDataStore()
        try s.add(c.objects.map { tlv($0.0, $0.1) }, step: .cardData)
        let d = try CVMProcessing.decide(store: s, aip: bytes(c.aip), kernel: c.kernel, configuration: c.configuration,
                                         transaction: Transaction(amount: c.amount, type: c.type))
        #expect(d.reason == Self.expected[c.name])
    }
}

/// The fast paths of the read give what the general code gave.
@Suite struct ReadFastPathTests {
    @Test func reasonSetFromOutsideAndEquality() throws {
        var s = CardDataStore()
        try s.add([tlv(0x9F6C, "0000")], step: .cardData)
        func decide(_ amount: UInt64) throws -> CVMDecision {
            try CVMProcessing.decide(store: s, aip: [0, 0], kernel: .c3, configuration: .default,
                                     transaction: Transaction(amount: amount))
        }
        let a = try decide(100), b = try decide(100), c = try decide(200)
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(a != c)   // same CVM and results, another amount in the reason
        #expect(a.cvm == c.cvm && a.results == c.results)
        var d = a
        d.reason = "set by hand"
        #expect(d.reason == "set by hand")
        #expect(d != a)
        d.reason = a.reason
        #expect(d == a && d.hashValue == a.hashValue)
    }

    /// The first record of an entry that an earlier entry of the same file named, as the set of
    /// records seen so far found it.
    @Test(arguments: [
        ("18010300" + "18020200", "AFL entry 2: record 2 of SFI 3 is named twice"),
        ("18030500" + "18010400", "AFL entry 2: record 3 of SFI 3 is named twice"),
        ("18050600" + "18010200" + "18010900", "AFL entry 3: record 1 of SFI 3 is named twice"),
        ("18050600" + "18080900" + "18070900", "AFL entry 3: record 8 of SFI 3 is named twice"),
        ("18050600" + "18080900" + "18040900", "AFL entry 3: record 5 of SFI 3 is named twice"),
        ("18010100" + "10010100" + "20010100" + "10010200", "AFL entry 4: record 1 of SFI 2 is named twice"),
    ])
    func aflRecordNamedTwice(_ c: (String, String)) {
        do {
            _ = try AFLEntry.parse(bytes(c.0))
            Issue.record("no error for \(c.0)")
        } catch {
            #expect(error.code == .invalidAFL)
            #expect(error.reason == c.1)
        }
    }

    @Test func aflWithoutOverlapIsAccepted() throws {
        let afl = try AFLEntry.parse(bytes("18010200" + "18030400" + "20010400" + "18050500"))
        #expect(afl.count == 4)
        #expect(AFLEntry.records(afl).count == 9)
    }

    /// `Expiry(yymm:)` as it read any text before: two integers from the first and last two characters.
    @Test(arguments: ["2812", "0001", "9912", "2813", "2800", "281", "28123", "", "+1+2", "-1-2", "2 12",
                      "１２１２", "28\u{0661}2", "2812\u{301}", "ab12", "1a12"])
    func expiryFromYYMM(_ text: String) {
        var old: Expiry?
        if text.count == 4, let yy = Int(text.prefix(2)), let mm = Int(text.suffix(2)), (1...12).contains(mm) {
            old = Expiry(year: 2000 + yy, month: mm)
        }
        #expect(Expiry(yymm: text) == old)
        #expect(Expiry(yymm: Substring(text)) == old)
    }

    /// A TLV made from part of an array holds a copy whose indices start at 0, as the generic
    /// initialiser gave.
    @Test func tlvFromASlice() {
        let bytes: [UInt8] = [1, 2, 3, 4, 5]
        let fromSlice = TLV(tag: 0x9F36, value: bytes[2...])
        let generic = TLV(tag: 0x9F36, value: AnySequence(bytes[2...]))
        #expect(fromSlice == generic)
        #expect(fromSlice.value.startIndex == 0 && generic.value.startIndex == 0)
        #expect(Array(fromSlice.value) == [3, 4, 5])
        #expect(fromSlice.encoded == generic.encoded)
    }

    /// The terminal's data objects: the shared ones, those of the transaction, and the changes
    /// the kernel makes, as one dictionary.
    @Test func terminalValuesShadowAndRemove() {
        var v = TerminalData.make(configuration: .default, transaction: Transaction(amount: 1250), dateTime: testDate,
                                  unpredictableNumber: testUN)
        let before = v.dictionary
        #expect(before[.cvmResults] == bytes("3F0000"))
        #expect(before[.amountAuthorised] == bytes("000000001250"))
        #expect(before[.unpredictableNumber] == bytes("12345678"))
        v[.cvmResults] = bytes("1F0002")
        v[.terminalVerificationResults]![2] |= 0x80
        var after = before
        after[.cvmResults] = bytes("1F0002")
        after[.terminalVerificationResults]![2] |= 0x80
        #expect(v.dictionary == after)
        v[.cvmResults] = nil
        v[.transactionDate] = nil
        after[.cvmResults] = nil
        after[.transactionDate] = nil
        #expect(v.dictionary == after)
        #expect(v[.cvmResults] == nil && v[.transactionDate] == nil)
        // Another kernel of the same configuration and amount still has the shared values.
        let w = TerminalData.make(configuration: .default, transaction: Transaction(amount: 1250), dateTime: testDate,
                                  unpredictableNumber: testUN)
        #expect(w.dictionary == before)
        // Another amount gets its own.
        let x = TerminalData.make(configuration: .default, transaction: Transaction(amount: 9000), dateTime: testDate,
                                  unpredictableNumber: testUN)
        #expect(x[.amountAuthorised] == bytes("000000009000"))
        #expect(x[.terminalTransactionQualifiers] != before[.terminalTransactionQualifiers])
    }
    /// Track 2's errors, word for word as the character-by-character parse gave them.
    @Test(arguments: [
        ("4761739001010010", "track 2 has no field separator D"),
        ("", "track 2 has no field separator D"),
        ("4761739001010010D2611F", "track 2 too short after the separator (expiry and service code need 7 digits)"),
        ("4761739001010010D2611201D0", "track 2 too short after the separator (expiry and service code need 7 digits)"),
        ("4761739001010010D261120110A0", "track 2 holds nibble A"),
        ("B0", "track 2 holds nibble B"),
        ("0C", "track 2 holds nibble C"),
        ("47617390D2611201100001", "track 2 PAN of 8 digit(s) (12 to 19 expected)"),
        ("47617390010100101234D2611201100001", "track 2 PAN of 20 digit(s) (12 to 19 expected)"),
        ("4761739001010010D2611201F00F", "track 2 has F padding inside its data"),
        ("FF", "track 2 has F padding inside its data"),
    ])
    func track2Errors(_ c: (String, String)) {
        do {
            _ = try Track2(bytes: bytes(c.0))
            Issue.record("no error for \(c.0)")
        } catch {
            #expect(error.code == .badValue)
            #expect(error.reason == c.1)
        }
    }

    @Test func track2Fields() throws {
        let t = try Track2(bytes: bytes("4761739001010010D2611201100001234F"))
        #expect(t.pan == PAN("4761739001010010"))
        #expect(t.expiry == "2611" && t.serviceCode == "201" && t.discretionaryData == "100001234")
        #expect(t.bytes == bytes("4761739001010010D2611201100001234F"))
        let short = try Track2(bytes: bytes("476173900101D2611201"))
        #expect(short.pan.digits == "476173900101" && short.discretionaryData.isEmpty)
    }

    /// `text(_:)` as it was: ISO 8859-1, control characters dropped, trailing spaces trimmed.
    @Test(arguments: ["VISA CREDIT", "VISA CREDIT   ", "   ", "", " A ", "A\u{7F}B  ", "caf\u{E9}  ", "\u{85}X \u{A0}",
                      "TAB\tEND  ", "MASTERCARD"])
    func textOfBytes(_ s: String) {
        // Latin-1 bytes of the test string (each scalar below 256).
        let bytes = s.unicodeScalars.map { UInt8($0.value) }
        func old(_ bytes: [UInt8]) -> String {
            if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
                var s = String(decoding: bytes, as: UTF8.self)
                while s.last == " " { s.removeLast() }
                return s
            }
            var s = String(String.UnicodeScalarView(bytes.compactMap { b in
                (b >= 0x20 && b != 0x7F && !(0x80..<0xA0).contains(b)) ? Unicode.Scalar(b) : nil
            }))
            while s.last == " " { s.removeLast() }
            return s
        }
        #expect(text(bytes) == old(bytes))
        #expect(text(bytes[...]) == old(bytes))
    }
    /// The online data objects, as the tag-by-tag lookups built them.
    @Test(arguments: [false, true])
    func onlineDataAsLookedUpTagByTag(_ withCDOL: Bool) throws {
        #expect(Set(TerminalData.onlineOrder.map(\.tag)).count == TerminalData.onlineOrder.count)
        var store = CardDataStore()
        try store.add([tlv(0x77, tlv(0x82, "1980"), tlv(0x94, "08010100"), tlv(0x9F36, "0041"), tlv(0x9F26, "1122334455667788"),
                                tlv(0x9F10, "06011203A00000"), tlv(0x5F34, "01"), tlv(0x9F6C, "1600"), tlv(0x9F6E, "20700000"),
                                tlv(0x57, "4761739001010010D28122011000012345"), tlv(0x9F66, "AABBCCDD"),
                                tlv(0x84, "A0000000049999"), tlv(0x9F7C, "0102"), tlv(0xDF01, "99"))],
                      step: .gpo)
        let terminal = TerminalData.make(configuration: .default, transaction: Transaction(amount: 1250), dateTime: testDate,
                                         unpredictableNumber: testUN)
        let requested = (withCDOL ? [0x9F1A, 0x9F35, 0x9F1E, 0x9F21, 0x9F41, 0x9F53, 0x9F09] : [0x9F66]).map { tlv($0, "").tag }
        let dfName = bytes("A0000000031010")
        var old: [TLV] = []
        for (tag, always) in TerminalData.onlineOrder {
            if tag == .dedicatedFileName {
                old.append(TLV(tag: tag, value: dfName))
            } else if let v = store[tag] {
                old.append(TLV(tag: tag, value: v))
            } else if tag == .cryptogramInformationData {
                old.append(TLV(tag: tag, value: [0x80]))
            } else if always || requested.contains(tag), let v = terminal[tag] {
                old.append(TLV(tag: tag, value: v))
            }
        }
        let new = TerminalData.onlineData(store: store, dfName: dfName, terminal: terminal, cid: 0x80, requested: requested)
        #expect(new == old)
        #expect(new.contains { $0.tag.rawValue == 0x9F66 && $0.value.elementsEqual(bytes("AABBCCDD")) })   // the card's, not the terminal's
        #expect(!new.contains { $0.tag.rawValue == 0x57 || $0.tag.rawValue == 0x5A })
    }
    /// The system environment's unpredictable numbers come from a pool refilled 64 at a time:
    /// across refills they stay fresh (no pool handed out twice).
    @Test func systemUnpredictableNumbersAcrossRefills() {
        let environment = KernelEnvironment.system
        let numbers = (0..<300).map { _ in environment.unpredictableNumber() }
        #expect(Set(numbers).count > 290)
        #expect(Set(numbers.prefix(64)) != Set(numbers.dropFirst(64).prefix(64)))
    }
    /// Printed and dumped as a struct of its four public properties, the reason written out.
    @Test func decisionPrintsItsReason() throws {
        var s = CardDataStore()
        try s.add([tlv(0x9F6C, "8000")], step: .cardData)
        let d = try CVMProcessing.decide(store: s, aip: [0, 0], kernel: .c3, configuration: .default,
                                         transaction: Transaction(amount: 100))
        let expected = "CVMDecision(cvm: \(String(reflecting: d.cvm)), results: \(String(reflecting: d.results)), "
            + "kernel: \(String(reflecting: d.kernel)), reason: \(String(reflecting: d.reason)))"
        #expect(String(describing: d) == expected)
        #expect(String(reflecting: d) == "EMVKernel." + expected)
        var dumped = ""
        dump(d, to: &dumped)
        #expect(dumped.contains("- reason: \"card transaction qualifiers 9F6C 8000: online PIN required (byte 1 bit 8)\""))
        #expect(Mirror(reflecting: d).children.map(\.label) == ["cvm", "results", "kernel", "reason"])
    }
    /// The kernel's terminal values show, in reflection, one list of tags and one of values in the
    /// order the kernel always listed them: the configuration's, then the transaction's.
    @Test func terminalValuesReflectInTheirOrder() {
        let v = TerminalData.make(configuration: .default, transaction: Transaction(amount: 1250), dateTime: testDate,
                                  unpredictableNumber: testUN)
        let children = Array(Mirror(reflecting: v).children)
        #expect(children.map(\.label) == ["tags", "values"])
        let tagList = children.first.map { Mirror(reflecting: $0.value).children.map { "\($0.value)" } } ?? []
        let tags = tagList.compactMap { UInt32($0, radix: 16) }
        #expect(tags == [0x9F1A, 0x5F2A, 0x5F36, 0x9F33, 0x9F40, 0x9F35, 0x9F1B, 0x9F15, 0x9F16, 0x9F1C, 0x9F4E, 0x9F01,
                         0x9F1E, 0x9F09, 0x9F39, 0x9F53, 0x9F34, 0x9F41,
                         0x9F02, 0x9F03, 0x81, 0x9F04, 0x9A, 0x9F21, 0x9C, 0x9F37, 0x9F66, 0x95])
        let values = children.last?.value as? [[UInt8]] ?? []
        #expect(values.count == tags.count)
        #expect(values[tags.firstIndex(of: 0x9F37)!] == bytes("12345678"))
        #expect(values[tags.firstIndex(of: 0x9A)!] == bytes("261130"))
    }

    @Test func storeAndReadingReflectTheirProperties() throws {
        var store = CardDataStore()
        try store.add([tlv(0x5F34, "01"), tlv(0x9F36, "0041")], step: .gpo)
        let children = Array(Mirror(reflecting: store).children)
        #expect(children.map(\.label) == ["objects", "tags", "values"])
        #expect(children.first?.value as? [TLV] == store.objects)
        var k = makeKernel()
        _ = k.start()
        _ = k.receive(Card.ppse(Card.entry(Card.visaAID, label: "VISA")))
        _ = k.receive(Card.fci(Card.visaAID, pdol: Card.visaPDOL))
        _ = k.receive(Card.visaGPO(afl: "18010100"))   // the online data point: the reading waits in the state
        guard case .onlineDataReady(let reading) = k.state else { Issue.record("state \(k.state)"); return }
        #expect(Mirror(reflecting: reading).children.map(\.label)
                    == ["application", "aip", "afl", "remaining", "data", "onlineDataWasReady"])
    }
}
