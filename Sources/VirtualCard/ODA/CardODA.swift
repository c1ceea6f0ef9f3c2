import Cryptography
import BERTLV
import ISO7816

/// How an application authenticates itself offline, and the fault it is made with (profile field
/// `oda`). The card is personalised when it is made: tapemu's test CA (``ODATestKeys``, index E7)
/// certifies the test issuer key for the application's PAN, the issuer certifies the card's key
/// over the static data, and certificate records are added to the files (first free SFI of 1…10,
/// records 1 and 2) with every record the AFL already names marked for offline data authentication and
/// 9F4A = 82. The keys are tapemu's test keys; a profile never holds a private key.
///
/// JSON: `{"method": "fDDA", "issuerCertificateSerial": "000001", "fault": "wrongHash"}`.
public struct CardODA: Codable, Sendable, Hashable {
    public enum Method: String, Codable, Sendable, Hashable, CaseIterable {
        /// Static data authentication: the signed static application data 93.
        case sda = "SDA"
        /// Visa's fast DDA: the card signs in its GPO answer (9F4B, with 9F69).
        case fdda = "fDDA"
        /// Dynamic data authentication (Book 2 §6.5): the card signs the DDOL data the reader
        /// sends in INTERNAL AUTHENTICATE, with an ICC dynamic number of its own.
        case dda = "DDA"
        /// Combined DDA / AC generation: the card signs its GENERATE AC answer when asked (P1 bit 5).
        case cda = "CDA"
    }

    /// A broken card, for testing readers.
    public enum Fault: String, Codable, Sendable, Hashable, CaseIterable {
        /// The issuer certificate expired (12/24).
        case expiredIssuerCertificate
        /// The issuer certificate's hash does not match its contents.
        case wrongHash
        /// The issuer certificate's serial is `0BAD01`, for a revocation list to name.
        case revokedCertificate
        /// The AFL does not name the certificate record: the reader never sees 9F46 (or 93).
        case missingRecord
        /// The dynamic signature 9F4B (DDA's INTERNAL AUTHENTICATE answer, or SDA's 93) is
        /// changed after signing.
        case tamperedSignature
        /// CDA: the transaction data hash in the signature leaves out the CDOL1 data.
        case cdaMismatch
    }

    public var method: Method
    /// The issuer certificate's serial number (3 bytes).
    public var issuerCertificateSerial: [UInt8]
    public var fault: Fault?
    /// DDA: the card's DDOL 9F49, put in its certificate record; empty: the card has none and the
    /// reader uses its default DDOL (9F3704).
    public var ddol: [UInt8]

    public init(method: Method, issuerCertificateSerial: [UInt8] = [0x00, 0x00, 0x01], fault: Fault? = nil,
                ddol: [UInt8] = CardODA.defaultDDOL) {
        self.method = method
        self.issuerCertificateSerial = issuerCertificateSerial
        self.fault = fault
        self.ddol = ddol
    }

    /// The DDOL a DDA card carries unless its profile says otherwise: the unpredictable number.
    public static let defaultDDOL: [UInt8] = [0x9F, 0x37, 0x04]

    /// The serial a ``Fault/revokedCertificate`` card's issuer certificate carries.
    public static let revokedSerial: [UInt8] = [0x0B, 0xAD, 0x01]

    enum CodingKeys: String, CodingKey, CaseIterable { case method, issuerCertificateSerial, fault, ddol }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        method = try c.decode(Method.self, forKey: .method)
        issuerCertificateSerial = try c.hexIfPresent(.issuerCertificateSerial) ?? [0x00, 0x00, 0x01]
        guard issuerCertificateSerial.count == 3 else {
            throw DecodingError.dataCorruptedError(forKey: .issuerCertificateSerial, in: c,
                                                   debugDescription: "a certificate serial number is 3 bytes")
        }
        fault = try c.decodeIfPresent(Fault.self, forKey: .fault)
        ddol = try c.hexIfPresent(.ddol) ?? CardODA.defaultDDOL
        guard ddol.isEmpty || (try? DataObjectList(bytes: ddol)) != nil else {
            throw DecodingError.dataCorruptedError(forKey: .ddol, in: c, debugDescription: "the DDOL is not a data object list")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(method, forKey: .method)
        try c.encode(Hex.encode(issuerCertificateSerial), forKey: .issuerCertificateSerial)
        try c.encodeIfPresent(fault, forKey: .fault)
        if ddol != CardODA.defaultDDOL { try c.encode(Hex.encode(ddol), forKey: .ddol) }
    }
}

/// EMV Book 2's certificate and signature formats, from the signing side.
enum ODASigning {
    static let expiry: [UInt8] = [0x12, 0x49]          // MMYY: December 2049
    static let expiredExpiry: [UInt8] = [0x12, 0x24]   // December 2024

    /// Signs `body` (the bytes between header 6A and the hash) as a Book 2 block: `6A body hash BC`,
    /// the hash over `body` and then `hashed`. `breakHash` changes one bit of the hash.
    static func block(_ body: [UInt8], hashed: [UInt8], key: RSAKeyPair, breakHash: Bool = false) -> [UInt8] {
        var hash = Crypto.sha1(body + hashed)
        if breakHash { hash[0] ^= 0x01 }
        let block = [0x6A] + body + hash + [0xBC]
        precondition(block.count == key.modulus.count, "a Book 2 block fills the key's modulus")
        return key.sign(block)
    }

    /// `modulus` split into what fits `room` (padded with BB) and the remainder.
    static func split(_ modulus: [UInt8], room: Int) -> (leftmost: [UInt8], remainder: [UInt8]) {
        if modulus.count <= room { return (modulus + [UInt8](repeating: 0xBB, count: room - modulus.count), []) }
        return (Array(modulus.prefix(room)), Array(modulus.dropFirst(room)))
    }

    /// PAN digits as cn BCD, padded with F to `length` bytes.
    static func bcd(_ digits: String, length: Int) -> [UInt8] {
        var nibbles = digits.utf8.map { $0 - 0x30 }
        while nibbles.count < length * 2 { nibbles.append(0x0F) }
        return stride(from: 0, to: length * 2, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }

    /// The signed dynamic application data (Book 2 §6.5.2) over `dynamic` and `terminalData`.
    static func sdad(dynamic: [UInt8], terminalData: [UInt8], key: RSAKeyPair) -> [UInt8] {
        let n = key.modulus.count
        let body = [0x05, 0x01, UInt8(dynamic.count)] + dynamic
            + [UInt8](repeating: 0xBB, count: n - 25 - dynamic.count)
        return block(body, hashed: terminalData, key: key)
    }
}

extension CardProfile {
    /// The profile as its card answers it: each application personalised for offline data
    /// authentication (AIP bit, AFL marks and certificate record; ``CardODA``).
    public func personalisedForODA() -> CardProfile {
        var p = self
        p.applications = applications.map { $0.personalisedForODA() }
        return p
    }
}

extension CardApplication {
    /// The application as its card answers: with the certificate record and the AFL, AIP and
    /// static data ODA needs (``CardODA``). Unchanged without `oda`.
    func personalisedForODA() -> CardApplication {
        // Once: a personalised application already holds its certificate record (8F).
        guard let oda, !records.contains(where: { $0.objects.contains { $0.tag == .caPublicKeyIndex } }) else { return self }
        var app = self
        let usedSFIs = Set(records.map(\.sfi))
        guard let sfi = (1...10).first(where: { !usedSFIs.contains(UInt8($0)) }).map(UInt8.init) else { return self }
        // AIP: the method's bit (Visa cards that sign in the GPO answer say DDA).
        switch oda.method {
        case .sda: app.aip[0] |= 0x40
        case .fdda, .dda: app.aip[0] |= 0x20
        case .cda: app.aip[0] |= 0x01
        }
        // Every record the AFL names takes part in the static data (unless it is raw bytes).
        var afl = app.afl
        var staticData: [UInt8] = []
        for i in stride(from: 0, to: afl.count - afl.count % 4, by: 4) {
            let entrySFI = afl[i] >> 3, first = afl[i + 1], last = afl[i + 2]
            guard first >= 1, first <= last else { continue }
            let entry = (first...last).compactMap { record(sfi: entrySFI, number: $0) }
            guard entry.count == Int(last - first) + 1, entry.allSatisfy({ $0.raw == nil }), entrySFI <= 10 else { continue }
            afl[i + 3] = last - first + 1
            for r in entry { staticData += TLV(tag: .readRecordResponseTemplate, children: r.objects.map(\.tlv)).valueBytes }
        }
        staticData += app.aip
        // Two records: a short READ RECORD answer holds at most 256 bytes.
        if oda.fault != .missingRecord { afl += [sfi << 3, 1, 2, 0] }
        app.afl = afl

        let issuer = ODATestKeys.issuer, icc = ODATestKeys.icc, ca = ODATestKeys.ca
        let panDigits = pan.digits
        // Issuer certificate 90 (Book 2 §5.3 table 6).
        let issuerSplit = ODASigning.split(issuer.modulus, room: ca.modulus.count - 36)
        let issuerBody: [UInt8] = [0x02] + ODASigning.bcd(String(panDigits.prefix(6)), length: 4)
            + (oda.fault == .expiredIssuerCertificate ? ODASigning.expiredExpiry : ODASigning.expiry)
            + (oda.fault == .revokedCertificate ? CardODA.revokedSerial : oda.issuerCertificateSerial)
            + [0x01, 0x01, UInt8(issuer.modulus.count), UInt8(issuer.publicExponent.count)] + issuerSplit.leftmost
        let issuerCertificate = ODASigning.block(issuerBody, hashed: issuerSplit.remainder + issuer.publicExponent, key: ca,
                                                 breakHash: oda.fault == .wrongHash)
        var objects = [CardDataObject(.caPublicKeyIndex, [ODATestKeys.caIndex]),
                       CardDataObject(.issuerPublicKeyCertificate, issuerCertificate)]
        if !issuerSplit.remainder.isEmpty { objects.append(CardDataObject(.issuerPublicKeyRemainder, issuerSplit.remainder)) }
        objects.append(CardDataObject(.issuerPublicKeyExponent, issuer.publicExponent))
        objects.append(CardDataObject(.staticDataAuthenticationTagList, [0x82]))
        var iccObjects: [CardDataObject] = []
        switch oda.method {
        case .sda:
            // Signed static application data 93 (§5.4 table 7), data authentication code DAC1.
            let n = issuer.modulus.count
            let body: [UInt8] = [0x03, 0x01, 0xDA, 0xC1] + [UInt8](repeating: 0xBB, count: n - 26)
            var ssad = ODASigning.block(body, hashed: staticData, key: issuer)
            if oda.fault == .tamperedSignature { ssad[ssad.count / 2] ^= 0x01 }
            objects.append(CardDataObject(.signedStaticApplicationData, ssad))
        case .fdda, .dda, .cda:
            // ICC certificate 9F46 (§6.4 table 14).
            let iccSplit = ODASigning.split(icc.modulus, room: issuer.modulus.count - 42)
            let iccBody: [UInt8] = [0x04] + ODASigning.bcd(panDigits, length: 10) + ODASigning.expiry + [0x00, 0x00, 0x01]
                + [0x01, 0x01, UInt8(icc.modulus.count), UInt8(icc.publicExponent.count)] + iccSplit.leftmost
            let iccCertificate = ODASigning.block(iccBody, hashed: iccSplit.remainder + icc.publicExponent + staticData,
                                                  key: issuer)
            iccObjects.append(CardDataObject(.iccPublicKeyCertificate, iccCertificate))
            iccObjects.append(CardDataObject(.iccPublicKeyExponent, icc.publicExponent))
            if !iccSplit.remainder.isEmpty { iccObjects.append(CardDataObject(.iccPublicKeyRemainder, iccSplit.remainder)) }
            if oda.method == .dda, !oda.ddol.isEmpty { iccObjects.append(CardDataObject(.dynamicDataAuthenticationDOL, oda.ddol)) }
        }
        app.records.append(CardRecord(sfi: sfi, number: 1, objects: objects))
        app.records.append(CardRecord(sfi: sfi, number: 2, objects: iccObjects))
        return app
    }
}

extension CardState {
    /// The card's dynamic number for a cryptogram: the first 4 bytes of its AC.
    private static func dynamicNumber(_ c: Cryptogram) -> [UInt8] { Array(c.ac.prefix(4)) }

    /// fDDA (Visa): 9F69 (version 01, the card's unpredictable number, its CTQ) and the signature
    /// 9F4B over the reader's unpredictable number, amount and currency and 9F69, appended to a
    /// format 2 GPO answer's `value`. Nothing when the PDOL gave none of those.
    static func signForFDDA(_ c: Cryptogram, values: [Tag: [UInt8]], app: CardApplication, into value: inout [UInt8]) {
        guard let un = values[.unpredictableNumber], let amount = values[.amountAuthorised],
              let currency = values[.transactionCurrencyCode] else { return }
        let number = dynamicNumber(c)
        let ctq = app.gpoObjects.first { $0.tag == .cardTransactionQualifiers }?.value ?? [0x00, 0x00]
        let related = [0x01] + number + ctq.prefix(2)
        var sdad = ODASigning.sdad(dynamic: [UInt8(number.count)] + number, terminalData: un + amount + currency + related,
                                   key: ODATestKeys.icc)
        if app.oda?.fault == .tamperedSignature { sdad[sdad.count / 2] ^= 0x01 }
        TLV(tag: .cardAuthenticationRelatedData, value: related).encode(into: &value)
        TLV(tag: .signedDynamicApplicationData, value: sdad).encode(into: &value)
    }

    /// DDA's INTERNAL AUTHENTICATE answer (Book 2 §6.5.1, format 1: `80 L SDAD`): the signed
    /// dynamic application data over the ICC dynamic number and `ddolData`, the terminal dynamic
    /// data as it came. The dynamic number is the first 8 bytes of SHA-1 over the ATC and that data
    /// (new with every unpredictable number, reproducible for the same).
    static func signedForDDA(ddolData: [UInt8], atc: UInt16, app: CardApplication) -> [UInt8] {
        let number = Array(Crypto.sha1([UInt8(atc >> 8), UInt8(atc & 0xFF)] + ddolData).prefix(8))
        var sdad = ODASigning.sdad(dynamic: [UInt8(number.count)] + number, terminalData: ddolData, key: ODATestKeys.icc)
        if app.oda?.fault == .tamperedSignature { sdad[sdad.count / 2] ^= 0x01 }
        return TLV(tag: .responseMessageTemplateFormat1, value: sdad).encoded
    }

    /// A CDA GENERATE AC answer (Book 2 §6.6.1): 77 with 9F27, 9F36, 9F4B and 9F10, the AC inside
    /// the signature with the transaction data hash over the PDOL data, the CDOL1 data and the
    /// answer's other objects. Nil when CDOL1 gave no unpredictable number.
    func signedForCDA(_ c: Cryptogram, values: [Tag: [UInt8]], cdolData: [UInt8], app: CardApplication) -> [UInt8]? {
        guard let un = values[.unpredictableNumber] else { return nil }
        let cid = TLV(tag: .cryptogramInformationData, value: [c.cid])
        let atc = TLV(tag: .applicationTransactionCounter, value: c.atcBytes)
        let iad = TLV(tag: .issuerApplicationData, value: app.issuerApplicationData)
        let covered = gpoData + (app.oda?.fault == .cdaMismatch ? [] : cdolData) + cid.encoded + atc.encoded + iad.encoded
        let number = Self.dynamicNumber(c)
        let dynamic = [UInt8(number.count)] + number + [c.cid] + c.ac + Crypto.sha1(covered)
        var sdad = ODASigning.sdad(dynamic: dynamic, terminalData: un, key: ODATestKeys.icc)
        if app.oda?.fault == .tamperedSignature { sdad[sdad.count / 2] ^= 0x01 }
        return TLV(tag: .responseMessageTemplateFormat2, children: [
            cid, atc, TLV(tag: .signedDynamicApplicationData, value: sdad), iad,
        ]).encoded
    }
}
