import BERTLV
@testable import EMVKernel
import ISO7816
import Testing

/// The kernel as a plain value: one response in, one action out, step by step.
@Suite struct KernelStateMachineTests {
    @Test func qvsdcStepByStep() throws {
        var k = makeKernel(amount: 1250)
        guard case .idle = k.state else { Issue.record("a new kernel is idle"); return }

        // SELECT PPSE
        #expect(k.start().command?.hex == "00A404000E325041592E5359532E444446303100")
        guard case .selectingPPSE = k.state else { Issue.record("state \(k.state)"); return }

        // PPSE → SELECT the Visa AID
        let select = k.receive(Card.ppse(Card.entry(Card.visaAID, label: "VISA CREDIT", priority: "01", kernel: "03")))
        #expect(select.command?.hex == "00A4040007A000000003101000")
        guard case .selectingApplication(let s) = k.state else { Issue.record("state \(k.state)"); return }
        #expect(s.remaining.isEmpty)
        #expect(k.currentStep == .selectAID(bytes(Card.visaAID)))

        // FCI → GPO with the PDOL filled: TTQ, amount, UN, currency, date
        let gpo = k.receive(Card.fci(Card.visaAID, pdol: Card.visaPDOL))
        #expect(gpo.command?.hex == "80A80000158313" + "24804000" + "000000001250" + "12345678" + "0978" + "261130" + "00")
        guard case .gettingProcessingOptions = k.state else { Issue.record("state \(k.state)"); return }

        // GPO answer with an ARQC and track 2 → the online data is ready before the records
        let early = try #require(k.receive(Card.visaGPO()).onlineData)
        #expect(early.onlineDataWasReady)
        #expect(early.card?.pan.last4 == "0010")
        #expect(early.card?.expiry == Expiry(year: 2028, month: 12))
        #expect(early.cryptogram?.kind == .arqc)
        #expect(early.cryptogram?.ac == bytes(Card.visaAC))
        #expect(early.application?.brand == .visa)
        guard case .onlineDataReady(let r) = k.state else { Issue.record("state \(k.state)"); return }
        #expect(r.remaining == [RecordReference(sfi: 3, record: 1)])

        // resume → READ RECORD 1 of SFI 3
        #expect(k.resume().command?.hex == "00B2011C00")
        guard case .readingRecords = k.state else { Issue.record("state \(k.state)"); return }

        // the record → complete
        let read = try #require(k.receive(Card.visaRecord).read)
        guard case .done = k.state else { Issue.record("state \(k.state)"); return }
        #expect(read.application.aid == bytes(Card.visaAID))
        #expect(read.application.label == "VISA CREDIT")
        #expect(read.application.priority == 1)
        #expect(read.application.kernelID == 3)
        #expect(read.card.pan.digits == Card.visaPAN)
        #expect(read.card.cardholderName == "VISA TEST/CARD")
        #expect(read.card.panSequenceNumber == 1)
        #expect(read.card.track2?.serviceCode == "201")
        #expect(read.cryptogram.cid == 0x80)
        #expect(read.cryptogram.atc == 42)
        #expect(read.cryptogram.source == .gpo)
        #expect(read.cryptogram.iad == bytes("06011203A00000"))
        #expect(read.cryptogram.unpredictableNumber == bytes("12345678"))
        #expect(read.cvm == .noCVM)
        let online = Dictionary(read.cryptogram.onlineData.map { ($0.tag, $0.valueBytes) }, uniquingKeysWith: { a, _ in a })
        #expect(online[.applicationCryptogram] == bytes(Card.visaAC))
        #expect(online[.unpredictableNumber] == bytes("12345678"))
        #expect(online[.amountAuthorised] == bytes("000000001250"))
        #expect(online[.transactionDate] == bytes("261130"))
        #expect(online[.dedicatedFileName] == bytes(Card.visaAID))
        #expect(online[.terminalTransactionQualifiers] == bytes("24804000"))   // the PDOL asked for it
        #expect(online[.pan] == nil && online[.track2EquivalentData] == nil)
        #expect(read.cryptogram.onlineData.first?.tag == .applicationCryptogram)
    }

    @Test func mchipStepByStep() throws {
        var k = makeKernel(amount: 7500)
        _ = k.start()
        #expect(k.receive(Card.ppse(Card.entry(Card.mastercardAID, label: "MASTERCARD"))).command?.hex
                == "00A4040007A000000004101000")
        // No PDOL: GPO with 83 00
        #expect(k.receive(Card.fci(Card.mastercardAID, label: "MASTERCARD")).command?.hex == "80A8000002830000")
        // Format 1: AIP 1880, AFL SFI 1 rec 1, SFI 2 rec 1-2 → no online data yet, READ RECORD 1/SFI 1
        #expect(k.receive(Card.mchipGPO).command?.hex == "00B2010C00")
        #expect(k.receive(Card.mchipRecord1).command?.hex == "00B2011400")
        #expect(k.receive(Card.mchipRecord2).command?.hex == "00B2021400")
        // After the last record: GENERATE AC for an ARQC with CDOL1; above the CVM limit the CVM
        // list gives online PIN (42 03 00 in the CVM results) and the TVR says "floor limit exceeded".
        let generate = try #require(k.receive(Card.mchipRecord3).command)
        #expect(generate.hex == "80AE800020" + "000000007500" + "000000000000" + "0724" + "8000008000" + "0978" + "261130"
                + "00" + "12345678" + "420300" + "00")
        guard case .generatingAC(let g) = k.state else { Issue.record("state \(k.state)"); return }
        #expect(g.cvm == .onlinePIN)

        let read = try #require(k.receive(Card.mchipGenerateAC()).read)
        #expect(read.application.brand == .mastercard)
        #expect(read.application.kernelID == 2)
        #expect(read.application.applicationInterchangeProfile == bytes("1880"))
        #expect(read.card.pan.digits == Card.mastercardPAN)
        #expect(read.cryptogram.source == .generateAC)
        #expect(read.cryptogram.kind == .arqc)
        #expect(read.cryptogram.atc == 8)
        #expect(read.cvm == .onlinePIN)
        let online = Dictionary(read.cryptogram.onlineData.map { ($0.tag, $0.valueBytes) }, uniquingKeysWith: { a, _ in a })
        #expect(online[.cvmResults] == bytes("420300"))
        #expect(online[.terminalTransactionQualifiers] == nil)   // not asked for by this card
    }

    @Test func generateACFormat1() throws {
        var k = makeKernel()
        let (_, last) = run(&k, [Card.ppse(Card.entry(Card.mastercardAID, label: "MC")), Card.fci(Card.mastercardAID),
                                 Card.mchipGPO, Card.mchipRecord1, Card.mchipRecord2, Card.mchipRecord3,
                                 ok(raw: "8012" + "80" + "0009" + "0102030405060708" + "0110A000032200")])
        let read = try #require(last.read)
        #expect(read.cryptogram.cid == 0x80)
        #expect(read.cryptogram.atc == 9)
        #expect(read.cryptogram.ac == bytes("0102030405060708"))
        #expect(read.cryptogram.iad == bytes("0110A000032200"))
        #expect(read.cvm == .noCVM)   // 12.50 is below the CVM limit
    }

    @Test func qvsdcWithoutRecordsCompletesAfterGPO() throws {
        var k = makeKernel()
        let (commands, last) = run(&k, [Card.ppse(Card.entry(Card.visaAID, label: "VISA")),
                                        Card.fci(Card.visaAID, pdol: Card.visaPDOL),
                                        ok(tlv(0x77, tlv(0x82, "0000"), tlv(0x57, Card.visaTrack2),
                                               tlv(0x9F26, Card.visaAC), tlv(0x9F27, "80"), tlv(0x9F36, "0001")))])
        #expect(commands.count == 3)
        let read = try #require(last.read)
        #expect(read.card.pan.last4 == "0010")
        #expect(read.card.expiry == Expiry(year: 2028, month: 12))   // from track 2
        #expect(read.card.panSequenceNumber == nil)
    }

    @Test func cidAbsentFromGPOMeansARQC() throws {
        var k = makeKernel()
        let (_, last) = run(&k, [Card.ppse(Card.entry(Card.visaAID, label: "VISA")), Card.fci(Card.visaAID),
                                 ok(tlv(0x77, tlv(0x82, "0000"), tlv(0x57, Card.visaTrack2),
                                        tlv(0x9F26, Card.visaAC), tlv(0x9F36, "0001")))])
        let read = try #require(last.read)
        #expect(read.cryptogram.kind == .arqc)
        #expect(read.cryptogram.onlineData.contains { $0.tag == .cryptogramInformationData && $0.valueBytes == [0x80] })
    }

    // MARK: - Selection

    @Test func priorityOrderAndRefusedCandidates() throws {
        var k = makeKernel()
        _ = k.start()
        // Debit (priority 2) listed first, credit (priority 1) second, a third with no priority,
        // and an AID the terminal does not support.
        let first = k.receive(Card.ppse(
            Card.entry(Card.visaDebitAID, label: "VISA DEBIT", priority: "02"),
            Card.entry("A0000009999999", label: "OTHER", priority: "01"),
            Card.entry("A0000000032020", label: "V PAY"),
            Card.entry(Card.visaAID, label: "VISA CREDIT", priority: "81")))   // bit 8: confirmation; priority 1
        #expect(first.command?.hex == "00A4040007\(Card.visaAID)00")
        guard case .selectingApplication(let s) = k.state else { Issue.record("state \(k.state)"); return }
        #expect(s.remaining.map(\.aid) == [bytes(Card.visaDebitAID), bytes("A0000000032020")])
        // Credit is blocked (6283): try debit
        #expect(k.receive(status(0x6283)).command?.hex == "00A4040007\(Card.visaDebitAID)00")
        // Debit answers 6A81: try V PAY
        #expect(k.receive(status(0x6A81)).command?.hex == "00A4040007A000000003202000")
        // V PAY: FCI of another application: inconsistent, and nothing is left
        let failure = try #require(k.receive(Card.fci(Card.visaAID)).failure)
        #expect(failure.code == .inconsistentData)
        #expect(failure.step == .selectAID(bytes("A0000000032020")))
    }

    @Test func conditionsNotSatisfiedMovesToTheNextApplication() throws {
        var k = makeKernel()
        let (commands, last) = run(&k, [
            Card.ppse(Card.entry(Card.visaAID, label: "CREDIT", priority: "01"),
                      Card.entry(Card.visaDebitAID, label: "DEBIT", priority: "02")),
            Card.fci(Card.visaAID, pdol: Card.visaPDOL),
            status(0x6985),                                    // GPO refused: next application
            Card.fci(Card.visaDebitAID, label: "DEBIT", priority: "02", pdol: Card.visaPDOL),
            Card.visaGPO(), Card.visaRecord,
        ])
        #expect(commands.map(\.instructionCode) == [0xA4, 0xA4, 0xA8, 0xA4, 0xA8, 0xB2])
        try #require(commands.count == 6)
        #expect(commands[3].data == bytes(Card.visaDebitAID))
        let read = try #require(last.read)
        #expect(read.application.aid == bytes(Card.visaDebitAID))
        #expect(read.application.label == "DEBIT")
    }

    @Test func conditionsNotSatisfiedOnTheOnlyApplication() throws {
        var k = makeKernel()
        let (_, last) = run(&k, [Card.ppse(Card.entry(Card.visaAID, label: "VISA")), Card.fci(Card.visaAID),
                                 status(0x6985)])
        let failure = try #require(last.failure)
        #expect(failure.code == .unexpectedStatus)
        #expect(failure.step == .gpo)
        #expect(failure.statusWord == .conditionsOfUseNotSatisfied)
    }

    @Test func noSupportedApplicationInThePPSE() throws {
        var k = makeKernel()
        _ = k.start()
        let failure = try #require(k.receive(Card.ppse(Card.entry("A0000009999999", label: "OTHER"))).failure)
        #expect(failure.code == .noSupportedApplication)
        #expect(failure.step == .ppse)
        #expect(failure.description.contains("A0000009999999"))
    }

    @Test func partialMatchingAgainstThePPSE() throws {
        // The terminal lists a RID-only AID with partial matching; the card's longer AID matches.
        var config = TerminalConfiguration.default
        config.supportedApplications = [SupportedApplication(aid: bytes("A000000003"))]
        var k = makeKernel(configuration: config)
        _ = k.start()
        #expect(k.receive(Card.ppse(Card.entry("A000000003101001", label: "VISA"))).command?.data == bytes("A000000003101001"))

        config.supportedApplications = [SupportedApplication(aid: bytes("A000000003"), allowsPartialMatch: false)]
        k = makeKernel(configuration: config)
        _ = k.start()
        #expect(k.receive(Card.ppse(Card.entry("A000000003101001", label: "VISA"))).failure?.code == .noSupportedApplication)
    }

    @Test(arguments: [
        status(0x6A82), status(0x6A81), ok(raw: "6F03840100"), ok(raw: "6F0A8408"), ok(raw: "9000"),
        ok(tlv(0x6F, tlv(0x84, text: "2PAY.SYS.DDF01"), tlv(0xA5, tlv(0xBF0C, tlv(0x9F4D, "0B0A"))))),
    ])
    func ppseUnusableFallsBackToTheListOfAIDs(_ ppse: ResponseAPDU) throws {
        var k = makeKernel()
        _ = k.start()
        let action = k.receive(ppse)
        #expect(action.command?.hex == "00A4040007A000000003101000")   // the terminal's first AID
        guard case .selectingFromList(let s) = k.state else { Issue.record("state \(k.state)"); return }
        #expect(!s.ppseFailure.isEmpty)
    }

    @Test func listOfAIDsWithNextOccurrence() throws {
        var config = TerminalConfiguration.default
        config.supportedApplications = [SupportedApplication(aid: bytes("A000000003")), .mastercard]
        var k = makeKernel(configuration: config)
        let (commands, last) = run(&k, [
            status(0x6A82),                                                       // no PPSE
            Card.fci(Card.visaDebitAID, label: "DEBIT", priority: "02"),          // A000000003 → partial: debit
            Card.fci(Card.visaAID, label: "CREDIT", priority: "01"),              // next occurrence: credit
            Card.fci(Card.visaAID, label: "CREDIT", priority: "01"),              // the same again: stop
            status(0x6A82),                                                       // Mastercard: not here
            Card.fci(Card.visaAID, label: "CREDIT", priority: "01", pdol: Card.visaPDOL), // final selection: credit first
            Card.visaGPO(), Card.visaRecord,
        ])
        #expect(commands.map(\.hex).prefix(6) == [
            "00A404000E325041592E5359532E444446303100",
            "00A4040005A00000000300",
            "00A4040205A00000000300",
            "00A4040205A00000000300",
            "00A4040007A000000004101000",
            "00A4040007A000000003101000",
        ])
        let read = try #require(last.read)
        #expect(read.application.label == "CREDIT")
    }

    @Test func listOfAIDsSkipsBlockedApplications() throws {
        var config = TerminalConfiguration.default
        config.supportedApplications = [.visa, .mastercard]
        var k = makeKernel(configuration: config)
        let (commands, last) = run(&k, [
            status(0x6A82),
            ResponseAPDU(data: Card.fci(Card.visaAID).data, statusWord: .selectedFileInvalidated),  // blocked
            Card.fci(Card.mastercardAID, label: "MASTERCARD"),                                        // exact
            Card.fci(Card.mastercardAID, label: "MASTERCARD"),
            Card.mchipGPO, Card.mchipRecord1, Card.mchipRecord2, Card.mchipRecord3, Card.mchipGenerateAC(),
        ])
        try #require(commands.count > 3)
        #expect(commands[3].data == bytes(Card.mastercardAID))
        #expect(try #require(last.read).application.brand == .mastercard)
    }

    @Test func listOfAIDsFindsNothing() throws {
        var config = TerminalConfiguration.default
        config.supportedApplications = [.visa, .mastercard]
        var k = makeKernel(configuration: config)
        let (_, last) = run(&k, [status(0x6A82), status(0x6A82), status(0x6A82)])
        let failure = try #require(last.failure)
        #expect(failure.code == .noSupportedApplication)
        #expect(failure.reason.contains("6A82"))
    }

    // MARK: - Outcomes

    @Test func offlineDeclineFromGenerateAC() throws {
        var k = makeKernel()
        let (_, last) = run(&k, [Card.ppse(Card.entry(Card.mastercardAID, label: "MC")), Card.fci(Card.mastercardAID),
                                 Card.mchipGPO, Card.mchipRecord1, Card.mchipRecord2, Card.mchipRecord3,
                                 Card.mchipGenerateAC(cid: "00")])
        let failure = try #require(last.failure)
        #expect(failure.code == .cardDeclinedOffline)
        #expect(failure.step == .generateAC)
        #expect(failure.partial?.cryptogram?.kind == .aac)
        #expect(failure.partial?.card?.pan.last4 == "0434")
        #expect(failure.happenedAfterOnlineDataReady == false)
    }

    @Test func offlineDeclineInTheGPOAnswerReadsRecordsFirst() throws {
        var k = makeKernel()
        var action = k.start()
        action = k.receive(Card.ppse(Card.entry(Card.visaAID, label: "VISA")))
        action = k.receive(Card.fci(Card.visaAID, pdol: Card.visaPDOL))
        action = k.receive(Card.visaGPO(cid: "00"))
        #expect(action.command?.hex == "00B2011C00")   // no online data point for an AAC
        let failure = try #require(k.receive(Card.visaRecord).failure)
        #expect(failure.code == .cardDeclinedOffline)
        #expect(failure.step == .gpo)
    }

    @Test func offlineApprovalIsReported() throws {
        var k = makeKernel()
        let (_, last) = run(&k, [Card.ppse(Card.entry(Card.visaAID, label: "VISA")), Card.fci(Card.visaAID),
                                 Card.visaGPO(cid: "40"), Card.visaRecord])
        #expect(try #require(last.read).cryptogram.kind == .tc)
    }

    @Test func partialStateIsAvailableForChannelErrors() {
        var k = makeKernel()
        _ = k.start()
        _ = k.receive(Card.ppse(Card.entry(Card.visaAID, label: "VISA")))
        _ = k.receive(Card.fci(Card.visaAID, pdol: Card.visaPDOL))
        _ = k.receive(Card.visaGPO())
        guard case .onlineDataReady = k.state else { Issue.record("no online data point: \(k.state)"); return }
        _ = k.resume()
        let partial = k.partial
        #expect(partial.step == .readRecord(record: 1, sfi: 3))
        #expect(partial.onlineDataWasReady)
        #expect(partial.card?.pan.last4 == "0010")
        #expect(partial.cryptogram?.kind == .arqc)
        #expect(k.currentStep == .readRecord(record: 1, sfi: 3))
    }

    @Test("a kernel that hands out no online data reads on past the point, and a failure there still says it was passed")
    func onlineDataPointWithoutHandingOut() throws {
        var quiet = makeKernel(amount: 1250)
        quiet.handsOutOnlineData = false
        _ = quiet.start()
        _ = quiet.receive(Card.ppse(Card.entry(Card.visaAID, label: "VISA CREDIT", priority: "01", kernel: "03")))
        _ = quiet.receive(Card.fci(Card.visaAID, pdol: Card.visaPDOL))
        // The GPO answer holds an ARQC: straight on to READ RECORD, no stop.
        #expect(quiet.receive(Card.visaGPO()).command?.hex == "00B2011C00")
        guard case .readingRecords(let reading) = quiet.state else { Issue.record("state \(quiet.state)"); return }
        #expect(reading.onlineDataWasReady)
        let partial = quiet.partial
        #expect(partial.onlineDataWasReady)
        #expect(partial.cryptogram?.kind == .arqc)

        // The same read with the stop ends the same, online data included.
        var loud = makeKernel(amount: 1250)
        _ = loud.start()
        _ = loud.receive(Card.ppse(Card.entry(Card.visaAID, label: "VISA CREDIT", priority: "01", kernel: "03")))
        _ = loud.receive(Card.fci(Card.visaAID, pdol: Card.visaPDOL))
        #expect(loud.receive(Card.visaGPO()).onlineData != nil)
        _ = loud.resume()
        let withStop = try #require(loud.receive(Card.visaRecord).read)
        let without = try #require(quiet.receive(Card.visaRecord).read)
        #expect(without == withStop)
        #expect(without.cryptogram.onlineData.count > 10)

        // A GPO answer with an offline approval (TC) has no such point.
        var tc = makeKernel(amount: 1250)
        tc.handsOutOnlineData = false
        _ = tc.start()
        _ = tc.receive(Card.ppse(Card.entry(Card.visaAID, label: "VISA CREDIT", priority: "01", kernel: "03")))
        _ = tc.receive(Card.fci(Card.visaAID, pdol: Card.visaPDOL))
        #expect(tc.receive(Card.visaGPO(cid: "40")).command?.hex == "00B2011C00")
        #expect(tc.partial.onlineDataWasReady == false)
    }

    @Test func descriptionsNeverShowThePAN() throws {
        var k = makeKernel()
        let (_, last) = run(&k, [Card.ppse(Card.entry(Card.visaAID, label: "VISA")), Card.fci(Card.visaAID),
                                 Card.visaGPO(), Card.visaRecord])
        let read = try #require(last.read)
        for text in [read.description, String(describing: read.card), "\(read.card.pan)",
                     String(describing: PartialCardRead(card: read.card)), String(reflecting: read.card.pan)] {
            #expect(!text.contains(Card.visaPAN))
            #expect(!text.contains("D2812"))
        }
        #expect(read.description.contains("476173******0010"))
    }

    @Test func unpredictableNumberAndDateComeFromTheEnvironment() {
        let env = KernelEnvironment(now: { TransactionDateTime(year: 2030, month: 1, day: 2, hour: 3, minute: 4, second: 5) },
                                    unpredictableNumber: { 0xCAFEBABE })
        let k = EMVKernel(transaction: Transaction(amount: 1), environment: env)
        #expect(k.terminalData[.unpredictableNumber] == bytes("CAFEBABE"))
        #expect(k.terminalData[.transactionDate] == bytes("300102"))
        #expect(k.terminalData[.transactionTime] == bytes("030405"))
        // The system environment draws a fresh number each time (2^-32 chance of a false failure twice over).
        let system = KernelEnvironment.system
        #expect(Set((0..<3).map { _ in system.unpredictableNumber() }).count > 1)
    }

    /// Entry Point sets "CVM required" at or above the reader CVM required limit (Book A §5.2.2).
    @Test func cvmRequiredSetsTheTTQ() {
        #expect(makeKernel(amount: 4999).terminalData[.terminalTransactionQualifiers] == bytes("24804000"))
        #expect(makeKernel(amount: 5000).terminalData[.terminalTransactionQualifiers] == bytes("24C04000"))
    }

    @Test func misuseTraps() async {
        await #expect(processExitsWith: .failure) {
            var k = makeKernel()
            _ = k.resume()
        }
        await #expect(processExitsWith: .failure) {
            var k = makeKernel()
            _ = k.receive(status(0x9000))
        }
    }
}
