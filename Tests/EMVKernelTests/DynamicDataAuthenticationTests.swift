import BERTLV
import CardChannel
@testable import EMVKernel
import ISO7816
import Testing
import TestSupport
import VirtualCard

/// DDA (EMV Book 2 §6.5, Book 3 §10.3): INTERNAL AUTHENTICATE with the DDOL, the signature over
/// the DDOL data, the ICC dynamic number into CDOL1, and when the kernel runs it.
@Suite struct DynamicDataAuthenticationTests {
    struct Read {
        var oda: ODAResult?
        var online: Bool
        var exchanges: [Exchange]
        var objects: [TLV]
        var error: KernelError?

        var internalAuthenticate: Exchange? { exchanges.first { $0.command.instructionCode == 0x88 } }
        var generateAC: Exchange? { exchanges.last { $0.command.instructionCode == 0xAE } }
    }

    /// A terminal that supports DDA and CDA (9F33 byte 3 `48`; tapemu's default reader does CDA only).
    static let ddaTerminal: TerminalConfiguration = {
        var c = TerminalConfiguration.default
        c.terminalCapabilities[2] |= 0x40
        return c
    }()

    func read(_ profile: CardProfile, configuration: TerminalConfiguration = ddaTerminal) async -> Read {
        let reader = EMVReader(configuration: configuration, environment: testEnvironment)
        let channel = VirtualCardChannel(card: EmulatedCard(profile: profile), simulatesCardTime: false)
        do throws(KernelError) {
            let r = try await reader.read(channel: channel, transaction: Transaction(amount: 1250))
            return Read(oda: r.oda, online: r.cryptogram.kind == .arqc, exchanges: r.exchanges,
                        objects: r.cardDataObjects, error: nil)
        } catch {
            return Read(oda: error.partial?.oda, online: false, exchanges: error.partial?.exchanges ?? [], objects: [],
                        error: error)
        }
    }

    func card(_ name: String) throws -> CardProfile { try #require(CardProfiles.named(name)) }

    // CDOL1 of the M/Chip cards: 9F02 6, 9F03 6, 9F1A 2, 95 5 (offset 14), 5F2A 2, 9A 3, 9C 1,
    // 9F37 4 (offset 25), 9F35 1, 9F45 2, 9F4C 8 (offset 32).
    static let tvrAt = 14, unpredictableNumberAt = 25, dynamicNumberAt = 32

    @Test("mastercard-mchip-dda: INTERNAL AUTHENTICATE with the card's DDOL (the unpredictable number) before GENERATE AC, signature verified, the ICC dynamic number in CDOL1's 9F4C, GENERATE AC without CDA")
    func verified() async throws {
        let r = await read(try card("mastercard-mchip-dda"))
        #expect(r.error == nil)
        let oda = try #require(r.oda)
        #expect(oda.method == .dda)
        #expect(oda.issuerCertificate == .passed && oda.iccCertificate == .passed && oda.signature == .passed)
        #expect(oda.tvrByte1 == 0)
        #expect(oda.caKey == "A000000004/E7")
        #expect(r.online)
        let ia = try #require(r.internalAuthenticate)
        let genAC = try #require(r.generateAC)
        #expect(r.exchanges.firstIndex { $0.command.instructionCode == 0x88 }! == r.exchanges.count - 2)
        #expect(ia.command.data.count == 4)
        #expect(ia.command.data[...] == genAC.command.data[Self.unpredictableNumberAt..<(Self.unpredictableNumberAt + 4)])
        #expect(genAC.command.p1Parameter == 0x80)
        #expect(genAC.command.data[Self.tvrAt] == 0x00)
        let idn = try #require(r.objects.first { $0.tag == .iccDynamicNumber }?.valueBytes)
        #expect(idn.count == 8)
        #expect(Array(genAC.command.data[Self.dynamicNumberAt..<(Self.dynamicNumberAt + 8)]) == idn)
    }

    @Test("oda-dda-tampered-sdad: DDA failed in TVR byte 1 and in CDOL1, no dynamic number, and the card goes online (Book 3: the issuer judges)")
    func tampered() async throws {
        let r = await read(try card("oda-dda-tampered-sdad"))
        let oda = try #require(r.oda)
        #expect(oda.method == .dda)
        #expect(oda.tvrByte1 == TVR1.ddaFailed)
        #expect(oda.signature.failure?.contains("9F4B") == true)
        #expect(r.online)
        let genAC = try #require(r.generateAC)
        #expect(genAC.command.data[Self.tvrAt] == TVR1.ddaFailed)
        #expect(genAC.command.data[Self.dynamicNumberAt..<(Self.dynamicNumberAt + 8)].allSatisfy { $0 == 0 })
        #expect(!r.objects.contains { $0.tag == .iccDynamicNumber })
    }

    @Test("a terminal without DDA (9F33 byte 3 bit 7; tapemu's default reader) does not run it: no INTERNAL AUTHENTICATE, 'not performed' in CDOL1")
    func terminalWithoutDDA() async throws {
        #expect(TerminalConfiguration.default.terminalCapabilities[2] & 0x40 == 0)
        let r = await read(try card("mastercard-mchip-dda"), configuration: .default)
        #expect(r.oda == .notPerformed)
        #expect(r.internalAuthenticate == nil)
        #expect(r.generateAC?.command.data[Self.tvrAt] == TVR1.notPerformed)
    }

    @Test("card and terminal both doing CDA and DDA: CDA wins (Book 3 §10.3); a terminal without CDA runs DDA")
    func cdaBeforeDDA() async throws {
        // A DDA card whose AIP also says CDA: the kernel asks for CDA, which this card does not do
        // (it answers GENERATE AC without a signature): CDA failed, never INTERNAL AUTHENTICATE.
        // (The AIP is set before the card is personalised: the ICC certificate signs it.)
        var both = try card("mastercard-mchip-dda")
        both.applications[0].aip[0] |= 0x01
        let cda = await read(both)
        #expect(cda.oda?.method == .cda)
        #expect(cda.internalAuthenticate == nil)
        var noCDA = Self.ddaTerminal
        noCDA.terminalCapabilities[2] &= ~0x08
        let dda = await read(both, configuration: noCDA)
        #expect(dda.oda?.method == .dda)
        #expect(dda.oda?.succeeded == true)
    }

    @Test("a card without a DDOL gets the terminal's default DDOL (9F3704); without either DDA fails as ICC data missing, before any INTERNAL AUTHENTICATE")
    func defaultDDOL() async throws {
        let noDDOL = try card("mastercard-mchip-dda").withODA(CardODA(method: .dda, ddol: []))
        let r = await read(noDDOL)
        #expect(r.oda?.method == .dda && r.oda?.succeeded == true)
        #expect(r.internalAuthenticate?.command.data.count == 4)
        var configuration = Self.ddaTerminal
        configuration.defaultDDOL = []
        let none = await read(noDDOL, configuration: configuration)
        #expect(none.oda?.tvrByte1 == TVR1.ddaFailed | TVR1.iccDataMissing)
        #expect(none.internalAuthenticate == nil)
        #expect(none.online)
        // The card's own DDOL wins over the default, and must ask for the unpredictable number.
        let countryOnly = try card("mastercard-mchip-dda").withODA(CardODA(method: .dda, ddol: bytes("9F1A02")))
        let bad = await read(countryOnly)
        #expect(bad.oda?.signature.failure?.contains("9F37") == true)
        #expect(bad.internalAuthenticate == nil)
    }

    @Test("a card that refuses INTERNAL AUTHENTICATE or answers garbage: DDA failed, the read goes on online",
          arguments: [bytes("6985"), bytes("01029000"), bytes("80009000"), bytes("770A9F27018090009000")])
    func hostileAnswers(_ answer: [UInt8]) async throws {
        var profile = try card("mastercard-mchip-dda")
        profile.behaviour.scriptedResponses = [ScriptedResponse(commandPrefix: [0x00, 0x88], response: answer)]
        let r = await read(profile)
        #expect(r.oda?.method == .dda)
        #expect((r.oda?.tvrByte1 ?? 0) & TVR1.ddaFailed == TVR1.ddaFailed)
        #expect(r.oda?.signature.failure != nil)
        #expect(r.online)
        #expect((r.generateAC?.command.data[Self.tvrAt] ?? 0) & TVR1.ddaFailed != 0)
    }

    @Test("the virtual card answers INTERNAL AUTHENTICATE only for a DDA application, after GPO, with the DDOL's length")
    func cardSide() throws {
        let dda = EmulatedCard(profile: try card("mastercard-mchip-dda"))
        func send(_ card: EmulatedCard, _ hex: String) -> [UInt8] {
            guard case .response(let r, _) = card.process(bytes(hex)) else { return [] }
            return r
        }
        #expect(send(dda, "008800000412345678 00".replacingOccurrences(of: " ", with: "")) == bytes("6985"))  // nothing selected
        #expect(send(dda, "00A4040007A000000004101000").suffix(2) == [0x90, 0x00])
        #expect(send(dda, "80A8000002830000").suffix(2) == [0x90, 0x00])
        #expect(send(dda, "0088000003123456 00".replacingOccurrences(of: " ", with: "")) == bytes("6700"))   // DDOL asks 4
        let answer = send(dda, "00880000041234567800")
        #expect(answer.suffix(2) == [0x90, 0x00])
        #expect(answer.first == 0x80)
        let cda = EmulatedCard(profile: try card("mastercard-mchip"))
        _ = send(cda, "00A4040007A000000004101000")
        _ = send(cda, "80A8000002830000")
        #expect(send(cda, "00880000041234567800") == bytes("6D00"))
    }
}
