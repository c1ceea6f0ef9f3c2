import BERTLV
import PaymentRules
@testable import PaymentGateway
import Testing
import VirtualCard
import TestSupport

@Suite("Cryptogram verification")
struct CryptogramTests {
    @Test("a known card with the right cryptogram is verified and approved")
    func verified() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let r = try await g.authorize(Fixture.request(orderId: "v", amount: 1234))
        #expect(r.cryptogram == .verified)
        #expect(r.status == .approved)
    }

    @Test("a known card with a wrong cryptogram is declined, and the message says why")
    func wrongCryptogram() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let r = try await g.authorize(Fixture.request(orderId: "w", amount: 1000,
                                                      emv: Fixture.emv(amount: 1000, corrupt: true)))
        #expect(r.status == .declined)
        #expect(r.cryptogram == .failed)
        #expect(r.statusCode == "82")
        #expect(r.statusMessage.contains("cryptogram"))
        #expect(try await g.charges(orderId: "w").first?.cryptogram == .failed)
    }

    @Test("a cryptogram made under another key, for another ATC, or without 9F26 fails",
          arguments: ["key", "psn", "noAC"])
    func otherWrongCryptograms(_ what: String) async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        var emv: [UInt8]
        var psn: UInt8 = 1
        switch what {
        case "key": emv = Fixture.emv(amount: 1000, key: [UInt8](repeating: 0x11, count: 16))
        case "psn":
            emv = Fixture.emv(psn: 1, amount: 1000)
            psn = 2   // the request says another PSN than the card used
        default:
            emv = try BERTLV.parse(Fixture.emv(amount: 1000)).filter { $0.tag != .applicationCryptogram }.encoded
        }
        let r = try await g.authorize(Fixture.request(orderId: "x", amount: 1000, psn: psn, emv: emv))
        #expect(r.cryptogram == .failed)
        #expect(r.status == .declined)
    }

    @Test("an unknown card is authorised as unverified, whatever its cryptogram")
    func unverified() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir, knownCards: [])
        let r = try await g.authorize(Fixture.request(orderId: "u", amount: 1000,
                                                      emv: Fixture.emv(amount: 1000, corrupt: true)))
        #expect(r.cryptogram == .unverified)
        #expect(r.status == .approved)
        let amex = try await g.authorize(Fixture.request(orderId: "u2", amount: 1000, pan: Fixture.amex, emv: []))
        #expect(amex.cryptogram == .unverified && amex.status == .approved && amex.cardBrand == .amex)
    }

    @Test("issuer keys by BIN prefix; an exact PAN wins")
    func keyStorePrefixes() {
        let a = IssuerKey(masterKey: [UInt8](repeating: 1, count: 16))
        let b = IssuerKey(masterKey: [UInt8](repeating: 2, count: 16))
        let c = IssuerKey(masterKey: [UInt8](repeating: 3, count: 16))
        let store = StaticIssuerKeyStore(cards: [Fixture.visa: c], prefixes: ["4": a, "476173": b])
        #expect(store.issuerKey(for: Fixture.visa, panSequenceNumber: 1) == c)
        #expect(store.issuerKey(for: PAN("4761739001010119")!, panSequenceNumber: 1) == b)
        #expect(store.issuerKey(for: Fixture.otherVisa, panSequenceNumber: 1) == a)
        #expect(store.issuerKey(for: Fixture.amex, panSequenceNumber: 0) == nil)
        #expect(!"\(a)".contains("01"))
    }

    /// A verifier that answers what the test says, to check the gateway's use of it alone.
    struct StubVerifier: CryptogramVerifier {
        let answer: Bool
        func verify(issuerKey: IssuerKey, pan: PAN, panSequenceNumber: UInt8, emvData: [TLV]) -> Bool { answer }
    }

    @Test("the gateway follows an injected verifier", arguments: [true, false])
    func injectedVerifier(_ answer: Bool) async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir, verifier: StubVerifier(answer: answer))
        let r = try await g.authorize(Fixture.request(orderId: "s", amount: 1000))
        #expect(r.cryptogram == (answer ? .verified : .failed))
        #expect(r.status == (answer ? .approved : .declined))
    }
}

@Suite("Virtual cards end to end")
struct VirtualCardGatewayTests {
    /// Runs SELECT and GET PROCESSING OPTIONS on an emulated `visa-qvsdc` card and returns the
    /// authorisation data a kernel would send: the card's cryptogram objects plus the PDOL values.
    static func readQVSDC(amount: Int) throws -> (pan: PAN, psn: UInt8, emv: [TLV]) {
        let profile = try #require(CardProfiles.named("visa-qvsdc"))
        let app = try #require(profile.applications.first)
        let card = EmulatedCard(profile: profile)
        card.powerOn()
        let select: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xA0, 0x00, 0x00, 0x00, 0x03, 0x10, 0x10, 0x00]
        let selected = try #require(card.process(select).responseBytes)
        #expect(Array(selected.suffix(2)) == [0x90, 0x00])
        let terminal: [(EMVTag, [UInt8])] = [
            (.terminalTransactionQualifiers, [0x36, 0x00, 0x40, 0x00]),
            (.amountAuthorised, BCD.encodeNumeric(UInt64(amount), length: 6)),
            (.amountOther, BCD.encodeNumeric(0, length: 6)),
            (.terminalCountryCode, [0x07, 0x24]),
            (.terminalVerificationResults, [0, 0, 0, 0, 0]),
            (.transactionCurrencyCode, [0x09, 0x78]),
            (.transactionDate, [0x26, 0x11, 0x30]),
            (.transactionType, [0x00]),
            (.unpredictableNumber, [0x12, 0x34, 0x56, 0x78]),
        ]
        let pdolData = terminal.flatMap(\.1)
        let gpo: [UInt8] = [0x80, 0xA8, 0x00, 0x00, UInt8(pdolData.count + 2), 0x83, UInt8(pdolData.count)] + pdolData + [0x00]
        let answer = try #require(card.process(gpo).responseBytes)
        #expect(Array(answer.suffix(2)) == [0x90, 0x00])
        let template = try BERTLV.parse(Array(answer.dropLast(2)))
        var emv: [TLV] = []
        for tag in [EMVTag.applicationCryptogram, .cryptogramInformationData, .applicationTransactionCounter,
                    .issuerApplicationData, .applicationInterchangeProfile, .track2EquivalentData] {
            if let t = template.find(tag) { emv.append(TLV(tag: tag, value: t.value)) }
        }
        #expect(emv.count == 6)
        for (tag, value) in terminal { emv.append(TLV(tag: tag, value: value)) }
        return (app.pan, app.panSequenceNumber, emv)
    }

    @Test("a payment with tapemu's visa-qvsdc card is verified with the default issuer keys")
    func defaultKeysVerifyVirtualCard() async throws {
        let dir = TempDir()
        let g = try EmbeddedGateway(configuration: .init(dataDirectory: dir.path))
        let read = try Self.readQVSDC(amount: 2500)
        let request = AuthorisationRequest(orderId: "vc-1", amount: 2500,
                                           card: CardData(pan: read.pan, panSequenceNumber: read.psn, emv: read.emv))
        let r = try await g.authorize(request)
        #expect(r.cryptogram == .verified)
        #expect(r.status == .approved)
        // The same data with the amount changed is refused before any decision (9F02 is signed).
        var tampered = request
        tampered.orderId = "vc-2"
        tampered.amount = 2600
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.authorize(tampered) }
                == .invalidRequest)
        // A changed unpredictable number breaks the cryptogram: declined.
        var replayed = request
        replayed.orderId = "vc-3"
        replayed.card.emvData = read.emv.map { $0.tag == .unpredictableNumber ? TLV(tag: $0.tag, value: [0, 0, 0, 1]) : $0 }.encoded
        let d = try await g.authorize(replayed)
        #expect(d.cryptogram == .failed && d.status == .declined)
    }

    @Test("every built-in profile's PAN has its key in the default store")
    func everyProfileKnown() {
        let store = VirtualCardIssuerKeys()
        for p in CardProfiles.all {
            for app in p.applications {
                #expect(store.issuerKey(for: app.pan, panSequenceNumber: app.panSequenceNumber)?.masterKey == p.issuerMasterKey)
            }
        }
        #expect(store.issuerKey(for: PAN("4000000000000002")!, panSequenceNumber: 0) == nil)
    }
}
