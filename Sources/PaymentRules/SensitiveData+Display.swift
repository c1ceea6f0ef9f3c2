public import BERTLV
public import ISO7816
import Foundation

/// Hex of APDU bytes with the cardholder's secrets masked, for tables, JSON and logs, and text
/// with a trace's own PANs masked.
///
/// Every rule is ``SensitiveData``'s, the one policy: the sensitive objects by tag
/// (``SensitiveData/maskValue(in:value:tag:)``: the PAN 5A shows `476173******0010`, track 2
/// keeps its shape, the others are masked whole), then, by content, every PAN-like digit run
/// anywhere in the bytes (``SensitiveData/maskPANs(in:bytes:range:tag:)``, ASCII too), and the
/// given PANs wherever they appear.
extension SensitiveData {
    /// Data of an APDU (BER-TLV, as cards answer) as upper-case hex with secrets masked;
    /// `knownPANs` are masked wherever they appear, TLV or not.
    public static func displayHex(_ data: [UInt8], knownPANs: [PAN] = []) -> String {
        masked(data, tlvAt: 0..<data.count, knownPANs: knownPANs)
    }

    /// A whole command APDU, its data masked as in ``displayHex(_:knownPANs:)``.
    public static func displayHex(_ command: CommandAPDU, knownPANs: [PAN] = []) -> String {
        let encoded = command.bytes
        let dataStart = command.data.isEmpty ? encoded.count : (command.needsExtendedLength ? 7 : 5)
        return masked(encoded, tlvAt: dataStart..<(dataStart + command.data.count), knownPANs: knownPANs)
    }

    /// A whole response APDU (data + SW1 SW2), its data masked as in ``displayHex(_:knownPANs:)``.
    public static func displayHex(_ response: ResponseAPDU, knownPANs: [PAN] = []) -> String {
        let encoded = response.bytes
        return masked(encoded, tlvAt: 0..<response.data.count, knownPANs: knownPANs)
    }

    private static func masked(_ bytes: [UInt8], tlvAt range: Range<Int>, knownPANs: [PAN]) -> String {
        var chars = Array(Hex.encode(bytes))
        if let objects = try? BERTLV.parse(bytes[range], rules: .emv) {
            for o in objects.flattened where !o.isConstructed {
                let value = o.value.startIndex..<o.value.endIndex
                if SensitiveData.isSensitive(o.tag) {
                    SensitiveData.maskValue(in: &chars, value: value, tag: o.tag)
                } else {
                    SensitiveData.maskPANs(in: &chars, bytes: bytes, range: value, tag: o.tag)
                }
            }
        } else {
            SensitiveData.maskPANs(in: &chars, bytes: bytes, range: range, tag: nil)
        }
        return masking(knownPANs, in: String(chars))
    }

    /// Text written by people or tools (a trace's comment, a header's value, an event's
    /// detail): any PAN-like digit run masked (``maskedText(_:)``), and `knownPANs` wherever
    /// they appear.
    public static func maskedText(_ text: String, knownPANs: [PAN]) -> String {
        masking(knownPANs, in: maskedText(text))
    }

    /// The PANs that response data holds as TLV (5A, and track 2 in 57 / 9F6B), to mask them
    /// wherever they appear.
    public static func pans(inTLV data: [UInt8]) -> [PAN] {
        guard let nodes = try? BERTLV.parse(data) else { return [] }
        var out: [PAN] = []
        for n in nodes.flattened {
            var p: PAN?
            if n.tag == .pan { p = try? PAN(bcd: n.value) }
            if n.tag == .track2EquivalentData || n.tag == .track2Data { p = (try? Track2(bytes: n.value))?.pan }
            if let p, !out.contains(p) { out.append(p) }
        }
        return out
    }

    /// `text` with every occurrence of each of `pans` masked (first 6 + last 4).
    private static func masking(_ pans: [PAN], in text: String) -> String {
        var text = text
        for pan in pans where text.contains(pan.digits) { text = text.replacingOccurrences(of: pan.digits, with: pan.masked) }
        return text
    }
}
