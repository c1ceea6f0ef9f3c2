import BERTLV
import Cryptography
import PaymentRules
import struct BERTLV.Tag
import Testing
import VirtualCard

@Suite("Crypto wrappers over OpenSSL")
struct CryptoTests {
    @Test("SHA-256 known answers (FIPS 180-2)")
    func sha256() {
        #expect(Crypto.sha256(Array("abc".utf8)) == hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"))
        #expect(Crypto.sha256([]) == hex("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"))
    }

    @Test("HMAC-SHA256 known answers (RFC 4231 cases 1 and 2), empty key")
    func hmac() {
        #expect(Crypto.hmacSHA256(key: [UInt8](repeating: 0x0B, count: 20), message: Array("Hi There".utf8))
                == hex("B0344C61D8DB38535CA8AFCEAF0BF12B881DC200C9833DA726E9376C2E32CFF7"))
        #expect(Crypto.hmacSHA256(key: "Jefe".utf8, message: "what do ya want for nothing?".utf8)
                == hex("5BDCC146BF60754E6A042426089575C75A003F089D2739839DEC58B964EC3843"))
        #expect(Crypto.hmacSHA256(key: [], message: []) ==
                hex("B613679A0814D9EC772F95D778C35FC5FF1697C493715653C6C712144292C5AD"))
    }

    @Test("random bytes: the length asked, and not constant")
    func random() {
        #expect(Crypto.randomBytes(0).isEmpty)
        let a = Crypto.randomBytes(32), b = Crypto.randomBytes(32)
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
    }

    @Test("constant-time compare")
    func compare() {
        #expect(Crypto.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Crypto.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Crypto.constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(Crypto.constantTimeEqual([UInt8](), []))
    }

    @Test("triple DES and DES round trips and a known answer")
    func des() {
        let key = hex("0123456789ABCDEFFEDCBA9876543210")
        let block = hex("0011223344556677")
        let c = Crypto.tripleDES(encrypt: true, key: key, data: block)
        #expect(c == hex("31A7364CAC91CA39"))
        #expect(Crypto.tripleDES(encrypt: false, key: key, data: c) == block)
        // Single DES is triple DES with K1 = K2.
        let single = Crypto.des(encrypt: true, key: Array(key[0..<8]), data: block)
        #expect(single == Crypto.tripleDES(encrypt: true, key: Array(key[0..<8]) + Array(key[0..<8]), data: block))
        #expect(Crypto.des(encrypt: false, key: Array(key[0..<8]), data: single) == block)
    }

    @Test("AES known answer (FIPS-197 C.1) and AES-CMAC (RFC 4493 examples 1-4)")
    func aes() {
        #expect(Crypto.aes(encrypt: true, key: hex("000102030405060708090A0B0C0D0E0F"),
                           data: hex("00112233445566778899AABBCCDDEEFF")) == hex("69C4E0D86A7B0430D8CDB78070B4C55A"))
        let key = hex("2B7E151628AED2A6ABF7158809CF4F3C")
        let m = hex("6BC1BEE22E409F96E93D7E117393172AAE2D8A571E03AC9C9EB76FAC45AF8E5130C81C46A35CE411E5FBC1191A0A52EFF69F2445DF4F9B17AD2B417BE66C3710")
        #expect(Crypto.aesCMAC(key: key, message: []) == hex("BB1D6929E95937287FA37D129B756746"))
        #expect(Crypto.aesCMAC(key: key, message: m.prefix(16)) == hex("070A16B46B4D4144F79BDD9DD04A287C"))
        #expect(Crypto.aesCMAC(key: key, message: m.prefix(40)) == hex("DFA66747DE9AE63030CA32611497C827"))
        #expect(Crypto.aesCMAC(key: key, message: m) == hex("51F0BEBF7E3B9D92FC49741779363CFE"))
    }

    @Test("ISO 9797-1 MAC algorithm 3 with padding method 2")
    func retailMAC() {
        let key = hex("0123456789ABCDEFFEDCBA9876543210")
        #expect(Crypto.padISO9797Method2([1, 2, 3]) == [1, 2, 3, 0x80, 0, 0, 0, 0])
        #expect(Crypto.padISO9797Method2([UInt8](repeating: 1, count: 8)).count == 16)
        #expect(Crypto.retailMAC(key: key, message: []) == hex("F1FBCF2A56D19BA7"))
        #expect(Crypto.retailMAC(key: key, message: Array("Now is the time for all ".utf8)) == hex("E9086230CA3BE796"))
    }

    @Test("odd parity")
    func parity() {
        #expect(Crypto.withOddParity([0x00, 0x01, 0xFE, 0xFF, 0x02]) == [0x01, 0x01, 0xFE, 0xFE, 0x02])
    }
}

@Suite("Application cryptogram (EMV Option A, common session key, retail MAC)")
struct ApplicationCryptogramTests {
    let imk = hex("0123456789ABCDEFFEDCBA9876543210")

    @Test("published vectors: Option A master key, common session key, AC")
    func publishedVectors() throws {
        // The same vectors as the pyemv project's documentation and tests.
        let pan = try #require(PAN("99012345678901234"))
        #expect(ApplicationCryptogram.iccMasterKey(issuerMasterKey: imk, pan: pan, panSequenceNumber: 45)
                == hex("67F8292358083E5EA7AB7FDA58D53B6B"))
        #expect(ApplicationCryptogram.sessionKey(iccMasterKey: imk, atc: 0x001C) == hex("E9FB384AF807B940FEDCEA613461B0C4"))
        let mk = ApplicationCryptogram.iccMasterKey(issuerMasterKey: imk, pan: try #require(PAN("9901234567890123")),
                                                    panSequenceNumber: 45)
        let sk = ApplicationCryptogram.commonSessionKey(iccMasterKey: mk, diversification: hex("1234567890123456"))
        #expect(Crypto.retailMAC(key: sk, message: hex("0123456789ABCDEF0123456789ABCDEF")) == hex("4B46013359B7A58B"))
    }

    @Test("a full cryptogram, computed independently")
    func knownCryptogram() throws {
        let pan = try #require(PAN("4761739001010010"))
        #expect(ApplicationCryptogram.iccMasterKey(issuerMasterKey: imk, pan: pan, panSequenceNumber: 1)
                == hex("2F02C8B0E9CBC7B05B5167F7A1CDE6E5"))
        let data = ApplicationCryptogram.transactionData(
            [.amountAuthorised: hex("000000001234"), .terminalCountryCode: hex("0724"), .transactionCurrencyCode: hex("0978"),
             .transactionDate: hex("261130"), .transactionType: [0], .unpredictableNumber: hex("DEADBEEF")],
            aip: [0, 0], atc: 42, issuerApplicationData: hex("06011203A00000"))
        #expect(data == hex("00000000123400000000000007240000000000097826113000DEADBEEF0000002A06011203A00000"))
        let ac = ApplicationCryptogram.compute(issuerMasterKey: imk, pan: pan, panSequenceNumber: 1, atc: 42, data: data)
        #expect(ac == hex("6B79DD1152B6D117"))
        #expect(ApplicationCryptogram.verify(cryptogram: ac, issuerMasterKey: imk, pan: pan, panSequenceNumber: 1,
                                             atc: 42, data: data))
        #expect(!ApplicationCryptogram.verify(cryptogram: ac, issuerMasterKey: imk, pan: pan, panSequenceNumber: 2,
                                              atc: 42, data: data))
        #expect(!ApplicationCryptogram.verify(cryptogram: ac, issuerMasterKey: imk, pan: pan, panSequenceNumber: 1,
                                              atc: 43, data: data))
        #expect(!ApplicationCryptogram.verify(cryptogram: ac, issuerMasterKey: [1, 2, 3], pan: pan,
                                              panSequenceNumber: 1, atc: 42, data: data))
        #expect(!ApplicationCryptogram.verify(cryptogram: Array(ac.prefix(4)), issuerMasterKey: imk, pan: pan,
                                              panSequenceNumber: 1, atc: 42, data: data))
    }

    @Test("a 15-digit PAN with PSN 00 is left-padded to 16 digits")
    func shortPAN() throws {
        let pan = try #require(PAN("374245455400126"))
        #expect(ApplicationCryptogram.iccMasterKey(issuerMasterKey: hex("A1B2C3D4E5F60718293A4B5C6D7E8F90"), pan: pan,
                                                   panSequenceNumber: 0) == hex("4C1615495B541C51C2B6E554452A07A1"))
    }

    @Test("terminal values of other lengths are fitted by format")
    func fitting() {
        let short = ApplicationCryptogram.transactionData([.amountAuthorised: [0x12, 0x34]], aip: [0x18, 0x80], atc: 1,
                                                          issuerApplicationData: [])
        let full = ApplicationCryptogram.transactionData([.amountAuthorised: hex("000000001234")], aip: [0x18, 0x80],
                                                         atc: 1, issuerApplicationData: [])
        #expect(short == full)
        #expect(full.count == 33)
    }
}
