public import BERTLV
public import ISO7816

/// Hex of APDU bytes with the cardholder's secrets masked, for tables, JSON and logs.
///
/// In BCD the hex of a PAN reads as its digits, so masking keeps the shape: the PAN 5A shows
/// `476173******0010`, track 2 (57, 9F6B) shows its PAN that way, then `D`, expiry and service
/// code, and `*` for the discretionary data; the other sensitive objects (``SensitiveData``:
/// track 1, track discretionary data, PIN data, DS ID) are masked whole. Then, by content, every
/// PAN-like digit run anywhere in the bytes (``SensitiveData/maskBCDRuns(_:)``, ASCII too), and
/// the given PANs wherever they appear.
public enum Redaction {

    /// Data of an APDU (BER-TLV, as cards answer) as upper-case hex with secrets masked;
    /// `knownPANs` are masked wherever they appear, TLV or not.
    public static func hex(_ data: [UInt8], knownPANs: [PAN] = []) -> String {
        masked(data, tlvAt: 0..<data.count, knownPANs: knownPANs)
    }

    /// A whole command APDU, its data masked as in ``hex(_:knownPANs:)``.
    public static func hex(_ command: CommandAPDU, knownPANs: [PAN] = []) -> String {
        let encoded = command.bytes
        let dataStart = command.data.isEmpty ? encoded.count : (command.needsExtendedLength ? 7 : 5)
        return masked(encoded, tlvAt: dataStart..<(dataStart + command.data.count), knownPANs: knownPANs)
    }

    /// A whole response APDU (data + SW1 SW2), its data masked as in ``hex(_:knownPANs:)``.
    public static func hex(_ response: ResponseAPDU, knownPANs: [PAN] = []) -> String {
        let encoded = response.bytes
        return masked(encoded, tlvAt: 0..<response.data.count, knownPANs: knownPANs)
    }

    private static func masked(_ bytes: [UInt8], tlvAt range: Range<Int>, knownPANs: [PAN]) -> String {
        var chars = Array(Hex.encode(bytes))
        if let objects = try? BERTLV.parse(bytes[range], rules: .emv) {
            for o in objects.flattened where !o.isConstructed {
                let value = o.value.startIndex..<o.value.endIndex
                if SensitiveData.isSensitive(o.tag) {
                    mask(&chars, value: value, tag: o.tag)
                } else {
                    SensitiveData.maskPANs(in: &chars, bytes: bytes, range: value, tag: o.tag)
                }
            }
        } else {
            SensitiveData.maskPANs(in: &chars, bytes: bytes, range: range, tag: nil)
        }
        var text = String(chars)
        for pan in knownPANs {
            text = text.replacing(pan.digits, with: pan.masked)
        }
        return text
    }

    private static func mask(_ chars: inout [Character], value: Range<Int>, tag: Tag) {
        let lo = value.lowerBound * 2, hi = value.upperBound * 2
        guard lo < hi else { return }
        switch tag {
        case .pan:
            maskDigits(&chars, lo..<hi)
        case .track2EquivalentData, .track2Data:
            let sep = chars[lo..<hi].firstIndex(of: "D") ?? hi
            maskDigits(&chars, lo..<sep)
            // After D: YYMM and the service code stay; discretionary data goes.
            var i = min(sep + 8, hi)
            while i < hi {
                if chars[i] != "F" { chars[i] = "*" }
                i += 1
            }
        default:
            for i in lo..<hi { chars[i] = "*" }
        }
    }

    /// Keeps the first 6 and last 4 digits (F padding aside) of a BCD number.
    private static func maskDigits(_ chars: inout [Character], _ range: Range<Int>) {
        var end = range.upperBound
        while end > range.lowerBound, chars[end - 1] == "F" { end -= 1 }
        let keepFront = range.lowerBound + 6, keepBack = end - 4
        guard keepFront < keepBack else {
            for i in range.lowerBound..<end { chars[i] = "*" }   // too short to show anything
            return
        }
        for i in keepFront..<keepBack { chars[i] = "*" }
    }
}
