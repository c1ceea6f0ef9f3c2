import BERTLV
import CardChannel
import Cryptography
@testable import EMVKernel
import ISO7816
import Testing
import TestSupport
import VirtualCard

/// Offline data authentication (EMV Book 2) against the built-in virtual cards, each failure
/// card, SDA, the CA key list, and hostile certificates.
@Suite struct OfflineDataAuthenticationTests {
    /// What a read ended with: online (complete, an ARQC) or declined offline by the reader.
    enum Outcome: Equatable { case online, declinedOffline }

    func read(_ profile: CardProfile, configuration: TerminalConfiguration = .default)
        async -> (oda: ODAResult?, outcome: Outcome?, exchanges: [Exchange], error: KernelError?) {
        let reader = EMVReader(configuration: configuration, environment: testEnvironment)
        let channel = VirtualCardChannel(card: EmulatedCard(profile: profile), simulatesCardTime: false)
        do throws(KernelError) {
            let r = try await reader.read(channel: channel, transaction: Transaction(amount: 1250))
            return (r.oda, r.cryptogram.kind == .arqc ? .online : nil, r.exchanges, nil)
        } catch {
            return (error.partial?.oda, error.code == .cardDeclinedOffline ? .declinedOffline : nil,
                    error.partial?.exchanges ?? [], error)
        }
    }

    func card(_ name: String) throws -> CardProfile { try #require(CardProfiles.named(name)) }

    struct Case: Sendable, CustomTestStringConvertible {
        var card: String
        var method: ODAMethod
        var tvrByte1: UInt8
        var outcome: Outcome
        var testDescription: String { card }
    }

    static let cases: [Case] = [
        Case(card: "visa-qvsdc", method: .fdda, tvrByte1: 0x00, outcome: .online),
        Case(card: "mastercard-mchip", method: .cda, tvrByte1: 0x00, outcome: .online),
        Case(card: "oda-expired-issuer-certificate", method: .fdda, tvrByte1: TVR1.ddaFailed, outcome: .online),
        Case(card: "oda-revoked-certificate", method: .fdda, tvrByte1: 0x00, outcome: .online),   // no CRL given
        Case(card: "oda-tampered-sdad", method: .fdda, tvrByte1: TVR1.ddaFailed, outcome: .online),
        Case(card: "oda-wrong-hash", method: .cda, tvrByte1: TVR1.cdaFailed, outcome: .online),
        Case(card: "oda-missing-record", method: .cda, tvrByte1: TVR1.cdaFailed | TVR1.iccDataMissing, outcome: .online),
        Case(card: "oda-cda-mismatch", method: .cda, tvrByte1: TVR1.cdaFailed, outcome: .declinedOffline),
    ]

    @Test("each card authenticates by its method, or sets its TVR byte 1 bit and gets its book's outcome",
          arguments: cases)
    func builtInCards(c: Case) async throws {
        let r = await read(try card(c.card))
        let oda = try #require(r.oda)
        #expect(oda.method == c.method)
        #expect(oda.tvrByte1 == c.tvrByte1)
        #expect(oda.succeeded == (c.tvrByte1 == 0))
        #expect(r.outcome == c.outcome)
        if c.tvrByte1 == 0 {
            #expect(oda.signature == .passed)
            #expect(oda.caKey?.hasSuffix("/E7") == true)
        } else {
            #expect(oda.failure != nil)
        }
    }

    @Test("a revocation list naming the issuer certificate's serial fails it (DDA failed); without it the card passes")
    func revocationList() async throws {
        var configuration = TerminalConfiguration.default
        configuration.revocationList = try CertificateRevocationList.parse("# revoked\nA000000003 E7 0BAD01\n")
        let r = await read(try card("oda-revoked-certificate"), configuration: configuration)
        let oda = try #require(r.oda)
        #expect(oda.tvrByte1 == TVR1.ddaFailed)
        #expect(oda.issuerCertificate.failure?.contains("revocation") == true)
        // Another serial under the same key: the card passes.
        configuration.revocationList = try CertificateRevocationList.parse("A000000003 E7 0BAD02")
        #expect(await read(try card("oda-revoked-certificate"), configuration: configuration).oda?.succeeded == true)
    }

    @Test("CDA is asked for in GENERATE AC (P1 90) when certificates recover; after a certificate failure the TVR bit goes in CDOL1 and CDA is not asked for")
    func cdaRequestAndTVRInCDOL() async throws {
        let good = await read(try card("mastercard-mchip"))
        let goodGenAC = try #require(good.exchanges.last?.command)
        #expect(goodGenAC.instructionCode == 0xAE && goodGenAC.p1Parameter == 0x90)
        let bad = await read(try card("oda-wrong-hash"))
        let badGenAC = try #require(bad.exchanges.last?.command)
        #expect(badGenAC.p1Parameter == 0x80)
        // CDOL1 of mastercard-mchip: 9F02 6, 9F03 6, 9F1A 2, then TVR 95 (5 bytes) at offset 14.
        #expect(badGenAC.data[14] == TVR1.cdaFailed)
        #expect(goodGenAC.data[14] == 0x00)
    }

    @Test("without the CA key the chain fails at the issuer certificate, naming the key (CDA failed, not 'data missing')")
    func unknownCAKey() async throws {
        var configuration = TerminalConfiguration.default
        configuration.caPublicKeys = CAPublicKeyList()
        let oda = try #require(await read(try card("mastercard-mchip"), configuration: configuration).oda)
        #expect(oda.tvrByte1 == TVR1.cdaFailed)
        #expect(oda.issuerCertificate.failure == "the terminal has no CA public key A000000004/E7")
    }

    @Test("SDA: verified when card and terminal support it; a changed 93 sets SDA failed; a terminal without SDA leaves ODA not performed")
    func sda() async throws {
        let mc = try card("mastercard-mchip")
        var sdaTerminal = TerminalConfiguration.default
        sdaTerminal.terminalCapabilities[2] = 0x80
        let good = try #require(await read(mc.withODA(CardODA(method: .sda)), configuration: sdaTerminal).oda)
        #expect(good.method == .sda && good.signature == .passed && good.iccCertificate == .notUsed)
        #expect(good.tvrByte1 == TVR1.sdaSelected)
        let tampered = await read(mc.withODA(CardODA(method: .sda, fault: .tamperedSignature)), configuration: sdaTerminal)
        #expect(tampered.oda?.tvrByte1 == TVR1.sdaFailed | TVR1.sdaSelected)
        #expect(tampered.outcome == .online)
        let cdaOnlyTerminal = await read(mc.withODA(CardODA(method: .sda)))
        #expect(cdaOnlyTerminal.oda == .notPerformed)
    }

    @Test("a card without ODA data reads as 'not performed' (TVR byte 1 bit 8), in CDOL1 too")
    func notPerformed() async throws {
        var mc = try card("mastercard-mchip")
        mc.applications[0].oda = nil
        let r = await read(mc)
        #expect(r.oda == .notPerformed)
        #expect(r.exchanges.last?.command.data[14] == TVR1.notPerformed)
    }

    // MARK: CA keys

    @Test("the built-in CA keys load with their check values: the schemes' live and test keys and tapemu's test CA")
    func builtInKeys() throws {
        let keys = CAPublicKeyList.builtIn
        #expect(keys.key(rid: bytes("A000000003"), index: 0x09)?.modulus.count == 248)
        #expect(keys.key(rid: bytes("A000000004"), index: 0x05)?.modulus.count == 176)
        #expect(keys.key(rid: bytes("A000000003"), index: 0xE7)?.modulus == ODATestKeys.ca.modulus)
        for k in keys.keys { #expect(k.checksum.count == 20) }
    }

    @Test("a key file is strict: a wrong check value, a duplicate, a bad exponent or a short line is an error naming the line",
          arguments: [
            ("A000000003 E7 03 - 00 00", 1),                         // modulus too short
            ("# comment\n\nA000000003 E7 05 - " + String(repeating: "AB", count: 64) + "01 " + String(repeating: "00", count: 20), 3),
            ("A000000003 E7 03 -", 1),
          ])
    func strictKeyFile(text: String, line: Int) {
        #expect(throws: ODADataError.self) { try CAPublicKeyList.parse(text) }
        do { _ = try CAPublicKeyList.parse(text) } catch { #expect(error.line == line) }
    }

    @Test("a user key file replaces a built-in key with the same RID and index; its check value is verified")
    func userKeys() throws {
        let ca = ODATestKeys.ca
        let check = Crypto.sha1(bytes("A000000004") + [0xE7] + ca.modulus + [0x03])
        let line = "A000000004 E7 03 491231 \(Hex.encode(ca.modulus)) \(Hex.encode(check)) mine"
        let merged = CAPublicKeyList.builtIn.merging(try CAPublicKeyList.parse(line))
        #expect(merged.keys.count == CAPublicKeyList.builtIn.keys.count)
        #expect(merged.key(rid: bytes("A000000004"), index: 0xE7)?.label == "mine")
        var wrong = check
        wrong[0] ^= 1
        #expect(throws: ODADataError.self) {
            try CAPublicKeyList.parse("A000000004 E7 03 - \(Hex.encode(ca.modulus)) \(Hex.encode(wrong))")
        }
        #expect(throws: ODADataError.self) { try CAPublicKeyList.parse(line + "\n" + line) }
    }

    // MARK: Hostile certificates

    @Test("every prefix and every one-byte change of a real issuer certificate is a typed failure, never a trap")
    func hostileCertificates() async throws {
        let card = EmulatedCard(profile: try card("visa-qvsdc"))
        let r = await read(card.profile)
        #expect(r.oda?.succeeded == true)
        // The certificate as the card gave it: from the record that holds 90.
        let records = r.exchanges.filter { $0.command.instructionCode == 0xB2 }.compactMap { $0.response?.data }
            .compactMap { try? BERTLV.parseSingle($0) }
        let record = try #require(records.first { $0.child(.issuerPublicKeyCertificate) != nil })
        let certificate = try #require(record.child(.issuerPublicKeyCertificate)?.valueBytes)
        let ca = try #require(CAPublicKeyList.builtIn.key(rid: bytes("A000000003"), index: 0xE7))
        func recover(_ c: [UInt8]) -> Bool {
            (try? Book2.issuerKey(certificate: c, remainder: record.child(.issuerPublicKeyRemainder)?.valueBytes,
                                  exponent: [0x03], ca: ca, panDigits: "4761739001010010", today: (2026, 11),
                                  revoked: .empty)) != nil
        }
        #expect(recover(certificate))
        for n in 0..<certificate.count { #expect(!recover(Array(certificate.prefix(n)))) }
        for i in stride(from: 0, to: certificate.count, by: 7) {
            var c = certificate
            c[i] ^= 0x5A
            #expect(!recover(c))
        }
        #expect(!recover([UInt8](repeating: 0xFF, count: certificate.count)))   // above the modulus
        #expect(throws: ODAFailure.self) {
            try Book2.verifyDynamicSignature([0x01, 0x02], icc: RSAPublicKey(modulus: [0x02], exponent: [0x03]), terminalData: [])
        }
        #expect(throws: ODAFailure.self) { try Book2.cdaData([0x09, 0x00]) }
    }

    @Test("raw RSA refuses an even or empty modulus and an input not below it; SHA-1 is SHA-1")
    func rawRSA() {
        #expect(Crypto.rsaRaw([0x01], exponent: [0x03], modulus: [0x10]) == nil)
        #expect(Crypto.rsaRaw([0x01], exponent: [0x03], modulus: []) == nil)
        #expect(Crypto.rsaRaw([0x0F], exponent: [0x03], modulus: [0x0F]) == nil)
        #expect(Crypto.rsaRaw([0x02], exponent: [0x03], modulus: [0x0F]) == [0x08])
        #expect(Hex.encode(Crypto.sha1(Array("abc".utf8))) == "A9993E364706816ABA3E25717850C26C9CD0D89D")
    }
}
