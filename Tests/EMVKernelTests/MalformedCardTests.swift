import BERTLV
import CardChannel
@testable import EMVKernel
import ISO7816
import Testing
import VirtualCard
import APDUTrace
@testable import BenchTiming
import TestSupport

/// Cards that lie: every one gets a typed error naming the step, never a crash or a hang.
@Suite struct MalformedCardTests {
    let reader = EMVReader(environment: testEnvironment)

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// The answers after PPSE and SELECT of a Visa qVSDC card (or from the start when `fromStart`).
        var answers: [ResponseAPDU]
        var fromStart = false
        var code: KernelError.Code
        var step: KernelStep
        var testDescription: String { name }
    }

    static let visaAID = bytes(Card.visaAID)
    static let prefix: [ResponseAPDU] = [Card.ppse(Card.entry(Card.visaAID, label: "VISA")),
                                         Card.fci(Card.visaAID, pdol: Card.visaPDOL)]

    static func gpo(_ objects: TLV...) -> ResponseAPDU { ok(TLV(tag: 0x77, children: objects)) }
    static let aip = tlv(0x82, "0000"), afl = tlv(0x94, "18010100"), track2 = tlv(0x57, Card.visaTrack2)
    static let ac = tlv(0x9F26, Card.visaAC), cid = tlv(0x9F27, "80"), atc = tlv(0x9F36, "002A")

    static let cases: [Case] = [
        // SELECT
        Case(name: "FCI is not TLV", answers: [Card.ppse(Card.entry(Card.visaAID, label: "VISA")), ok(raw: "6F0584")],
             fromStart: true, code: .malformedResponse, step: .selectAID(visaAID)),
        Case(name: "FCI without DF name", answers: [Card.ppse(Card.entry(Card.visaAID, label: "VISA")),
                                                    ok(tlv(0x6F, tlv(0xA5, tlv(0x50, text: "VISA"))))],
             fromStart: true, code: .missingMandatoryData, step: .selectAID(visaAID)),
        Case(name: "FCI is another template", answers: [Card.ppse(Card.entry(Card.visaAID, label: "VISA")),
                                                        ok(tlv(0x70, tlv(0x84, Card.visaAID)))],
             fromStart: true, code: .malformedResponse, step: .selectAID(visaAID)),
        Case(name: "FCI with trailing data", answers: [Card.ppse(Card.entry(Card.visaAID, label: "VISA")),
                                                       ok(tlv(0x6F, tlv(0x84, Card.visaAID)), tlv(0x9F36, "0001"))],
             fromStart: true, code: .malformedResponse, step: .selectAID(visaAID)),
        Case(name: "PDOL is not a DOL", answers: [Card.ppse(Card.entry(Card.visaAID, label: "VISA")),
                                                  Card.fci(Card.visaAID, pdol: "9F")],
             fromStart: true, code: .malformedResponse, step: .selectAID(visaAID)),
        Case(name: "PDOL asks for too much", answers: [Card.ppse(Card.entry(Card.visaAID, label: "VISA")),
                                                       Card.fci(Card.visaAID, pdol: "DF0181FF")],
             fromStart: true, code: .malformedResponse, step: .selectAID(visaAID)),
        Case(name: "SELECT wrong status", answers: [Card.ppse(Card.entry(Card.visaAID, label: "VISA")), status(0x6A82)],
             fromStart: true, code: .unexpectedStatus, step: .selectAID(visaAID)),
        // GPO
        Case(name: "GPO bad TLV", answers: [ok(raw: "7710820200")], code: .malformedResponse, step: .gpo),
        Case(name: "GPO empty", answers: [ok(raw: "")], code: .malformedResponse, step: .gpo),
        Case(name: "GPO wrong template", answers: [ok(tlv(0x70, aip, afl))], code: .malformedResponse, step: .gpo),
        Case(name: "GPO missing 82", answers: [gpo(afl, track2, ac, cid, atc)], code: .missingMandatoryData, step: .gpo),
        Case(name: "GPO missing 94", answers: [gpo(aip, track2)], code: .missingMandatoryData, step: .gpo),
        Case(name: "GPO AIP of 3 bytes", answers: [gpo(tlv(0x82, "000000"), afl)], code: .malformedResponse, step: .gpo),
        Case(name: "GPO format 1 too short", answers: [ok(raw: "800100")], code: .malformedResponse, step: .gpo),
        Case(name: "GPO trailing object", answers: [ok(tlv(0x77, aip, afl), tlv(0x9F36, "0001"))],
             code: .malformedResponse, step: .gpo),
        Case(name: "GPO wrong status", answers: [status(0x6A80)], code: .unexpectedStatus, step: .gpo),
        Case(name: "GPO duplicate with another value", answers: [gpo(aip, afl, tlv(0x5F34, "01"), tlv(0x5F34, "02"))],
             code: .inconsistentData, step: .gpo),
        // AFL
        Case(name: "AFL not a multiple of 4", answers: [gpo(aip, tlv(0x94, "1801010000"))], code: .invalidAFL, step: .gpo),
        Case(name: "AFL SFI 0", answers: [gpo(aip, tlv(0x94, "00010100"))], code: .invalidAFL, step: .gpo),
        Case(name: "AFL SFI 31", answers: [gpo(aip, tlv(0x94, "F8010100"))], code: .invalidAFL, step: .gpo),
        Case(name: "AFL low bits set", answers: [gpo(aip, tlv(0x94, "19010100"))], code: .invalidAFL, step: .gpo),
        Case(name: "AFL first record 0", answers: [gpo(aip, tlv(0x94, "18000100"))], code: .invalidAFL, step: .gpo),
        Case(name: "AFL first after last", answers: [gpo(aip, tlv(0x94, "18030200"))], code: .invalidAFL, step: .gpo),
        Case(name: "AFL too many offline records", answers: [gpo(aip, tlv(0x94, "18010203"))], code: .invalidAFL, step: .gpo),
        Case(name: "AFL names a record twice", answers: [gpo(aip, tlv(0x94, "1801020018020300"))], code: .invalidAFL,
             step: .gpo),
        // READ RECORD
        Case(name: "record not a 70 template", answers: [gpo(aip, afl), ok(tlv(0x77, tlv(0x5A, Card.visaPAN)))],
             code: .malformedResponse, step: .readRecord(record: 1, sfi: 3)),
        Case(name: "record bad TLV", answers: [gpo(aip, afl), ok(raw: "7008 5A08476173")],
             code: .malformedResponse, step: .readRecord(record: 1, sfi: 3)),
        Case(name: "record wrong status", answers: [gpo(aip, afl), status(0x6A83)],
             code: .unexpectedStatus, step: .readRecord(record: 1, sfi: 3)),
        // Card data
        Case(name: "no PAN at all", answers: [gpo(aip, afl, ac, cid, atc), ok(tlv(0x70, tlv(0x5F24, "281231")))],
             code: .missingMandatoryData, step: .cardData),
        Case(name: "no expiry", answers: [gpo(aip, afl, ac, cid, atc), ok(tlv(0x70, tlv(0x5A, Card.visaPAN)))],
             code: .missingMandatoryData, step: .cardData),
        Case(name: "PAN differs from track 2", answers: [gpo(aip, afl, track2, ac, cid, atc),
                                                         ok(tlv(0x70, tlv(0x5A, "4111111111111111")))],
             code: .inconsistentData, step: .cardData),
        Case(name: "expiry differs from track 2", answers: [gpo(aip, afl, track2, ac, cid, atc),
                                                            ok(tlv(0x70, tlv(0x5F24, "291231")))],
             code: .inconsistentData, step: .cardData),
        Case(name: "record repeats a tag with another value", answers: [gpo(aip, afl, track2, ac, cid, atc),
                                                                        ok(tlv(0x70, tlv(0x57, "4761739001010010D29122011000012345")))],
             code: .inconsistentData, step: .readRecord(record: 1, sfi: 3)),
        Case(name: "PAN not BCD", answers: [gpo(aip, afl, ac, cid, atc),
                                            ok(tlv(0x70, tlv(0x5A, "47617390010100AB"), tlv(0x5F24, "281231")))],
             code: .malformedResponse, step: .cardData),
        Case(name: "expiry month 13", answers: [gpo(aip, afl, ac, cid, atc),
                                                ok(tlv(0x70, tlv(0x5A, Card.visaPAN), tlv(0x5F24, "281331")))],
             code: .malformedResponse, step: .cardData),
        Case(name: "track 2 without separator", answers: [gpo(aip, afl, tlv(0x57, "4761739001010010"), ac, cid, atc),
                                                          Card.visaRecord],
             code: .malformedResponse, step: .cardData),
        // Cryptogram in the GPO answer
        Case(name: "AC of 7 bytes", answers: [gpo(aip, afl, track2, tlv(0x9F26, "11223344556677"), cid, atc), Card.visaRecord],
             code: .malformedResponse, step: .cardData),
        Case(name: "no ATC", answers: [gpo(aip, afl, track2, ac, cid), Card.visaRecord],
             code: .missingMandatoryData, step: .cardData),
        Case(name: "reserved CID", answers: [gpo(aip, afl, track2, ac, tlv(0x9F27, "C0"), atc), Card.visaRecord],
             code: .malformedResponse, step: .cardData),
        Case(name: "CTQ of 1 byte", answers: [gpo(aip, afl, track2, ac, cid, atc, tlv(0x9F6C, "80")), Card.visaRecord],
             code: .malformedResponse, step: .cardData),
        // GENERATE AC
        Case(name: "no CDOL1 and no cryptogram", answers: [gpo(aip, afl), Card.visaRecord],
             code: .missingMandatoryData, step: .generateAC),
        Case(name: "CDOL1 not a DOL", answers: [gpo(aip, afl), ok(tlv(0x70, tlv(0x5A, Card.visaPAN), tlv(0x5F24, "281231"),
                                                                  tlv(0x8C, "9F02")))],
             code: .malformedResponse, step: .generateAC),
        Case(name: "GENERATE AC wrong status", answers: mchipAfterGPO + [status(0x6985)],
             code: .unexpectedStatus, step: .generateAC),
        Case(name: "GENERATE AC format 1 too short", answers: mchipAfterGPO + [ok(raw: "800A80000901020304050607")],
             code: .malformedResponse, step: .generateAC),
        Case(name: "GENERATE AC format 2 without ATC", answers: mchipAfterGPO + [ok(tlv(0x77, tlv(0x9F27, "80"),
                                                                                         tlv(0x9F26, Card.visaAC)))],
             code: .missingMandatoryData, step: .generateAC),
        Case(name: "GENERATE AC TC for an ARQC", answers: mchipAfterGPO + [Card.mchipGenerateAC(cid: "40")],
             code: .inconsistentData, step: .generateAC),
        Case(name: "GENERATE AC CVM list malformed", answers: [gpo(tlv(0x82, "1800"), afl),
                                                               ok(tlv(0x70, tlv(0x5A, Card.visaPAN), tlv(0x5F24, "281231"),
                                                                      tlv(0x8E, "000000000000000042")))],
             code: .malformedResponse, step: .cardData),
    ]

    /// M/Chip after PPSE and SELECT of its AID (the case prefix selects Visa; these carry on from
    /// a Visa FCI, which is fine: the kernel follows the card).
    static let mchipAfterGPO: [ResponseAPDU] = [Card.mchipGPO, Card.mchipRecord1, Card.mchipRecord2, Card.mchipRecord3]

    @Test(arguments: cases)
    func typedErrorNamingTheStep(_ c: Case) async throws {
        let amount: UInt64 = c.name.contains("CVM list") ? 9999 : 1250
        let channel = ScriptedChannel(c.fromStart ? c.answers : Self.prefix + c.answers)
        let error = await #expect(throws: KernelError.self) {
            try await reader.read(channel: channel, transaction: Transaction(amount: amount))
        }
        #expect(error?.code == c.code)
        #expect(error?.step == c.step)
        #expect(error?.partial?.exchanges.count == channel.sent.count)
        // Reasons name tags, never card data.
        #expect(!(error?.description.contains(Card.visaPAN) ?? true))
    }

    /// Every valid answer cut short at every length: a typed failure each time, never a crash.
    @Test(arguments: [
        ("FCI", [Card.ppse(Card.entry(Card.visaAID, label: "VISA"))], Card.fci(Card.visaAID, pdol: Card.visaPDOL)),
        ("GPO", prefix, Card.visaGPO()),
        ("record", prefix + [Card.visaGPO()], Card.visaRecord),
        ("GENERATE AC", [Card.ppse(Card.entry(Card.mastercardAID, label: "MC")), Card.fci(Card.mastercardAID)]
            + mchipAfterGPO, Card.mchipGenerateAC()),
    ])
    func truncatedAtEveryLength(_ name: String, _ before: [ResponseAPDU], _ answer: ResponseAPDU) {
        for length in 0..<answer.data.count {
            var k = makeKernel()
            let (_, last) = run(&k, before + [ResponseAPDU(data: Array(answer.data.prefix(length)), statusWord: .success)])
            let failure = last.failure
            #expect(failure != nil, "\(name) cut to \(length) byte(s) was accepted")
            #expect([KernelError.Code.malformedResponse, .missingMandatoryData].contains(failure?.code),
                    "\(name) cut to \(length): \(String(describing: failure))")
        }
    }

    /// A PPSE answer cut short is unusable: the kernel falls back to the list of AIDs.
    @Test func truncatedPPSEFallsBack() {
        let ppse = Card.ppse(Card.entry(Card.visaAID, label: "VISA", priority: "01"))
        for length in 0..<ppse.data.count {
            var k = makeKernel()
            _ = k.start()
            let action = k.receive(ResponseAPDU(data: Array(ppse.data.prefix(length)), statusWord: .success))
            #expect(action.command?.data == bytes(Card.visaAID), "PPSE cut to \(length)")
            guard case .selectingFromList = k.state else { Issue.record("PPSE cut to \(length): \(k.state)"); continue }
        }
    }

    @Test func nextOccurrenceLoopIsBounded() throws {
        // A card that answers every "next occurrence" with a new partial match.
        var config = TerminalConfiguration.default
        config.supportedApplications = [SupportedApplication(aid: bytes("A000000003"))]
        var k = makeKernel(configuration: config)
        var action = k.start()
        action = k.receive(status(0x6A82))
        var selects = 0
        var n: UInt8 = 0
        while let c = action.command, c.instructionCode == 0xA4, c.p2Parameter == 0x02 || selects == 0 {
            selects += 1
            n &+= 1
            action = k.receive(Card.fci("A000000003" + Hex.encode([n, 0x10]), label: "VISA \(n)"))
            #expect(selects <= EMVKernel.maxOccurrences + 1)
            if selects > EMVKernel.maxOccurrences + 1 { break }
        }
        // Then final selection of the best candidate found.
        guard case .selectingApplication = k.state else { Issue.record("state \(k.state)"); return }
    }

    @Test func channelErrorsKeepTheirCode() async throws {
        for code in [CardChannelError.Code.readerRemoved, .transmitFailed, .malformedResponse, .cancelled] {
            let channel = ScriptedChannel([.answer(Self.prefix[0]), .fail(CardChannelError(code, "scripted \(code)"))], whenScriptEnds: .transmitFailed)
            let error = await #expect(throws: KernelError.self) {
                try await reader.read(channel: channel, transaction: Transaction(amount: 1))
            }
            #expect(error?.code == .channelFailed)
            #expect(error?.channelError?.code == code)
            #expect(error?.step == .selectAID(Self.visaAID))
            #expect(error?.partial?.exchanges.map(\.failure) == [nil, code])
        }
    }

    /// Issue 18's pattern in the kernel: a country or currency code of 20 BCD digits is a
    /// number above Int.max; it reads as no code, never as a trap.
    @Test(arguments: ["99999999999999999999", "0978AB", "1000", "09"])
    func countryAndCurrencyCodesThatAreNotCodes(_ value: String) throws {
        let record = ok(tlv(0x70, tlv(0x5F20, text: "VISA TEST/CARD"), tlv(0x5A, Card.visaPAN), tlv(0x5F24, "281231"),
                            tlv(0x5F28, value), tlv(0x9F42, value),
                            tlv(0x8E, "0000000000000000" + "1F06" + "1F00")))
        var k = makeKernel()
        let (_, last) = run(&k, [Self.prefix[0], Self.prefix[1], Card.visaGPO(), record])
        guard case .complete(let read) = last else { Issue.record("\(last)"); return }
        #expect(read.card.issuerCountryCode == nil)
        #expect(read.card.applicationCurrencyCode == nil)
    }

    @Test func countryAndCurrencyCodesThatAreCodes() throws {
        let record = ok(tlv(0x70, tlv(0x5A, Card.visaPAN), tlv(0x5F24, "281231"), tlv(0x5F28, "0826"), tlv(0x9F42, "0978")))
        var k = makeKernel()
        let (_, last) = run(&k, [Self.prefix[0], Self.prefix[1], Card.visaGPO(), record])
        guard case .complete(let read) = last else { Issue.record("\(last)"); return }
        #expect(read.card.issuerCountryCode == 826)
        #expect(read.card.applicationCurrencyCode == 978)
    }

    @Test func aVirtualCardThatLiesInItsGPOAnswer() async throws {
        let liar = try #require(CardProfiles.named("visa-qvsdc"))
            .withScriptedResponse(commandPrefix: [0x80, 0xA8], response: bytes("770B82020000940418010100" + "9000"))
        let channel = VirtualCardChannel(card: EmulatedCard(profile: liar), simulatesCardTime: false)
        let error = await #expect(throws: KernelError.self) {
            try await reader.read(channel: channel, transaction: Transaction(amount: 1))
        }
        #expect(error?.code == .malformedResponse)
        #expect(error?.step == .gpo)
    }
}

/// A trace is outside input too: its terminal data set up the replay.
@Suite struct TraceReplaySetupTests {
    /// A trace whose PDOL asks for the currency code (5F2A) in `value`'s length, which the GPO
    /// fills with `value`: 0826 is a code and is taken; 999999 (3 bytes) is not an n 3 code (and
    /// above UInt16.max), so the default currency stays. The country code is the default's.
    @Test(arguments: [("0826", 826 as UInt16), ("999999", TerminalConfiguration.default.currencyCode)])
    func aCurrencyCodeIsTakenOnlyWhenItIsOne(_ value: String, _ expected: UInt16) throws {
        let length = Hex.encode([UInt8(value.count / 2)])
        let text = """
            @format tapemu-apdu-trace/1
            0.000000 > 00A4040007A000000003101000
            0.001000 < 6F118407A0000000031010A5069F38035F2A\(length) 9000
            0.002000 > 80A80000\(Hex.encode([UInt8(value.count / 2 + 2)])) 83\(length) \(value) 00
            0.003000 < 6985
            """
        let trace = try APDUTrace(parsing: text)
        #expect(trace.terminalData[.transactionCurrencyCode] == bytes(value))
        let setup = TraceReplaySetup(trace: trace)
        #expect(setup.configuration.currencyCode == expected)
        #expect(setup.configuration.countryCode == TerminalConfiguration.default.countryCode)
    }
}
