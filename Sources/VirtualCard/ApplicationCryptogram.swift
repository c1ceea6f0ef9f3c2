import Cryptography
public import BERTLV
public import PaymentRules

/// The application cryptogram (tag 9F26) as the virtual cards compute it and an issuer checks it.
///
/// The scheme, fixed here so the card and the emulated issuer agree (EMV Book 2 Annex A1, with
/// double-length triple-DES keys, as Visa CVN 18 and M/Chip cards with EMV session keys do):
/// 1. ICC master key from the issuer master key (IMK), EMV Option A (Annex A1.4.1): the
///    rightmost 16 digits of PAN || PSN (PSN as two digits), left-padded with zeros, as 8 BCD
///    bytes Y; MK = 3DES(IMK)[Y] || 3DES(IMK)[Y xor FF..FF], with odd parity.
/// 2. Session key, EMV common session key derivation (Annex A1.3.1) with R = ATC || 00 x 6:
///    SK = 3DES(MK)[ATC || F0 || 00 00 00 00 00] || 3DES(MK)[ATC || 0F || 00 00 00 00 00].
/// 3. AC = ISO/IEC 9797-1 MAC algorithm 3 with DES and padding method 2 (Annex A1.2.1) under SK
///    over the transaction data: see ``transactionData(_:aip:atc:issuerApplicationData:)``.
public enum ApplicationCryptogram {
    /// The terminal data objects in the cryptogram input, in order, with their lengths — the
    /// minimum set recommended by EMV Book 2 §8.1.1. The card takes them from the PDOL data (a
    /// cryptogram in the GPO answer) or the CDOL1 data (GENERATE AC); one it was not sent counts
    /// as zeros.
    public static let terminalDataObjects: [DataObjectList.Entry] = [
        .init(tag: .amountAuthorised, length: 6),
        .init(tag: .amountOther, length: 6),
        .init(tag: .terminalCountryCode, length: 2),
        .init(tag: .terminalVerificationResults, length: 5),
        .init(tag: .transactionCurrencyCode, length: 2),
        .init(tag: .transactionDate, length: 3),
        .init(tag: .transactionType, length: 1),
        .init(tag: .unpredictableNumber, length: 4),
    ]

    /// The MAC input: the terminal data objects (``terminalDataObjects``, each fitted to its
    /// length; absent ones are zeros) || AIP (2) || ATC (2) || the whole issuer application data
    /// (which holds the card verification results).
    public static func transactionData(_ terminalValues: [Tag: [UInt8]], aip: [UInt8], atc: UInt16,
                                       issuerApplicationData: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(29 + 4 + issuerApplicationData.count)
        for entry in terminalDataObjects {
            let value = terminalValues[entry.tag] ?? []
            if value.count == entry.length {
                out += value   // fits as it is, whatever the format
            } else {
                out += DataObjectList.fit(value, to: entry.length, format: EMVTagDictionary.format(of: entry.tag))
            }
        }
        out += DataObjectList.fit(aip, to: 2, format: .b)
        out += [UInt8(atc >> 8), UInt8(atc & 0xFF)]
        out += issuerApplicationData
        return out
    }

    /// The ICC master key (16 bytes) for a card, EMV Option A. `panSequenceNumber` is the number
    /// 0...99 (tag 5F34 '01' is 1).
    public static func iccMasterKey(issuerMasterKey: [UInt8], pan: PAN, panSequenceNumber: UInt8) -> [UInt8] {
        precondition(issuerMasterKey.count == 16, "the issuer master key has 16 bytes, not \(issuerMasterKey.count)")
        precondition(panSequenceNumber <= 99, "the PAN sequence number is 0...99")
        let psn = panSequenceNumber < 10 ? "0\(panSequenceNumber)" : "\(panSequenceNumber)"
        var digits = String((pan.digits + psn).suffix(16))
        while digits.count < 16 { digits = "0" + digits }
        let y = BCD.encodeNumeric(digits: digits, length: 8)
        let left = Crypto.tripleDES(encrypt: true, key: issuerMasterKey, data: y)
        let right = Crypto.tripleDES(encrypt: true, key: issuerMasterKey, data: y.map { $0 ^ 0xFF })
        return Crypto.withOddParity(left + right)
    }

    /// The session key (16 bytes) for one ATC: the common session key with R = ATC || 00 x 6.
    public static func sessionKey(iccMasterKey: [UInt8], atc: UInt16) -> [UInt8] {
        commonSessionKey(iccMasterKey: iccMasterKey,
                         diversification: [UInt8(atc >> 8), UInt8(atc & 0xFF), 0, 0, 0, 0, 0, 0])
    }

    /// EMV common session key derivation (Book 2 Annex A1.3.1) with any 8-byte R:
    /// 3DES(MK)[R0 R1 F0 R3..R7] || 3DES(MK)[R0 R1 0F R3..R7], with odd parity.
    public static func commonSessionKey(iccMasterKey: [UInt8], diversification r: [UInt8]) -> [UInt8] {
        precondition(iccMasterKey.count == 16, "the ICC master key has 16 bytes, not \(iccMasterKey.count)")
        precondition(r.count == 8, "the diversification value R has 8 bytes, not \(r.count)")
        var left = r, right = r
        left[2] = 0xF0
        right[2] = 0x0F
        // ECB: both halves in one call.
        return Crypto.withOddParity(Crypto.tripleDES(encrypt: true, key: iccMasterKey, data: left + right))
    }

    /// The 8-byte application cryptogram over `data` (normally ``transactionData(_:aip:atc:issuerApplicationData:)``).
    /// `issuerMasterKey` has 16 bytes; `panSequenceNumber` is 0...99. Other values trap.
    public static func compute(issuerMasterKey: [UInt8], pan: PAN, panSequenceNumber: UInt8, atc: UInt16,
                               data: [UInt8]) -> [UInt8] {
        let mk = iccMasterKey(issuerMasterKey: issuerMasterKey, pan: pan, panSequenceNumber: panSequenceNumber)
        let sk = sessionKey(iccMasterKey: mk, atc: atc)
        return Crypto.retailMAC(key: sk, message: data)
    }

    /// The 8-byte application cryptogram under an ICC master key already derived (a card keeps
    /// its own; see ``iccMasterKey(issuerMasterKey:pan:panSequenceNumber:)``).
    public static func compute(iccMasterKey: [UInt8], atc: UInt16, data: [UInt8]) -> [UInt8] {
        Crypto.retailMAC(key: sessionKey(iccMasterKey: iccMasterKey, atc: atc), message: data)
    }

    /// Whether `cryptogram` is the one ``compute(issuerMasterKey:pan:panSequenceNumber:atc:data:)``
    /// gives (compared in constant time). Out-of-range inputs are simply not valid: false.
    public static func verify(cryptogram: [UInt8], issuerMasterKey: [UInt8], pan: PAN, panSequenceNumber: UInt8,
                              atc: UInt16, data: [UInt8]) -> Bool {
        guard cryptogram.count == 8, issuerMasterKey.count == 16, panSequenceNumber <= 99 else { return false }
        let expected = compute(issuerMasterKey: issuerMasterKey, pan: pan, panSequenceNumber: panSequenceNumber,
                               atc: atc, data: data)
        return Crypto.constantTimeEqual(expected, cryptogram)
    }

    /// Verifies the cryptogram in the data objects of an authorisation request: 9F26 (AC),
    /// 9F36 (ATC), 82 (AIP), 9F10 (IAD) and the terminal objects of ``terminalDataObjects``
    /// (values as the card received them; absent ones are zeros). False when 9F26, 9F36 or 82 is
    /// missing or malformed.
    public static func verify(issuerMasterKey: [UInt8], pan: PAN, panSequenceNumber: UInt8,
                              authorisationData: [Tag: [UInt8]]) -> Bool {
        guard let ac = authorisationData[.applicationCryptogram], ac.count == 8,
              let atcBytes = authorisationData[.applicationTransactionCounter], atcBytes.count == 2,
              let aip = authorisationData[.applicationInterchangeProfile], aip.count == 2 else { return false }
        let atc = UInt16(atcBytes[0]) << 8 | UInt16(atcBytes[1])
        let data = transactionData(authorisationData, aip: aip, atc: atc,
                                   issuerApplicationData: authorisationData[.issuerApplicationData] ?? [])
        return verify(cryptogram: ac, issuerMasterKey: issuerMasterKey, pan: pan, panSequenceNumber: panSequenceNumber,
                      atc: atc, data: data)
    }

    /// ``verify(issuerMasterKey:pan:panSequenceNumber:authorisationData:)`` over a TLV list
    /// (searched depth first; the first occurrence of a tag counts).
    public static func verify(issuerMasterKey: [UInt8], pan: PAN, panSequenceNumber: UInt8,
                              authorisationData: [TLV]) -> Bool {
        var values: [Tag: [UInt8]] = [:]
        for node in authorisationData.flattened where !node.isConstructed && values[node.tag] == nil {
            values[node.tag] = node.valueBytes
        }
        return verify(issuerMasterKey: issuerMasterKey, pan: pan, panSequenceNumber: panSequenceNumber,
                      authorisationData: values)
    }
}
