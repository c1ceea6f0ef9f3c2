public import BERTLV
import ISO7816

/// Hex of APDU bytes with the cardholder's secrets masked, for tables, JSON and logs.
///
/// In BCD the hex of a PAN reads as its digits, so masking keeps the shape: the PAN 5A shows
/// `476173******0010`, track 2 (57, 9F6B) shows its PAN that way, then `D`, expiry and service
/// code, and `*` for the discretionary data; track 1 (56) and the track discretionary data
/// (9F1F, 9F20) are masked whole. Bytes that are not BER-TLV are searched for the given PANs.
public enum Redaction {
    /// Tags whose values are masked.
    public static let sensitiveTags: Set<Tag> = [
        .pan, .track2EquivalentData, .track2Data, Tag(0x56), .track1DiscretionaryData, Tag(0x9F20),
    ]

    /// `bytes` (data of an APDU, or a whole response: the status word never parses as TLV
    /// value) as upper-case hex with secrets masked; `knownPANs` are masked wherever they appear.
    public static func hex(_ bytes: [UInt8], knownPANs: [PAN] = []) -> String {
        var chars = Array(Hex.encode(bytes))
        // A response is data + SW1 SW2; a command is a header then data. Try the TLV reading at
        // both places where data can start and keep every sensitive range found.
        for range in [0..<bytes.count, 0..<max(0, bytes.count - 2), min(5, bytes.count)..<bytes.count,
                      min(5, bytes.count)..<max(min(5, bytes.count), bytes.count - 1)] {
            guard let objects = try? BERTLV.parse(bytes[range], rules: .emv) else { continue }
            for o in objects.flattened where sensitiveTags.contains(o.tag) && !o.isConstructed {
                mask(&chars, value: o.value.startIndex..<o.value.endIndex, tag: o.tag)
            }
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
