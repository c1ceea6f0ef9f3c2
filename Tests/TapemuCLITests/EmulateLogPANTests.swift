import ISO7816
import Testing
@testable import tapemu

/// `tapemu emulate` logs every command it serves: a card number a reader sends in one (CDOL data
/// asking for 5A, a proprietary command) must not reach the log whole.
@Suite("emulate's log masks card numbers in commands")
struct EmulateLogPANTests {
    @Test("a PAN in a command's data, as BCD or as ASCII digits, is masked; other commands are shown as sent")
    func commandsAreMasked() {
        let bcd: [UInt8] = [0x80, 0xAE, 0x80, 0x00, 0x0A, 0x40, 0x12, 0x88, 0x88, 0x88, 0x88, 0x18, 0x81, 0x12, 0x34, 0x00]
        let shown = EmulationLog.show(bcd)
        #expect(!shown.contains("4012888888881881"))
        #expect(shown.hasPrefix("80AE80000A401288"))
        let ascii: [UInt8] = [0x80, 0xCA, 0x00, 0x00, 0x10] + Array("5413330089010434".utf8)
        #expect(!EmulationLog.show(ascii).contains(Hex.encodeASCIIHex("5413330089010434")))
        #expect(EmulationLog.show([0x00, 0xA4, 0x04, 0x00, 0x07, 0xA0, 0x00, 0x00, 0x00, 0x03, 0x10, 0x10, 0x00])
                == "00A4040007A000000003101000")
        #expect(EmulationLog.show([0x00, 0x20, 0x00, 0x80, 0x08, 0x24, 0x12, 0x34, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
                == "00200080 (PIN block hidden)")
    }
}

private extension Hex {
    /// The hex of a string's ASCII bytes.
    static func encodeASCIIHex(_ s: String) -> String { Hex.encode(Array(s.utf8)) }
}
