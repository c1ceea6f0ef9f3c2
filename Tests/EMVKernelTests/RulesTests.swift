import BERTLV
import PaymentRules
@testable import EMVKernel
import ISO7816
import Testing

@Suite struct RedactionTests {
    let pan = PAN("4761739001010010")!

    @Test func panInARecordIsMaskedInPlace() {
        let record = ok(tlv(0x70, tlv(0x5A, Card.visaPAN), tlv(0x5F24, "281231"))).data
        #expect(SensitiveData.displayHex(record) == "70105A08476173******00105F2403281231")
    }

    @Test func track2KeepsExpiryAndServiceCodeOnly() {
        let gpo = ok(tlv(0x77, tlv(0x57, Card.visaTrack2))).data
        #expect(SensitiveData.displayHex(gpo) == "7713" + "5711" + "476173******0010" + "D2812201" + String(repeating: "*", count: 10))
        // An odd number of digits is padded with F, which stays.
        let amex = ok(tlv(0x57, "374245455400126D28122011000012345F")).data
        #expect(SensitiveData.displayHex(amex) == "5711" + "374245*****0126" + "D2812201" + String(repeating: "*", count: 10) + "F")
    }

    @Test func track1AndDiscretionaryDataAreMaskedWhole() {
        let data = ok(tlv(0x70, tlv(0x56, text: "B4761739001010010^TEST/CARD^2812"), tlv(0x9F1F, "3132"))).data
        let text = SensitiveData.displayHex(data)
        #expect(!text.contains(Hex.encode(Array("4761739001010010".utf8))))
        #expect(text.hasSuffix("9F1F02****"))
    }

    @Test func aCommandOrAWholeResponseIsSearchedToo() {
        let response = ok(tlv(0x70, tlv(0x5A, Card.visaPAN)))
        #expect(SensitiveData.displayHex(response) == "700A5A08476173******00109000")
        let command = CommandAPDU(cla: 0x80, ins: 0xCA, p1: 0, p2: 0, data: tlv(0x5A, Card.visaPAN).encoded, le: 0)
        #expect(SensitiveData.displayHex(command) == "80CA00000A5A08476173******001000")
        let extended = CommandAPDU(cla: 0x80, ins: 0xCA, p1: 0, p2: 0, data: tlv(0x5A, Card.visaPAN).encoded, le: 300)
        #expect(SensitiveData.displayHex(extended) == "80CA000000000A5A08476173******0010012C")
    }

    /// Bytes that are not TLV: a PAN is found by its content (Luhn-valid digit run), known or not.
    /// Every window of the run that may be a PAN is masked: here the 18 digits `476173…001000`,
    /// the PAN and the `00` after it, pass the Luhn check too, so two of the PAN's last four are
    /// masked with them — more hidden, never more shown.
    @Test func panInBytesThatAreNotTLVAreMasked() {
        let junk = bytes("FFFF" + Card.visaPAN + "00")
        #expect(SensitiveData.displayHex(junk) == "FFFF476173********1000")
        #expect(SensitiveData.displayHex(junk, knownPANs: [pan]) == "FFFF476173********1000")
    }

    @Test func otherDataIsUntouched() {
        let fci = Card.fci(Card.visaAID, pdol: Card.visaPDOL).data
        #expect(SensitiveData.displayHex(fci, knownPANs: [pan]) == Hex.encode(fci))
    }

    @Test func errorsDoNotLeakThroughReflection() {
        var k = makeKernel()
        let (_, last) = run(&k, [Card.ppse(Card.entry(Card.visaAID, label: "VISA")), Card.fci(Card.visaAID),
                                 Card.visaGPO(), status(0x6A83)])
        guard let error = last.failure else { Issue.record("no failure"); return }
        #expect(error.partial?.card?.pan.last4 == "0010")
        for text in [String(describing: error), String(reflecting: error), error.description] {
            #expect(!text.contains(Card.visaPAN))
        }
    }
}

@Suite struct CVMProcessingTests {
    func store(_ objects: TLV...) throws -> CardDataStore {
        var s = CardDataStore()
        try s.add(objects, step: .cardData)
        return s
    }

    struct CTQCase: Sendable {
        var ctq: String, amount: UInt64, cvm: CardholderVerification
    }

    @Test(arguments: [
        CTQCase(ctq: "0000", amount: 100, cvm: .noCVM),
        CTQCase(ctq: "8000", amount: 100, cvm: .onlinePIN),
        CTQCase(ctq: "0080", amount: 9000, cvm: .consumerDevice),
        CTQCase(ctq: "4000", amount: 100, cvm: .onlinePIN),        // signature asked, not supported: PIN instead
        CTQCase(ctq: "0000", amount: 9000, cvm: .onlinePIN),       // CVM required, the card named none
    ])
    func byCTQ(_ c: CTQCase) throws {
        let d = try CVMProcessing.decide(store: try store(tlv(0x9F6C, c.ctq)), aip: [0, 0], kernel: .c3,
                                         configuration: .default, transaction: Transaction(amount: c.amount))
        #expect(d.cvm == c.cvm)
    }

    @Test func byCTQWithSignatureSupport() throws {
        var config = TerminalConfiguration.default
        config.terminalCapabilities = [0xE0, 0x28, 0x08]   // signature and no CVM, no online PIN
        let d = try CVMProcessing.decide(store: try store(tlv(0x9F6C, "8000")), aip: [0, 0], kernel: .c3,
                                         configuration: config, transaction: Transaction(amount: 9000))
        #expect(d.cvm == .signature)
        #expect(d.results == bytes("1E0000"))
    }

    struct ListCase: Sendable {
        var list: String, amount: UInt64, cvm: CardholderVerification, results: String
    }

    // C-2 (Book C-2 §7.5): above the 50.00 limit the reader offers online PIN, at or below it no CVM.
    @Test(arguments: [
        ListCase(list: "000000000000000042031E031F03", amount: 9000, cvm: .onlinePIN, results: "420300"),
        ListCase(list: "000000000000000042031E031F03", amount: 100, cvm: .noCVM, results: "1F0302"),   // below the limit
        ListCase(list: "000000000000000042031E031F03", amount: 5000, cvm: .noCVM, results: "1F0302"),  // at it: C-2 says over
        ListCase(list: "000000000000000042031E031F03", amount: 5001, cvm: .onlinePIN, results: "420300"),
        ListCase(list: "000000000000000001001E03", amount: 9000, cvm: .failed, results: "010001"),    // offline PIN, no fallback
        ListCase(list: "000000000000000041000200", amount: 9000, cvm: .onlinePIN, results: "020000"),  // fall through
        ListCase(list: "000000000000000041001F00", amount: 9000, cvm: .failed, results: "1F0001"),     // no CVM not offered here
        ListCase(list: "000000000000000041001F00", amount: 100, cvm: .noCVM, results: "1F0002"),
        ListCase(list: "000013880000000042060200", amount: 9000, cvm: .onlinePIN, results: "020000"), // X = 50.00: not under
        ListCase(list: "000027100000000042061F00", amount: 9000, cvm: .onlinePIN, results: "420600"), // under X = 100.00
        ListCase(list: "000000000000138802095F081F00", amount: 9000, cvm: .onlinePIN, results: "020900"), // over Y = 50.00
        ListCase(list: "000000000000138802095F081F00", amount: 100, cvm: .noCVM, results: "5F0802"),    // under Y
        ListCase(list: "00000000000000000000", amount: 9000, cvm: .failed, results: "000001"),     // "fail CVM processing"
        ListCase(list: "00000000000000004000", amount: 9000, cvm: .failed, results: "3F0001"),     // fail, then nothing
        ListCase(list: "00000000000000001E031F03", amount: 9000, cvm: .failed, results: "3F0001"), // neither offered above
        ListCase(list: "00000000000000001E031F03", amount: 100, cvm: .noCVM, results: "1F0302"),
        ListCase(list: "00000000000000000202", amount: 9000, cvm: .onlinePIN, results: "020200"),  // not cash or cashback
        ListCase(list: "0000000000000000", amount: 9000, cvm: .failed, results: "3F0001"),
    ])
    func byList(_ c: ListCase) throws {
        let d = try CVMProcessing.decide(store: try store(tlv(0x8E, c.list), tlv(0x9F42, "0978")), aip: bytes("1800"),
                                         kernel: .c2, configuration: .default, transaction: Transaction(amount: c.amount))
        #expect(d.cvm == c.cvm)
        #expect(d.results == bytes(c.results))
    }

    @Test func cardWithoutCardholderVerification() throws {
        let d = try CVMProcessing.decide(store: try store(tlv(0x8E, "000000000000000042031F03")), aip: bytes("0000"),
                                         kernel: .c2, configuration: .default, transaction: Transaction(amount: 9000))
        #expect(d.cvm == .noCVM)
        #expect(d.results == bytes("3F0000"))
    }

    @Test func onDeviceCVMFromTheAIP() throws {
        let d = try CVMProcessing.decide(store: CardDataStore(), aip: bytes("1A00"), kernel: .c2, configuration: .default,
                                         transaction: Transaction(amount: 9000))
        #expect(d.cvm == .consumerDevice)
    }
}

@Suite struct AFLTests {
    @Test func parsesEntriesAndRecords() throws {
        let afl = try AFLEntry.parse(bytes("08010100" + "10010301" + "18020200"))
        #expect(afl == [AFLEntry(sfi: 1, firstRecord: 1, lastRecord: 1),
                        AFLEntry(sfi: 2, firstRecord: 1, lastRecord: 3, offlineAuthenticationRecords: 1),
                        AFLEntry(sfi: 3, firstRecord: 2, lastRecord: 2)])
        #expect(AFLEntry.records(afl).map(\.description) == [
            "record 1/SFI 1", "record 1/SFI 2", "record 2/SFI 2", "record 3/SFI 2", "record 2/SFI 3",
        ])
        #expect(afl.flatMap(\.bytes) == bytes("08010100" + "10010301" + "18020200"))
        #expect(try AFLEntry.parse([]).isEmpty)
        #expect(try AFLEntry.parse(bytes("F0FFFF01")).first?.sfi == 30)
    }

    @Test(arguments: ["08", "080101", "00010100", "F8010100", "0C010100", "08000100", "08020100", "08010102",
                      "0801020008020300"])
    func rejects(_ hex: String) {
        #expect(throws: KernelError.self) { try AFLEntry.parse(bytes(hex)) }
        do { _ = try AFLEntry.parse(bytes(hex)) } catch { #expect(error.code == .invalidAFL) }
    }
}

@Suite struct BrandTests {
    @Test(arguments: [
        ("A0000000031010", PaymentNetwork.visa, UInt8(3)), ("A0000000032010", .visa, 3), ("A0000000041010", .mastercard, 2),
        ("A0000000043060", .maestro, 2), ("A00000002501", .amex, 4), ("A0000001523010", .discover, 6),
        ("A0000000651010", .jcb, 5), ("A000000333010102", .unionpay, 7), ("A0000002771010", .interac, 0),
        ("A0000000421010", .cartesBancaires, 0), ("A0000003591010028001", .girocard, 0), ("A0000009999999", .unknown, 0),
        ("A0000003841010", .eftpos, 0), ("A0000005241010", .rupay, 0), ("A0000006581010", .mir, 0),
    ])
    func brandFromAID(_ aid: String, _ brand: PaymentNetwork, _ kernel: UInt8) {
        #expect(PaymentNetwork(aid: bytes(aid)) == brand)
        #expect(brand.defaultKernelID == kernel)
    }

    @Test func everyDefaultAIDHasABrand() {
        for app in SupportedApplication.defaults {
            #expect(PaymentNetwork(aid: app.aid) != .unknown)
        }
    }
}
