import BERTLV
import PaymentRules
import struct BERTLV.Tag
import ISO7816
import Testing
import VirtualCard
import CardChannel
import TestSupport

let ppseName = Array("2PAY.SYS.DDF01".utf8)

/// Runs a whole transaction against every application of a profile and checks every answer.
@Suite("Every built-in profile answers a whole transaction")
struct ProfileTransactionTests {
    @Test("PPSE, SELECT, GPO, READ RECORD, GENERATE AC; cryptogram verifies; ATC increments",
          arguments: CardProfiles.all.map(\.name))
    func transaction(name: String) throws {
        let profile = try #require(CardProfiles.named(name)).answering
        let terminal = Terminal(profile)

        // PPSE
        let ppse = try terminal.exchange(.selectPPSE)
        if profile.hasPPSE {
            #expect(ppse.statusWord == .success)
            let fci = try #require(try ppse.tlv().first(.fciTemplate))
            #expect(fci.child(.dedicatedFileName)?.valueBytes == ppseName)
            let directory = try #require(fci.child(.fciProprietaryTemplate)?.child(.fciIssuerDiscretionaryData))
            let entries = directory.children.filter { $0.tag == 0x61 }
            #expect(entries.count == profile.applications.count)
            for (entry, app) in zip(entries, profile.applications) {
                #expect(entry.child(.applicationIdentifier)?.valueBytes == app.aid)
                #expect(entry.child(.applicationLabel)?.valueBytes == Array(app.label.utf8))
                #expect(entry.child(.applicationPriorityIndicator)?.valueBytes == app.priority.map { [$0] })
                #expect(entry.child(.kernelIdentifier)?.valueBytes == app.kernelIdentifier)
            }
        } else {
            #expect(ppse.statusWord == .fileNotFound)
            #expect(ppse.data.isEmpty)
        }

        for (index, app) in profile.applications.enumerated() {
            terminal.card.powerOn()
            // SELECT AID
            let select = try terminal.exchange(.select(name: app.aid))
            #expect(select.statusWord == .success)
            let fci = try #require(try select.tlv().first(.fciTemplate))
            #expect(fci.child(.dedicatedFileName)?.valueBytes == app.aid)
            let a5 = try #require(fci.child(.fciProprietaryTemplate))
            #expect(a5.child(.applicationLabel)?.valueBytes == Array(app.label.utf8))
            #expect(a5.child(.pdol)?.valueBytes == (app.pdol.isEmpty ? nil : app.pdol))
            #expect(a5.child(.fciIssuerDiscretionaryData)?.children
                    == (app.fciIssuerDiscretionaryData.isEmpty ? nil : app.fciIssuerDiscretionaryData.map(\.tlv)))
            if let name = app.preferredName {
                #expect(a5.child(.applicationPreferredName)?.valueBytes == Array(name.utf8))
                #expect(a5.child(.issuerCodeTableIndex)?.valueBytes == [0x01])
            }

            // GPO
            let data = TerminalData(amount: 2500, unpredictableNumber: [0x01, 0x02, 0x03, UInt8(index)])
            let gpo = try terminal.gpo(app, data)
            #expect(gpo.statusWord == .success)
            let gpoTLV = try gpo.tlv()
            var authorisation: [Tag: [UInt8]] = data.values
            let afl: [UInt8]
            switch app.gpoFormat {
            case .format1:
                let v = try #require(gpoTLV.first(.responseMessageTemplateFormat1)).valueBytes
                #expect(Array(v.prefix(2)) == app.aip)
                afl = Array(v.dropFirst(2))
            case .format2:
                let t = try #require(gpoTLV.first(.responseMessageTemplateFormat2))
                #expect(t.child(.applicationInterchangeProfile)?.valueBytes == app.aip)
                afl = t.child(.applicationFileLocator)?.valueBytes ?? []
                for c in t.children { authorisation[c.tag] = c.valueBytes }
            }
            #expect(afl == app.afl)
            authorisation[.applicationInterchangeProfile] = app.aip

            // READ RECORD for every record of the AFL
            var cardData: [TLV] = []
            for start in stride(from: 0, to: afl.count, by: 4) {
                for n in afl[start + 1]...afl[start + 2] {
                    let r = try terminal.exchange(.readRecord(n, sfi: afl[start] >> 3))
                    #expect(r.statusWord == .success)
                    let template = try #require(try r.tlv().first(.readRecordResponseTemplate))
                    cardData += template.children
                }
            }
            if let pan = cardData.first(.pan) {
                #expect(try PAN(bcd: pan.value) == app.pan)
            }
            let expiry = try #require(cardData.first(.applicationExpirationDate)).valueBytes
            #expect(expiry == [0x28, 0x12, 0x31])
            let track2 = cardData.first(.track2EquivalentData) ?? gpoTLV.find(.track2EquivalentData)
            #expect(try Track2(bytes: try #require(track2).value).pan == app.pan)

            // The cryptogram
            switch app.cryptogram {
            case .getProcessingOptions:
                #expect(authorisation[.applicationCryptogram]?.count == 8)
                #expect(authorisation[.cryptogramInformationData] == [profile.behaviour.declinesOffline ? 0x00 : 0x80])
            case .generateAC:
                #expect(authorisation[.applicationCryptogram] == nil)
                let genac = try terminal.exchange(.generateAC(.arqc, cdolData: data.dolData(app.cdol1)))
                #expect(genac.statusWord == .success)
                let parsed = try genac.tlv()
                switch app.generateACFormat {
                case .format1:
                    let v = try #require(parsed.first(.responseMessageTemplateFormat1)).valueBytes
                    try #require(v.count >= 11)
                    authorisation[.cryptogramInformationData] = [v[0]]
                    authorisation[.applicationTransactionCounter] = Array(v[1..<3])
                    authorisation[.applicationCryptogram] = Array(v[3..<11])
                    authorisation[.issuerApplicationData] = Array(v[11...])
                case .format2:
                    let t = try #require(parsed.first(.responseMessageTemplateFormat2))
                    for c in t.children { authorisation[c.tag] = c.valueBytes }
                }
                #expect(authorisation[.cryptogramInformationData] == [profile.behaviour.declinesOffline ? 0x00 : 0x80])
            }
            let expectedATC = profile.atc + 1
            #expect(authorisation[.applicationTransactionCounter] == [UInt8(expectedATC >> 8), UInt8(expectedATC & 0xFF)])
            #expect(terminal.card.transactionCounter(application: index) == expectedATC)
            #expect(authorisation[.issuerApplicationData] == app.issuerApplicationData)
            #expect(ApplicationCryptogram.verify(issuerMasterKey: profile.issuerMasterKey, pan: app.pan,
                                                 panSequenceNumber: app.panSequenceNumber,
                                                 authorisationData: authorisation))
            // The same data as TLV verifies too; a changed amount or a wrong key does not.
            let asTLV = authorisation.map { TLV(tag: $0.key, value: $0.value) }
            #expect(ApplicationCryptogram.verify(issuerMasterKey: profile.issuerMasterKey, pan: app.pan,
                                                 panSequenceNumber: app.panSequenceNumber, authorisationData: asTLV))
            var changed = authorisation
            changed[.amountAuthorised] = BCD.encodeNumeric(2501, length: 6)
            #expect(!ApplicationCryptogram.verify(issuerMasterKey: profile.issuerMasterKey, pan: app.pan,
                                                  panSequenceNumber: app.panSequenceNumber, authorisationData: changed))
            var wrongKey = profile.issuerMasterKey
            wrongKey[0] ^= 0x02
            #expect(!ApplicationCryptogram.verify(issuerMasterKey: wrongKey, pan: app.pan,
                                                  panSequenceNumber: app.panSequenceNumber, authorisationData: authorisation))
        }
    }

    @Test("built-in profiles: unique names, summaries, Luhn-valid test PANs, expiry in the future")
    func catalogue() throws {
        let names = CardProfiles.all.map(\.name)
        #expect(Set(names).count == names.count)
        for required in ["visa-qvsdc", "mastercard-mchip", "amex", "two-apps", "no-ppse", "chained", "offline-decline",
                         "slow", "torn", "mute", "visa-online-pin", "visa-cdcvm"] {
            #expect(names.contains(required))
        }
        for p in CardProfiles.all {
            #expect(!p.summary.isEmpty)
            try p.validate()
            for app in p.applications {
                #expect(app.pan.isLuhnValid)
                // Visa, Mastercard, Amex, JCB, UnionPay and Maestro (girocard) public test ranges.
                #expect(["4", "5", "37", "35", "62", "67"].contains { app.pan.digits.hasPrefix($0) })
            }
        }
    }
}

@Suite("Emulated card: commands, order and status words")
struct EmulatedCardTests {
    let visa = CardProfiles.named("visa-qvsdc")!
    let mchip = CardProfiles.named("mastercard-mchip")!

    @Test("the ATR is the PC/SC contactless type A one, TCK included")
    func atr() {
        #expect(EmulatedCard(profile: visa).atr == [0x3B, 0x80, 0x80, 0x01, 0x01])
        var p = visa
        p.atrHistoricalBytes = [0x80, 0x73, 0xC8, 0x21, 0x10]
        let atr = EmulatedCard(profile: p).atr
        #expect(Array(atr.prefix(4)) == [0x3B, 0x85, 0x80, 0x01])
        #expect(atr.dropFirst().reduce(0, ^) == 0)  // TCK makes the XOR from T0 zero
        #expect(ContactlessATR.typeA(historicalBytes: [UInt8](repeating: 1, count: 20)).count == 4 + 15 + 1)
    }

    @Test("GPO before any SELECT is 6985; with only the PPSE selected 6D00")
    func gpoOrder() throws {
        let t = Terminal(visa)
        let app = visa.applications[0]
        #expect(try t.gpo(app).statusWord == .conditionsOfUseNotSatisfied)
        #expect(try t.send(.selectPPSE).statusWord == .success)
        #expect(try t.gpo(app).statusWord == .instructionNotSupported)
        #expect(try t.send(.select(name: app.aid)).statusWord == .success)
        #expect(try t.gpo(app).statusWord == .success)
        // Only once per selection.
        #expect(try t.gpo(app).statusWord == .conditionsOfUseNotSatisfied)
        // A new SELECT starts a new transaction.
        #expect(try t.send(.select(name: app.aid)).statusWord == .success)
        #expect(try t.gpo(app).statusWord == .success)
        #expect(t.card.transactionCounter() == visa.atc + 2)
    }

    @Test("READ RECORD before GPO is 6985; missing record 6A83; missing file 6A82; bad P1-P2 6A86")
    func readRecordOrder() throws {
        let t = Terminal(mchip)
        #expect(try t.send(.readRecord(1, sfi: 1)).statusWord == .conditionsOfUseNotSatisfied)
        _ = try t.send(.select(name: mchip.applications[0].aid))
        #expect(try t.send(.readRecord(1, sfi: 1)).statusWord == .conditionsOfUseNotSatisfied)
        #expect(try t.gpo(mchip.applications[0]).statusWord == .success)
        #expect(try t.send(.readRecord(1, sfi: 1)).statusWord == .success)
        #expect(try t.send(.readRecord(2, sfi: 2)).statusWord == .success)
        #expect(try t.send(.readRecord(9, sfi: 2)).statusWord == .recordNotFound)
        #expect(try t.send(.readRecord(1, sfi: 7)).statusWord == .fileNotFound)
        #expect(try t.send(.readRecord(0, sfi: 1)).statusWord == .incorrectP1P2)
        #expect(try t.send(CommandAPDU(cla: 0, ins: 0xB2, p1: 1, p2: 0x09, le: 0)).statusWord == .incorrectP1P2)
        #expect(try t.send(CommandAPDU(cla: 0, ins: 0xB2, p1: 1, p2: 0x00, le: 0)).statusWord == .incorrectP1P2)
        // After a power cycle nothing is selected.
        t.card.powerOn()
        #expect(try t.send(.readRecord(1, sfi: 1)).statusWord == .conditionsOfUseNotSatisfied)
    }

    @Test("GENERATE AC: order, CDOL1 length, P1, and the kind of cryptogram")
    func generateAC() throws {
        let app = mchip.applications[0]
        let t = Terminal(mchip)
        let cdol = try TerminalData().dolData(app.cdol1)
        #expect(try t.send(.generateAC(.arqc, cdolData: cdol)).statusWord == .conditionsOfUseNotSatisfied)
        _ = try t.send(.select(name: app.aid))
        #expect(try t.send(.generateAC(.arqc, cdolData: cdol)).statusWord == .conditionsOfUseNotSatisfied)
        #expect(try t.gpo(app).statusWord == .success)
        #expect(try t.send(.generateAC(.arqc, cdolData: cdol.dropLast())).statusWord == .wrongLength)
        #expect(try t.send(.generateAC(.arqc, cdolData: cdol + [0])).statusWord == .wrongLength)
        #expect(try t.send(CommandAPDU(cla: 0x80, ins: 0xAE, p1: 0x80, p2: 0, le: 0)).statusWord == .wrongLength)
        #expect(try t.send(CommandAPDU(cla: 0x80, ins: 0xAE, p1: 0xC0, p2: 0, data: cdol, le: 0)).statusWord == .incorrectP1P2)
        #expect(try t.send(CommandAPDU(cla: 0x80, ins: 0xAE, p1: 0x80, p2: 1, data: cdol, le: 0)).statusWord == .incorrectP1P2)
        #expect(t.card.transactionCounter() == mchip.atc)  // nothing counted yet
        // A TC request from an online-only card gets an ARQC.
        let r = try t.send(.generateAC(.tc, cdolData: cdol))
        #expect(r.statusWord == .success)
        #expect(try r.tlv().find(.cryptogramInformationData)?.valueBytes == [0x80])
        #expect(t.card.transactionCounter() == mchip.atc + 1)
        // One GENERATE AC per transaction.
        #expect(try t.send(.generateAC(.arqc, cdolData: cdol)).statusWord == .conditionsOfUseNotSatisfied)
        // An AAC request gets an AAC.
        _ = try t.send(.select(name: app.aid))
        _ = try t.gpo(app)
        let aac = try t.send(.generateAC(.aac, cdolData: cdol))
        #expect(try aac.tlv().find(.cryptogramInformationData)?.valueBytes == [0x00])
        #expect(t.card.transactionCounter() == mchip.atc + 2)
        // A qVSDC application does not know GENERATE AC.
        let v = Terminal(visa)
        _ = try v.send(.select(name: visa.applications[0].aid))
        _ = try v.gpo(visa.applications[0])
        #expect(try v.send(.generateAC(.arqc, cdolData: cdol)).statusWord == .instructionNotSupported)
    }

    @Test("GPO data: template 83 and the PDOL length")
    func gpoData() throws {
        let app = visa.applications[0]
        let pdolData = try TerminalData().dolData(app.pdol)
        let cases: [(String, [UInt8], StatusWord)] = [
            ("one byte short", [0x83, UInt8(pdolData.count - 1)] + pdolData.dropLast(), .wrongLength),
            ("one byte long", [0x83, UInt8(pdolData.count + 1)] + pdolData + [0], .wrongLength),
            ("empty template", [0x83, 0x00], .wrongLength),
            ("not template 83", [0x84, UInt8(pdolData.count)] + pdolData, .incorrectData),
            ("length beyond the data", [0x83, UInt8(pdolData.count + 5)] + pdolData, .incorrectData),
            ("trailing bytes", [0x83, UInt8(pdolData.count)] + pdolData + [0x00], .incorrectData),
            ("the right data", [0x83, UInt8(pdolData.count)] + pdolData, .success),
        ]
        for (label, data, sw) in cases {
            let t = Terminal(visa)
            _ = try t.send(.select(name: app.aid))
            let r = try t.send(CommandAPDU(cla: 0x80, ins: 0xA8, p1: 0, p2: 0, data: data, le: 0))
            #expect(r.statusWord == sw, "\(label)")
        }
        let t = Terminal(visa)
        _ = try t.send(.select(name: app.aid))
        #expect(try t.send(CommandAPDU(cla: 0x80, ins: 0xA8, p1: 0, p2: 0, le: 0)).statusWord == .wrongLength)
        #expect(try t.send(CommandAPDU(cla: 0x80, ins: 0xA8, p1: 1, p2: 0, data: [0x83, 0], le: 0)).statusWord == .incorrectP1P2)
        // An empty PDOL takes 83 00 exactly.
        let m = Terminal(mchip)
        _ = try m.send(.select(name: mchip.applications[0].aid))
        #expect(try m.send(.getProcessingOptions(pdolData: [0])).statusWord == .wrongLength)
        #expect(try m.send(.getProcessingOptions(pdolData: [])).statusWord == .success)
    }

    @Test("unknown instruction 6D00, unknown class 6E00, malformed APDUs 6700")
    func statusWords() throws {
        let t = Terminal(visa)
        #expect(try t.send(CommandAPDU(cla: 0, ins: 0x84, p1: 0, p2: 0, le: 8)).statusWord == .instructionNotSupported)
        #expect(try t.send(CommandAPDU(cla: 0x80, ins: 0x50, p1: 0, p2: 0)).statusWord == .instructionNotSupported)
        #expect(try t.send(CommandAPDU(cla: 0x90, ins: 0xA4, p1: 4, p2: 0, data: ppseName, le: 0)).statusWord == .classNotSupported)
        #expect(try t.send(CommandAPDU(cla: 0xFF, ins: 0xCA, p1: 0, p2: 0, le: 0)).statusWord == .classNotSupported)
        #expect(try t.send(CommandAPDU(cla: 0x80, ins: 0xA4, p1: 4, p2: 0, data: ppseName, le: 0)).statusWord == .classNotSupported)
        #expect(try t.send(CommandAPDU(cla: 0x00, ins: 0xA8, p1: 0, p2: 0, data: [0x83, 0], le: 0)).statusWord == .classNotSupported)
        for bytes in [[], [0x00], [0x00, 0xA4, 0x04], [0x00, 0xA4, 0x04, 0x00, 0x05, 0x01],
                      [0x00, 0xA4, 0x04, 0x00, 0x00, 0x00, 0x01, 0xA0], [0x00, 0xB2, 0x01, 0x0C, 0x00, 0x01, 0x00]] as [[UInt8]] {
            #expect(try t.send(bytes: bytes).statusWord == .wrongLength, "\(Hex.encode(bytes))")
        }
    }

    @Test("SELECT: unknown AID 6A82, bad P1-P2 6A86, bad length 6700")
    func select() throws {
        let t = Terminal(visa)
        #expect(try t.send(.select(name: hex("A0000000041010"))).statusWord == .fileNotFound)
        #expect(try t.send(.select(name: hex("A0"))).statusWord == .fileNotFound)
        #expect(try t.send(.select(name: Array("1PAY.SYS.DDF01".utf8))).statusWord == .fileNotFound)
        #expect(try t.send(CommandAPDU(cla: 0, ins: 0xA4, p1: 0, p2: 0, data: ppseName, le: 0)).statusWord == .incorrectP1P2)
        #expect(try t.send(CommandAPDU(cla: 0, ins: 0xA4, p1: 4, p2: 0x0C, data: ppseName, le: 0)).statusWord == .incorrectP1P2)
        #expect(try t.send(CommandAPDU(cla: 0, ins: 0xA4, p1: 4, p2: 0, le: 0)).statusWord == .wrongLength)
        #expect(try t.send(CommandAPDU(cla: 0, ins: 0xA4, p1: 4, p2: 0, data: [UInt8](repeating: 0xA0, count: 17), le: 0))
            .statusWord == .wrongLength)
        // A failed SELECT leaves the current application selected.
        #expect(try t.send(.select(name: visa.applications[0].aid)).statusWord == .success)
        #expect(try t.send(.select(name: hex("A0000000049999"))).statusWord == .fileNotFound)
        #expect(try t.gpo(visa.applications[0]).statusWord == .success)
    }

    @Test("two applications: PPSE priorities, partial selection and next occurrence")
    func twoApplications() throws {
        let p = try #require(CardProfiles.named("two-apps"))
        let t = Terminal(p)
        let ppse = try t.send(.selectPPSE)
        let entries = try #require(try ppse.tlv().find(.fciIssuerDiscretionaryData)).children
        let byLabel = Dictionary(uniqueKeysWithValues: entries.map {
            (String(decoding: $0.child(.applicationLabel)?.value ?? [], as: UTF8.self),
             $0.child(.applicationPriorityIndicator)?.valueBytes ?? [])
        })
        #expect(byLabel == ["VISA DEBIT": [2], "VISA CREDIT": [1]])

        let rid = hex("A000000003")
        let first = try t.send(.select(name: rid))
        #expect(try first.tlv().find(.dedicatedFileName)?.valueBytes == p.applications[0].aid)
        let second = try t.send(.select(name: rid, nextOccurrence: true))
        #expect(try second.tlv().find(.dedicatedFileName)?.valueBytes == p.applications[1].aid)
        #expect(try t.send(.select(name: rid, nextOccurrence: true)).statusWord == .fileNotFound)
        // Each application has its own PAN and ATC.
        _ = try t.send(.select(name: p.applications[1].aid))
        _ = try t.gpo(p.applications[1])
        #expect(t.card.transactionCounter(application: 1) == p.atc + 1)
        #expect(t.card.transactionCounter(application: 0) == p.atc)
        #expect(p.applications[0].pan != p.applications[1].pan)
    }

    @Test("no PPSE: 6A82 to the PPSE, selection by AID works")
    func noPPSE() throws {
        let p = try #require(CardProfiles.named("no-ppse"))
        let t = Terminal(p)
        #expect(try t.send(.selectPPSE).statusWord == .fileNotFound)
        #expect(try t.send(.select(name: p.applications[0].aid)).statusWord == .success)
    }

    @Test("ATC: increments per cryptogram, survives power cycles, deterministic cryptograms")
    func atcAndDeterminism() throws {
        let app = visa.applications[0]
        func run(_ t: Terminal, un: [UInt8]) throws -> (ac: [UInt8], atc: [UInt8]) {
            t.card.powerOn()
            _ = try t.send(.select(name: app.aid))
            let r = try t.gpo(app, TerminalData(unpredictableNumber: un)).tlv()
            return (try #require(r.find(.applicationCryptogram)).valueBytes,
                    try #require(r.find(.applicationTransactionCounter)).valueBytes)
        }
        let a = Terminal(visa), b = Terminal(visa)
        let a1 = try run(a, un: [1, 2, 3, 4]), b1 = try run(b, un: [1, 2, 3, 4])
        #expect(a1.ac == b1.ac && a1.atc == b1.atc)
        let a2 = try run(a, un: [1, 2, 3, 4])
        #expect(a2.atc != a1.atc)
        #expect(a2.ac != a1.ac)  // the ATC changes the session key
        let b2 = try run(b, un: [9, 9, 9, 9])
        #expect(b2.atc == a2.atc && b2.ac != a2.ac)  // the UN is in the input
        #expect(a.card.transactionCounter() == visa.atc + 2)
        #expect(a.card.exchangeCount == 4)
    }

    @Test("the ATC runs out at FFFF: no more cryptograms (6985)")
    func atcExhausted() throws {
        var p = visa
        p.atc = 0xFFFE
        let t = Terminal(p)
        _ = try t.send(.select(name: p.applications[0].aid))
        #expect(try t.gpo(p.applications[0]).statusWord == .success)
        _ = try t.send(.select(name: p.applications[0].aid))
        #expect(try t.gpo(p.applications[0]).statusWord == .conditionsOfUseNotSatisfied)
        #expect(t.card.transactionCounter() == 0xFFFF)
    }

    @Test("offline decline: an ARQC request is answered with an AAC (CID 00)")
    func offlineDecline() throws {
        let p = try #require(CardProfiles.named("offline-decline"))
        let app = p.applications[0]
        let t = Terminal(p)
        _ = try t.send(.select(name: app.aid))
        _ = try t.gpo(app)
        let r = try t.send(.generateAC(.arqc, cdolData: TerminalData().dolData(app.cdol1)))
        #expect(try r.tlv().find(.cryptogramInformationData)?.valueBytes == [0x00])
    }

    @Test("GET DATA: ATC, profile objects, 6A88, 6985 before selection")
    func getData() throws {
        let t = Terminal(mchip)
        #expect(try t.send(.getData(tag: 0x9F36)).statusWord == .conditionsOfUseNotSatisfied)
        _ = try t.send(.select(name: mchip.applications[0].aid))
        let atc = try t.send(.getData(tag: 0x9F36))
        #expect(atc.data == [0x9F, 0x36, 0x02, UInt8(mchip.atc >> 8), UInt8(mchip.atc & 0xFF)])
        #expect(try t.send(.getData(tag: 0x9F17)).data == [0x9F, 0x17, 0x01, 0x03])
        #expect(try t.send(.getData(tag: 0x9F4F)).statusWord == .referencedDataNotFound)
    }

    @Test("CVM: the CTQ asks for online PIN only when the reader requires a CVM; the CVM list is readable")
    func onlinePIN() throws {
        let p = try #require(CardProfiles.named("visa-online-pin"))
        let app = p.applications[0]
        for (required, ctq) in [(false, [0x16, 0x00]), (true, [0x96, 0x00])] as [(Bool, [UInt8])] {
            let t = Terminal(p)
            _ = try t.send(.select(name: app.aid))
            let r = try t.gpo(app, TerminalData(amount: 10000, cvmRequired: required))
            #expect(try r.tlv().find(.cardTransactionQualifiers)?.valueBytes == ctq)
            let record = try t.send(.readRecord(2, sfi: 3))
            #expect(try record.tlv().find(.cvmList)?.valueBytes == hex("000013880000000042071F06"))
        }
    }
}

@Suite("Consumer device CVM")
struct CDCVMTests {
    @Test("a phone's CTQ says the consumer device CVM was performed")
    func cdcvm() throws {
        let p = try #require(CardProfiles.named("visa-cdcvm"))
        let t = Terminal(p)
        _ = try t.send(.select(name: p.applications[0].aid))
        let r = try t.gpo(p.applications[0], TerminalData(amount: 10000, cvmRequired: true))
        #expect(try r.tlv().find(.cardTransactionQualifiers)?.valueBytes == [0x00, 0x80])
        #expect(t.card.process(CommandAPDU.readRecord(1, sfi: 3)).responseBytes?.suffix(2) == [0x90, 0x00])
    }
}

@Suite("Emulated card: transmission behaviour (61xx, 6Cxx, time, tear, mute, scripts)")
struct CardBehaviourTests {
    let chained = CardProfiles.named("chained")!

    @Test("61xx: data through GET RESPONSE, in parts when Le is smaller")
    func getResponse() throws {
        let t = Terminal(chained)
        let first = try t.send(.selectPPSE)
        #expect(first.sw1 == 0x61 && first.data.isEmpty)
        let total = Int(first.sw2)
        let part = try t.send(.getResponse(10))
        #expect(part.data.count == 10 && part.statusWord == StatusWord(sw1: 0x61, sw2: UInt8(total - 10)))
        let rest = try t.send(.getResponse(UInt8(total - 10)))
        #expect(rest.statusWord == .success)
        let fci = try BERTLV.parse(part.data + rest.data)
        #expect(fci.first(.fciTemplate)?.child(.dedicatedFileName)?.valueBytes == ppseName)
        // Nothing left.
        #expect(try t.send(.getResponse(0)).statusWord == .conditionsOfUseNotSatisfied)
    }

    @Test("6Cxx: a wrong Le is answered with the exact length and changes nothing")
    func exactLe() throws {
        let t = Terminal(chained)
        let app = chained.applications[0]
        let select = try t.send(.select(name: app.aid))
        #expect(select.sw1 == 0x61)
        // GET RESPONSE with Le 00 asks for too much: 6Cxx, the data stays.
        let wrong = try t.send(.getResponse(0))
        #expect(wrong.sw1 == 0x6C && wrong.sw2 == select.sw2)
        let right = try t.send(.getResponse(wrong.sw2))
        #expect(right.statusWord == .success && right.data.count == Int(select.sw2))
        // GPO (case 4) answers 61xx; READ RECORD (case 2) with Le 00 answers 6Cxx.
        let gpo = try t.exchange(.getProcessingOptions(pdolData: TerminalData().dolData(app.pdol)))
        #expect(gpo.statusWord == .success)
        let record = try t.send(.readRecord(1, sfi: 3))
        #expect(record.sw1 == 0x6C)
        #expect(t.card.transactionCounter() == chained.atc + 1)
        let again = try t.send(.readRecord(1, sfi: 3).withExpectedLength(Int(record.sw2)))
        #expect(again.statusWord == .success && again.data.count == Int(record.sw2))
        // A command without Le is a case 1: 6Cxx too.
        #expect(try t.send(bytes: [0x00, 0xB2, 0x01, 0x1C]).sw1 == 0x6C)
    }

    @Test("6Cxx does not execute the command: a case 4 GPO under exact Le only")
    func exactLeNoSideEffects() throws {
        var p = CardProfiles.named("visa-qvsdc")!
        p.behaviour.demandsExactLe = true
        let app = p.applications[0]
        let t = Terminal(p)
        _ = try t.exchange(.select(name: app.aid))
        let first = try t.send(.getProcessingOptions(pdolData: TerminalData().dolData(app.pdol)))
        #expect(first.sw1 == 0x6C)
        #expect(t.card.transactionCounter() == p.atc)
        let gpo = try t.exchange(.getProcessingOptions(pdolData: TerminalData().dolData(app.pdol)))
        #expect(gpo.statusWord == .success)
        #expect(t.card.transactionCounter() == p.atc + 1)
    }

    @Test("card time: the slow card reports 150 ms per command, an instant card zero")
    func cardTime() {
        let slow = EmulatedCard(profile: CardProfiles.named("slow")!)
        let fast = EmulatedCard(profile: CardProfiles.named("visa-qvsdc")!)
        #expect(slow.process(CommandAPDU.selectPPSE.bytes) == fast.process(CommandAPDU.selectPPSE.bytes).withTime(.milliseconds(150)))
        guard case .response(_, let t) = fast.process([0x00, 0x84, 0, 0, 8]) else { Issue.record("no answer"); return }
        #expect(t == .zero)
        var p = CardProfiles.named("visa-qvsdc")!
        p.behaviour.cardTimeByInstruction = [0xA8: .milliseconds(400)]
        p = p.withCardTime(.milliseconds(20))
        let card = EmulatedCard(profile: p)
        guard case .response(_, let select) = card.process(CommandAPDU.selectPPSE.bytes),
              case .response(_, let gpo) = card.process(CommandAPDU.getProcessingOptions(pdolData: []).bytes) else {
            Issue.record("no answer"); return
        }
        #expect(select == .milliseconds(20) && gpo == .milliseconds(400))
    }

    @Test("torn: removed after exchange 3, until powered on again")
    func torn() throws {
        let p = try #require(CardProfiles.named("torn"))
        let app = p.applications[0]
        let card = EmulatedCard(profile: p)
        #expect(card.process(CommandAPDU.selectPPSE.bytes).responseBytes != nil)
        #expect(card.process(CommandAPDU.select(name: app.aid).bytes).responseBytes != nil)
        let gpo = card.process(CommandAPDU.getProcessingOptions(pdolData: try TerminalData().dolData(app.pdol)).bytes)
        #expect(gpo.responseBytes?.suffix(2) == [0x90, 0x00])
        #expect(card.process(CommandAPDU.readRecord(1, sfi: 3).bytes) == .removed)
        #expect(card.process(CommandAPDU.selectPPSE.bytes) == .removed)
        #expect(card.exchangeCount == 5)
        // Presented again, it answers (the ATC of the torn transaction is kept).
        card.powerOn()
        #expect(card.process(CommandAPDU.selectPPSE.bytes).responseBytes?.suffix(2) == [0x90, 0x00])
        #expect(card.transactionCounter() == p.atc + 1)
        // Any profile can be torn.
        let early = EmulatedCard(profile: CardProfiles.named("amex")!.withTear(afterExchange: 0))
        #expect(early.process(CommandAPDU.selectPPSE.bytes) == .removed)
    }

    @Test("mute: never answers exchange 3, until powered on again")
    func mute() throws {
        let p = try #require(CardProfiles.named("mute"))
        let app = p.applications[0]
        let card = EmulatedCard(profile: p)
        _ = card.process(CommandAPDU.selectPPSE.bytes)
        _ = card.process(CommandAPDU.select(name: app.aid).bytes)
        #expect(card.process(CommandAPDU.getProcessingOptions(pdolData: try TerminalData().dolData(app.pdol)).bytes) == .mute)
        #expect(card.process(CommandAPDU.selectPPSE.bytes) == .mute)
        card.powerOn()
        #expect(card.process(CommandAPDU.selectPPSE.bytes).responseBytes?.suffix(2) == [0x90, 0x00])
        #expect(card.transactionCounter() == p.atc)
        let first = EmulatedCard(profile: CardProfiles.named("mastercard-mchip")!.withMute(atExchange: 1))
        #expect(first.process(CommandAPDU.selectPPSE.bytes) == .mute)
    }

    @Test("scripted responses answer verbatim (a card that lies)")
    func scripted() throws {
        let p = CardProfiles.named("visa-qvsdc")!.withScriptedResponse(commandPrefix: [0x00, 0xA4, 0x04, 0x00, 0x0E],
                                                                       response: [0x6F, 0x05, 0x90, 0x00])
        let t = Terminal(p)
        #expect(try t.send(.selectPPSE).bytes == [0x6F, 0x05, 0x90, 0x00])
        #expect(try t.send(.select(name: p.applications[0].aid)).statusWord == .success)
    }

    @Test("garbage never crashes: random bytes, random commands in every state")
    func garbage() throws {
        var rng = SplitMix64(seed: 0x7A9E)
        for profile in CardProfiles.all {
            let card = EmulatedCard(profile: profile.answering)
            let app = profile.applications[0]
            let valid: [[UInt8]] = [
                CommandAPDU.selectPPSE.bytes, CommandAPDU.select(name: app.aid).bytes,
                try CommandAPDU.getProcessingOptions(pdolData: TerminalData().dolData(app.pdol)).bytes,
                CommandAPDU.readRecord(1, sfi: 1).bytes, CommandAPDU.readRecord(1, sfi: 3).bytes,
                try CommandAPDU.generateAC(.arqc, cdolData: TerminalData().dolData(app.cdol1)).bytes,
                CommandAPDU.getResponse(0).bytes, CommandAPDU.getData(tag: 0x9F36).bytes,
            ]
            for _ in 0..<600 {
                var command: [UInt8]
                switch Int.random(in: 0..<4, using: &rng) {
                case 0:
                    command = (0..<Int.random(in: 0..<300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                case 1:
                    command = valid.randomElement(using: &rng)!
                case 2:
                    command = valid.randomElement(using: &rng)!
                    if !command.isEmpty { command[Int.random(in: 0..<command.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
                default:
                    command = Array(valid.randomElement(using: &rng)!.prefix(Int.random(in: 0..<12, using: &rng)))
                }
                if Int.random(in: 0..<40, using: &rng) == 0 { card.powerOn() }
                let reply = card.process(command)
                let bytes = try #require(reply.responseBytes)
                #expect(bytes.count >= 2)
            }
        }
    }
}

extension CardReply {
    func withTime(_ time: Duration) -> CardReply {
        if case .response(let b, _) = self { return .response(b, cardTime: time) }
        return self
    }
}
