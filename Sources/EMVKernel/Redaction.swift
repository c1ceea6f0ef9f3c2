public import BERTLV
public import ISO7816

/// Hex of APDU bytes with the cardholder's secrets masked, for tables, JSON and logs.
///
/// Every rule comes from ``SensitiveData``, the one policy: the sensitive objects by tag
/// (``SensitiveData/maskValue(in:value:tag:)``: the PAN 5A shows `476173******0010`, track 2
/// keeps its shape, the others are masked whole), then, by content, every PAN-like digit run
/// anywhere in the bytes (``SensitiveData/maskPANs(in:bytes:range:tag:)``, ASCII too), and the
/// given PANs wherever they appear.
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
                    SensitiveData.maskValue(in: &chars, value: value, tag: o.tag)
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
}
