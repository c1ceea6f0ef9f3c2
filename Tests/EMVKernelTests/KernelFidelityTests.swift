import BERTLV
import PaymentRules
import CardChannel
@testable import EMVKernel
import ISO7816
import Testing
import VirtualCard

/// Issue 15: each kernel's book for the tags whose meaning differs (9F6C above all), EMV CVM-list
/// processing with the reader's capability following the CVM required limit, and selection
/// the way terminals do it (kernel identifier, extended selection, partial AIDs).
@Suite struct KernelFidelityTests {
    func store(_ objects: [TLV]) throws -> CardDataStore {
        var s = CardDataStore()
        try s.add(objects, step: .cardData)
        return s
    }

    /// The real girocard record of the issue: its CVM list says no CVM if supported, then online
    /// PIN; its 9F6C FFFF is no Card Transaction Qualifiers under a domestic kernel.
    static let girocardRecord = "701C8E0C00000000000000001F0302039F080200029F6C02FFFF9F4A0182"

    @Test(arguments: [(UInt64(1000), CardholderVerification.noCVM, "1F0302"), (5000, .noCVM, "1F0302"),
                      (5001, .onlinePIN, "020300"), (20000, .onlinePIN, "020300")])
    func theGirocardRecordReadsAsItsCVMListSays(_ amount: UInt64, _ cvm: CardholderVerification, _ results: String) throws {
        let record = try BERTLV.parse(bytes(Self.girocardRecord))
        let objects = try #require(record.first).children + [tlv(0x9F42, "0978")]
        let kernel = ContactlessKernel(kernelIdentifier: nil, brand: PaymentNetwork(aid: bytes("A0000003591010028001")))
        #expect(kernel.id == 0 && !kernel.definesCardTransactionQualifiers)
        let d = try CVMProcessing.decide(store: try store(objects), aip: bytes("1880"), kernel: kernel,
                                         configuration: .default, transaction: Transaction(amount: amount))
        #expect(d.cvm == cvm)
        #expect(d.results == bytes(results))
        #expect(d.reason.contains("CVM list rule"))
        // Read as Visa's CTQ (the old defect), FFFF would ask for online PIN at every amount.
        let asCTQ = try CVMProcessing.decide(store: try store(objects), aip: bytes("1880"), kernel: .c3,
                                             configuration: .default, transaction: Transaction(amount: amount))
        #expect(asCTQ.cvm == CardholderVerification.onlinePIN)
    }

    @Test func only_C1_C3_C7_read_9F6C_as_card_transaction_qualifiers() {
        for id: UInt8 in 1...7 {
            #expect(ContactlessKernel(id: id).definesCardTransactionQualifiers == [1, 3, 7].contains(id), "kernel \(id)")
        }
        #expect(!ContactlessKernel(id: 0).definesCardTransactionQualifiers)
        #expect(!ContactlessKernel(kernelIdentifier: [0x83, 0x00, 0x01], brand: .visa).definesCardTransactionQualifiers)
    }

    /// A Mastercard's 9F6C is its mag-stripe application version: never a CVM request.
    @Test func aMastercardsMagStripeVersionIsNotACTQ() throws {
        let objects = [tlv(0x8E, "00001388000000001F0602071F03"), tlv(0x9F42, "0978"), tlv(0x9F6C, "0001")]
        for (amount, cvm, results) in [(UInt64(4999), CardholderVerification.noCVM, "1F0602"),
                                       (5000, .noCVM, "1F0302"), (5001, .onlinePIN, "020700")] {
            let d = try CVMProcessing.decide(store: try store(objects), aip: bytes("1880"), kernel: .c2,
                                             configuration: .default, transaction: Transaction(amount: amount))
            #expect(d.cvm == cvm, "\(amount)")
            #expect(d.results == bytes(results), "\(amount)")
        }
    }

    /// Book B §3.3.2.5: byte 1 bits 8-7 of 9F2A say international (00) or domestic (10, 11).
    @Test(arguments: [
        ([UInt8(0x02)], PaymentNetwork.visa, UInt8(2), false), ([0x00], .visa, 3, false), ([0x03, 0x00, 0x00], .mastercard, 3, false),
        ([0x82, 0x00, 0x01], .girocard, 0, true), ([0xC1, 0x23, 0x45], .mastercard, 0, true), ([0x45], .jcb, 5, false),
    ])
    func kernelIdentifiers(_ identifier: [UInt8], _ brand: PaymentNetwork, _ id: UInt8, _ domestic: Bool) {
        let k = ContactlessKernel(kernelIdentifier: identifier, brand: brand)
        #expect(k.id == id)
        #expect((k.domesticIdentifier != nil) == domestic)
    }

    @Test func aKernelMayHaveItsOwnCVMRequiredLimit() throws {
        var config = TerminalConfiguration.default
        config.cvmRequiredLimits = [2: 10000]
        let objects = [tlv(0x8E, "000000000000000042031F03"), tlv(0x9F42, "0978")]
        let d = try CVMProcessing.decide(store: try store(objects), aip: bytes("1880"), kernel: .c2,
                                         configuration: config, transaction: Transaction(amount: 6000))
        #expect(d.cvm == .noCVM)
        #expect(d.reason.contains("100.00"))
    }

    @Test func cashAndCashbackConditions() throws {
        let list = "00000000000000004205020402011F00"   // PIN if cashback; PIN if manual cash; PIN if unattended cash
        let objects = [tlv(0x8E, list), tlv(0x9F42, "0978")]
        func cvm(_ type: TransactionType, terminalType: UInt8 = 0x22) throws -> [UInt8] {
            var config = TerminalConfiguration.default
            config.terminalType = terminalType
            return try CVMProcessing.decide(store: try store(objects), aip: bytes("1880"), kernel: .c2, configuration: config,
                                            transaction: Transaction(amount: 9000, type: type)).results
        }
        #expect(try cvm(.purchaseWithCashback) == bytes("420500"))
        #expect(try cvm(.cashAdvance) == bytes("020400"))
        #expect(try cvm(.cashAdvance, terminalType: 0x14) == bytes("020100"))
        #expect(try cvm(.purchase) == bytes("1F0001"))   // no rule but "always no CVM", not offered above the limit
    }
}

/// The new virtual cards, read by the kernel on both sides of every limit.
@Suite struct KernelFidelityCardTests {
    let reader = EMVReader(environment: testEnvironment)

    func read(_ name: String, amount: UInt64) async throws -> CardRead {
        let profile = try #require(CardProfiles.named(name))
        let channel = VirtualCardChannel(card: EmulatedCard(profile: profile), simulatesCardTime: false)
        return try await reader.read(channel: channel, transaction: Transaction(amount: amount))
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var card: String, amount: UInt64, cvm: CardholderVerification, results: String, kernel: String
        var testDescription: String { "\(card) at \(amount)" }
    }

    static let cases: [Case] = [
        // C-2 Mastercard, CVM list: no CVM under X = 50.00, online PIN over it; 9F6C 0001 ignored.
        Case(card: "mastercard-cvm-list", amount: 4999, cvm: .noCVM, results: "1F0602", kernel: "C-2 (Mastercard)"),
        Case(card: "mastercard-cvm-list", amount: 5000, cvm: .noCVM, results: "1F0302", kernel: "C-2 (Mastercard)"),
        Case(card: "mastercard-cvm-list", amount: 5001, cvm: .onlinePIN, results: "020700", kernel: "C-2 (Mastercard)"),
        // girocard: the record of the issue.
        Case(card: "girocard", amount: 1000, cvm: .noCVM, results: "1F0302", kernel: "none named (EMV Book 3 rules)"),
        Case(card: "girocard", amount: 5000, cvm: .noCVM, results: "1F0302", kernel: "none named (EMV Book 3 rules)"),
        Case(card: "girocard", amount: 5001, cvm: .onlinePIN, results: "020300", kernel: "none named (EMV Book 3 rules)"),
        // Maestro (C-2): online PIN if offered (bit 7: else go on), no CVM.
        Case(card: "maestro", amount: 5000, cvm: .noCVM, results: "1F0302", kernel: "C-2 (Mastercard)"),
        Case(card: "maestro", amount: 5001, cvm: .onlinePIN, results: "420300", kernel: "C-2 (Mastercard)"),
        // JCB (C-5): the CVM list.
        Case(card: "jcb", amount: 5000, cvm: .noCVM, results: "1F0302", kernel: "C-5 (JCB)"),
        Case(card: "jcb", amount: 5001, cvm: .onlinePIN, results: "420300", kernel: "C-5 (JCB)"),
        // UnionPay (C-7): the CTQ, CVM required from the limit on (Entry Point's "at or above").
        Case(card: "unionpay", amount: 4999, cvm: .noCVM, results: "1F0002", kernel: "C-7 (UnionPay)"),
        Case(card: "unionpay", amount: 5000, cvm: .onlinePIN, results: "020000", kernel: "C-7 (UnionPay)"),
        // No PPSE: partial-AID selection with next occurrence finds both; priority 1 wins.
        Case(card: "no-ppse-partial", amount: 4999, cvm: .noCVM, results: "1F0002", kernel: "C-3 (Visa)"),
        Case(card: "no-ppse-partial", amount: 5000, cvm: .onlinePIN, results: "020000", kernel: "C-3 (Visa)"),
    ]

    @Test(arguments: cases)
    func readsWithTheRightCVM(_ c: Case) async throws {
        let r = try await read(c.card, amount: c.amount)
        #expect(r.cvm == c.cvm)
        #expect(r.cvmDecision?.results == bytes(c.results))
        #expect(r.application.kernel.description == c.kernel)
        #expect(r.cryptogram.kind == .arqc)
        // 9F34 goes with the cryptogram to the acquirer.
        #expect(r.cryptogram.onlineData.first { $0.tag == .cvmResults }?.valueBytes == bytes(c.results))
    }

    @Test func partialSelectionFindsEveryApplicationUnderThePrefix() async throws {
        let r = try await read("no-ppse-partial", amount: 1000)
        #expect(r.application.aidHex == "A000000003101002")
        let selects = r.exchanges.filter { $0.command.instructionCode == 0xA4 }.map { (Hex.encode($0.command.data), $0.command.p2Parameter) }
        #expect(selects.contains { $0 == ("A0000000031010", 0x00) })
        #expect(selects.contains { $0 == ("A0000000031010", 0x02) })
    }

    /// Extended selection (9F29) in the PPSE entry: final selection selects AID || extension.
    @Test func extendedSelectionIsAppendedToTheAID() async throws {
        var profile = try #require(CardProfiles.named("visa-qvsdc"))
        profile.applications[0].extendedSelection = [0x01, 0x02]
        let channel = VirtualCardChannel(card: EmulatedCard(profile: profile), simulatesCardTime: false)
        let r = try await reader.read(channel: channel, transaction: Transaction(amount: 1000))
        let selects = r.exchanges.filter { $0.command.instructionCode == 0xA4 }.map { Hex.encode($0.command.data) }
        #expect(selects.contains("A00000000310100102"))
        #expect(r.cryptogram.kind == .arqc)
    }
}
