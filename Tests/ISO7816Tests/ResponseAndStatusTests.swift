import Testing
@testable import ISO7816
import TestSupport

@Suite("Response APDUs and status words")
struct ResponseAndStatusTests {
    @Test("data and status word split")
    func parses() throws {
        let r = try ResponseAPDU(bytes: Hex.decode("6F0A840E9000"))
        #expect(r.data == [0x6F, 0x0A, 0x84, 0x0E])
        #expect(r.statusWord == .success)
        #expect(r.sw1 == 0x90 && r.sw2 == 0x00)
        #expect(r.bytes == (try Hex.decode("6F0A840E9000")))
        let bare = try ResponseAPDU(bytes: [0x6A, 0x82])
        #expect(bare.data.isEmpty)
        #expect(bare.statusWord == .fileNotFound)
    }

    @Test("fewer than two bytes is missingStatusWord (vpcd's empty success)", arguments: [[], [0x90]] as [[UInt8]])
    func tooShort(_ bytes: [UInt8]) {
        #expect { try ResponseAPDU(bytes: bytes) } throws: { ($0 as? ISO7816Error)?.code == .missingStatusWord }
    }

    struct Named: Sendable, CustomStringConvertible {
        var sw: UInt16
        var name: String
        var description: String { String(sw, radix: 16, uppercase: true) }
    }

    static let names: [Named] = [
        Named(sw: 0x9000, name: "success"),
        Named(sw: 0x6100, name: "256 more byte(s) available (GET RESPONSE)"),
        Named(sw: 0x611A, name: "26 more byte(s) available (GET RESPONSE)"),
        Named(sw: 0x6C1C, name: "wrong Le; exact length is 28"),
        Named(sw: 0x6700, name: "wrong length"),
        Named(sw: 0x6283, name: "selected file invalidated (application blocked)"),
        Named(sw: 0x63C2, name: "verification failed, 2 tries left"),
        Named(sw: 0x6981, name: "command incompatible with file structure"),
        Named(sw: 0x6982, name: "security status not satisfied"),
        Named(sw: 0x6983, name: "authentication method blocked"),
        Named(sw: 0x6984, name: "referenced data invalidated"),
        Named(sw: 0x6985, name: "conditions of use not satisfied"),
        Named(sw: 0x6986, name: "command not allowed (no current EF)"),
        Named(sw: 0x6A80, name: "incorrect parameters in the data field"),
        Named(sw: 0x6A81, name: "function not supported (card or application blocked)"),
        Named(sw: 0x6A82, name: "file or application not found"),
        Named(sw: 0x6A83, name: "record not found"),
        Named(sw: 0x6A84, name: "not enough memory space in the file"),
        Named(sw: 0x6A85, name: "Lc inconsistent with TLV structure"),
        Named(sw: 0x6A86, name: "incorrect parameters P1-P2"),
        Named(sw: 0x6A87, name: "Lc inconsistent with P1-P2"),
        Named(sw: 0x6A88, name: "referenced data not found"),
        Named(sw: 0x6D00, name: "instruction not supported"),
        Named(sw: 0x6E00, name: "class not supported"),
        Named(sw: 0x6F00, name: "no precise diagnosis"),
        Named(sw: 0x6F12, name: "no precise diagnosis"),
        Named(sw: 0x9123, name: "application-specific status"),
        Named(sw: 0x1234, name: "unknown status"),
    ]

    @Test("names", arguments: names)
    func name(_ n: Named) {
        #expect(StatusWord(n.sw).name == n.name)
        #expect(StatusWord(n.sw).description.hasSuffix(n.name))
    }

    @Test("classification")
    func classification() {
        #expect(StatusWord.success.isSuccess)
        #expect(!StatusWord(0x6100).isSuccess)
        #expect(StatusWord(0x6110).isMoreDataAvailable)
        #expect(StatusWord(0x6C10).isWrongLeWithExact)
        #expect(StatusWord(0x6283).isWarning && StatusWord(0x63C1).isWarning)
        #expect(!StatusWord(0x6A82).isWarning)
        #expect(StatusWord(sw1: 0x6A, sw2: 0x82) == .fileNotFound)
        #expect(StatusWord.conditionsOfUseNotSatisfied.hex == "6985")
        #expect(StatusWord(0x6986).description == "6986 command not allowed (no current EF)")
    }
}

@Suite("Hex")
struct HexTests {
    @Test("decodes with separators, any case")
    func decodes() throws {
        #expect(try Hex.decode("00a4 04:00\t0E\r\n") == [0x00, 0xA4, 0x04, 0x00, 0x0E])
        #expect(try Hex.decode("") == [])
        #expect(Hex.encode([0x00, 0xAB, 0xFF]) == "00ABFF")
    }

    @Test("rejects what is not hex", arguments: ["0", "0G", "00 1", "0 0", "zz", "00-11", "é0"])
    func rejects(_ text: String) {
        #expect { try Hex.decode(text) } throws: { ($0 as? ISO7816Error)?.code == .badHex }
    }
}


@Suite("Random input never crashes the APDU parsers")
struct ISO7816FuzzTests {
    @Test("5000 random commands, responses and hex strings")
    func random() {
        var rng = SplitMix64(seed: 0x7A9E_6D00)
        var parsed = 0
        for _ in 0..<5000 {
            let count = Int.random(in: 0...24, using: &rng)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Bias towards plausible length bytes so the interesting branches run.
            if count > 4, Bool.random(using: &rng) { bytes[4] = UInt8(truncatingIfNeeded: count - 5 - Int.random(in: 0...2, using: &rng)) }
            if count > 6, Int.random(in: 0..<4, using: &rng) == 0 { bytes[4] = 0 }
            if let c = try? CommandAPDU(bytes: bytes) {
                parsed += 1
                #expect((try? CommandAPDU(bytes: c.bytes)) == c)
                _ = c.summary
                _ = c.parameterMeanings
            }
            _ = try? ResponseAPDU(bytes: bytes)
            let text = String(decoding: bytes.map { "0123456789abcdefABCDEF :xg\n"[($0 % 27)] }, as: UTF8.self)
            _ = try? Hex.decode(text)
        }
        #expect(parsed > 100)
    }
}

private extension String {
    subscript(i: UInt8) -> UInt8 { Array(utf8)[Int(i)] }
}
