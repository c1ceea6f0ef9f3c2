import BERTLV
import PaymentRules
import Testing

/// The one masking rule never shows more of a PAN than its first 6 and last 4 digits, wherever
/// it stands: behind a length, a tag and a length (a track 2 inside a proprietary object), in
/// front of a field separator or padding. A run of digits often holds a window that passes the
/// Luhn check by chance beside the real PAN; masking that window alone showed most of the PAN
/// (`DF7F13 5711 4012888888881881 D…` displayed `571140***88888881881…`: 13 of its 16 digits).
@Suite("PAN masking: every window, not the first found")
struct PANMaskingWindowTests {
    /// Public test PANs (Visa, Mastercard, Amex, Discover, JCB, and the Visa of the fixtures).
    static let pans = ["4012888888881881", "4111111111111111", "5555555555554444", "378282246310005",
                       "6011111111111117", "3530111333300000", "4761739001010010"]
    /// What stands before the PAN in the hex: nothing, 5A's header, a proprietary object holding a
    /// track 2, digits of other fields.
    static let before = ["", "5A08", "DF7F135711", "9F6B13", "13571140", "1234"]
    /// What follows it: nothing, track 2's separator and more, padding, up to four digits.
    static let after = ["", "D25122011000012345", "FF", "D25122", "0001", "1F"]

    /// The positions of `pan`'s digits, in the hex of `before + pan + after`, that must be masked.
    static func middle(of pan: String, at start: Int) -> Range<Int> {
        (start + 6)..<(start + pan.count - 4)
    }

    @Test("BCD: the middle of the PAN is masked, whatever stands beside it", arguments: pans, before)
    func bcd(_ pan: String, _ before: String) {
        for after in Self.after {
            // An odd-length PAN (Amex) takes a padding nibble F to fill its last byte.
            let body = pan.count.isMultiple(of: 2) ? pan : pan + "F"
            let hex = before + body + (pan.count.isMultiple(of: 2) ? after : "")
            let data = bytes(hex)
            let masked = Array(SensitiveData.maskedHex(data))
            for i in Self.middle(of: pan, at: before.count) {
                #expect(masked[i] == "*", "\(hex) → \(String(masked)): digit \(i - before.count) of the PAN shows")
            }
        }
    }

    @Test("text: the middle of the PAN is masked, whatever digits stand beside it", arguments: pans, before)
    func text(_ pan: String, _ before: String) {
        for after in Self.after {
            let text = before + pan + after
            let masked = Array(SensitiveData.maskedText(text))
            for i in Self.middle(of: pan, at: before.count) {
                #expect(masked[i] == "*", "\(text) → \(String(masked)): digit \(i - before.count) of the PAN shows")
            }
        }
    }

    @Test("the review's case in a decoded TLV and in hex")
    func reviewCase() {
        let data = bytes("DF7F1357114012888888881881D25122011000012345")
        let masked = SensitiveData.maskedHex(data)
        #expect(!masked.contains("888888"), "\(masked)")
        #expect(!SensitiveData.mayShowPAN(masked))
    }

    @Test("a PAN alone keeps its first 6 and last 4 (unchanged)", arguments: pans)
    func alone(_ pan: String) {
        let masked = SensitiveData.maskedText(pan)
        #expect(masked == String(pan.prefix(6)) + String(repeating: "*", count: pan.count - 10) + String(pan.suffix(4)))
    }
}
