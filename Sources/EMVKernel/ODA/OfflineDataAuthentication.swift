import BERTLV
import Cryptography
import ISO7816

/// The method of offline data authentication a read used.
public enum ODAMethod: String, Hashable, Sendable, CustomStringConvertible {
    /// Static data authentication: the issuer's signature 93 over the static data.
    case sda = "SDA"
    /// Dynamic data authentication: the card signs the DDOL data in INTERNAL AUTHENTICATE.
    case dda = "DDA"
    /// Fast DDA (Visa qVSDC, C-3): the card's signature 9F4B in the GPO answer.
    case fdda = "fDDA"
    /// Combined DDA / application cryptogram generation: the signature in the GENERATE AC answer.
    case cda = "CDA"
    /// Not performed.
    case none = "none"

    public var description: String { rawValue }
}

/// One step of the chain: a certificate recovered, a signature verified, or not.
public enum ODACheck: Hashable, Sendable {
    /// Recovered (a certificate) or verified (a signature).
    case passed
    case failed(String)
    /// The card gave nothing to check.
    case absent
    /// The method has no such step (SDA has no ICC certificate) or it was never reached.
    case notUsed

    var failure: String? { if case .failed(let r) = self { return r } else { return nil } }
}

/// What offline data authentication found: the method, the CA key, each step of the chain, and
/// the bits it set in TVR byte 1.
public struct ODAResult: Hashable, Sendable, CustomStringConvertible {
    public var method: ODAMethod
    /// `A000000003/09`, when the card named an index.
    public var caKey: String?
    public var issuerCertificate: ODACheck
    public var iccCertificate: ODACheck
    public var signature: ODACheck
    /// TVR byte 1 as offline data authentication left it (bits 8-2: not performed, SDA failed,
    /// ICC data missing, card on exception file, DDA failed, CDA failed, SDA selected).
    public var tvrByte1: UInt8

    public init(method: ODAMethod, caKey: String? = nil, issuerCertificate: ODACheck = .notUsed,
                iccCertificate: ODACheck = .notUsed, signature: ODACheck = .notUsed, tvrByte1: UInt8 = 0) {
        self.method = method
        self.caKey = caKey
        self.issuerCertificate = issuerCertificate
        self.iccCertificate = iccCertificate
        self.signature = signature
        self.tvrByte1 = tvrByte1
    }

    /// Nothing was performed (the card or the terminal supports no method).
    public static let notPerformed = ODAResult(method: .none, tvrByte1: TVR1.notPerformed)

    /// Whether the card was authenticated.
    public var succeeded: Bool { method != .none && tvrByte1 & TVR1.failures == 0 }

    /// The first failure, if any.
    public var failure: String? { issuerCertificate.failure ?? iccCertificate.failure ?? signature.failure }

    /// One line: `ODA fDDA with CA A000000003/E7: verified` or `… failed: <reason>`.
    public var description: String {
        guard method != .none else { return "ODA not performed" }
        let ca = caKey.map { " with CA \($0)" } ?? ""
        if let failure { return "ODA \(method)\(ca): failed: \(failure)" }
        if case .passed = signature { return "ODA \(method)\(ca): verified" }
        return "ODA \(method)\(ca): certificates recovered, signature \(signature == .absent ? "absent" : "not checked")"
    }
}

/// TVR byte 1 bits (EMV Book 3 Annex C5).
public enum TVR1 {
    public static let notPerformed: UInt8 = 0x80
    public static let sdaFailed: UInt8 = 0x40
    public static let iccDataMissing: UInt8 = 0x20
    public static let ddaFailed: UInt8 = 0x08
    public static let cdaFailed: UInt8 = 0x04
    public static let sdaSelected: UInt8 = 0x02
    /// Every failure bit.
    static let failures: UInt8 = notPerformed | sdaFailed | iccDataMissing | ddaFailed | cdaFailed
}

/// A step of the chain failed; `missingData` when the card lacked what the step needs (TVR "ICC
/// data missing").
struct ODAFailure: Error {
    var reason: String
    var missingData = false
    init(_ reason: String, missingData: Bool = false) {
        self.reason = reason
        self.missingData = missingData
    }
}

/// An RSA public key recovered from a certificate (or a CA's).
struct RSAPublicKey: Hashable, Sendable {
    var modulus: [UInt8]
    var exponent: [UInt8]
}

/// EMV Book 2's recovery and verification steps, as pure functions over the card's bytes: every
/// length and header is checked before it is used (the bytes are the card's, hence hostile).
enum Book2 {
    /// The recovery function (§5.1): `data` to the key's exponent, checked for header 6A and
    /// trailer BC.
    static func recover(_ data: [UInt8], with key: RSAPublicKey, what: String) throws(ODAFailure) -> [UInt8] {
        let n = key.modulus.count
        guard data.count == n else {
            throw ODAFailure("the \(what) has \(data.count) byte(s); the key that opens it has \(n)")
        }
        guard let r = Crypto.rsaRaw(data, exponent: key.exponent, modulus: key.modulus) else {
            throw ODAFailure("the \(what) is not a number below the key's modulus")
        }
        guard r.count >= 42, r[0] == 0x6A, r[n - 1] == 0xBC else {
            throw ODAFailure("the recovered \(what) has header \(Hex.encode(r.prefix(1))) and trailer "
                             + "\(Hex.encode(r.suffix(1))), not 6A and BC (wrong key, or the data was altered)")
        }
        return r
    }

    /// The issuer's public key from its certificate 90 (§5.3 / §6.3), with the CA key.
    static func issuerKey(certificate: [UInt8], remainder: [UInt8]?, exponent: [UInt8]?, ca: CAPublicKey,
                          panDigits: String, today: (year: Int, month: Int),
                          revoked: CertificateRevocationList) throws(ODAFailure) -> RSAPublicKey {
        let caKey = RSAPublicKey(modulus: ca.modulus, exponent: ca.exponent)
        let n = caKey.modulus.count
        let r = try recover(certificate, with: caKey, what: "issuer public key certificate 90")
        guard r[1] == 0x02 else { throw ODAFailure("the issuer certificate's format is \(Hex.encode([r[1]])), not 02") }
        guard let exponent, !exponent.isEmpty else {
            throw ODAFailure("the card gave no issuer public key exponent 9F32", missingData: true)
        }
        let hash = Array(r[(n - 21)..<(n - 1)])
        let signed = Array(r[1..<(n - 21)]) + (remainder ?? []) + exponent
        guard Crypto.sha1(signed) == hash else { throw ODAFailure("the issuer certificate's hash does not match") }
        guard r[11] == 0x01, r[12] == 0x01 else {
            throw ODAFailure("the issuer certificate names hash algorithm \(r[11]) and key algorithm \(r[12]), not SHA-1 and RSA")
        }
        try checkIssuerIdentifier(Array(r[2..<6]), panDigits: panDigits)
        try checkExpiry(r[6], r[7], today: today, what: "issuer certificate")
        if revoked.contains(rid: ca.rid, index: ca.index, serial: Array(r[8..<11])) {
            throw ODAFailure("the issuer certificate (serial \(Hex.encode(r[8..<11]))) is on the revocation list")
        }
        let length = Int(r[13]), exponentLength = Int(r[14])
        guard exponentLength == exponent.count else {
            throw ODAFailure("the issuer certificate says a \(exponentLength)-byte exponent; 9F32 has \(exponent.count)")
        }
        let modulus = try assemble(leftmost: Array(r[15..<(n - 21)]), length: length, remainder: remainder,
                                   remainderTag: "92", what: "issuer")
        return RSAPublicKey(modulus: modulus, exponent: exponent)
    }

    /// The card's public key from its certificate 9F46 (§6.4), with the issuer key, over the
    /// static data to be authenticated.
    static func iccKey(certificate: [UInt8], remainder: [UInt8]?, exponent: [UInt8]?, issuer: RSAPublicKey,
                       panDigits: String, today: (year: Int, month: Int),
                       staticData: [UInt8]) throws(ODAFailure) -> RSAPublicKey {
        let n = issuer.modulus.count
        let r = try recover(certificate, with: issuer, what: "ICC public key certificate 9F46")
        guard r[1] == 0x04 else { throw ODAFailure("the ICC certificate's format is \(Hex.encode([r[1]])), not 04") }
        guard let exponent, !exponent.isEmpty else {
            throw ODAFailure("the card gave no ICC public key exponent 9F47", missingData: true)
        }
        let hash = Array(r[(n - 21)..<(n - 1)])
        let signed = Array(r[1..<(n - 21)]) + (remainder ?? []) + exponent + staticData
        guard Crypto.sha1(signed) == hash else {
            throw ODAFailure("the ICC certificate's hash does not match (the static data or the certificate was changed)")
        }
        guard r[17] == 0x01, r[18] == 0x01 else {
            throw ODAFailure("the ICC certificate names hash algorithm \(r[17]) and key algorithm \(r[18]), not SHA-1 and RSA")
        }
        let pan = panNibbles(Array(r[2..<12]))
        guard pan == panDigits else { throw ODAFailure("the ICC certificate is for another PAN") }
        try checkExpiry(r[12], r[13], today: today, what: "ICC certificate")
        let length = Int(r[19]), exponentLength = Int(r[20])
        guard exponentLength == exponent.count else {
            throw ODAFailure("the ICC certificate says a \(exponentLength)-byte exponent; 9F47 has \(exponent.count)")
        }
        let modulus = try assemble(leftmost: Array(r[21..<(n - 21)]), length: length, remainder: remainder,
                                   remainderTag: "9F48", what: "ICC")
        return RSAPublicKey(modulus: modulus, exponent: exponent)
    }

    /// SDA (§5.4): the signed static application data 93 over the static data.
    static func verifySDA(_ ssad: [UInt8], issuer: RSAPublicKey, staticData: [UInt8]) throws(ODAFailure) {
        let n = issuer.modulus.count
        let r = try recover(ssad, with: issuer, what: "signed static application data 93")
        guard r[1] == 0x03, r[2] == 0x01 else {
            throw ODAFailure("the signed static data has format \(Hex.encode([r[1]])) and hash algorithm \(r[2]), not 03 and SHA-1")
        }
        guard Crypto.sha1(Array(r[1..<(n - 21)]) + staticData) == Array(r[(n - 21)..<(n - 1)]) else {
            throw ODAFailure("the signed static data's hash does not match")
        }
    }

    /// A dynamic signature 9F4B (§6.5.2, §6.6.2): its ICC dynamic data, once the hash over it and
    /// `terminalData` matches.
    static func verifyDynamicSignature(_ sdad: [UInt8], icc: RSAPublicKey,
                                       terminalData: [UInt8]) throws(ODAFailure) -> [UInt8] {
        let n = icc.modulus.count
        let r = try recover(sdad, with: icc, what: "signed dynamic application data 9F4B")
        guard r[1] == 0x05, r[2] == 0x01 else {
            throw ODAFailure("the signed dynamic data has format \(Hex.encode([r[1]])) and hash algorithm \(r[2]), not 05 and SHA-1")
        }
        let length = Int(r[3])
        guard 4 + length <= n - 21 else {
            throw ODAFailure("the signed dynamic data says \(length) byte(s) of ICC dynamic data; it has room for \(n - 25)")
        }
        guard Crypto.sha1(Array(r[1..<(n - 21)]) + terminalData) == Array(r[(n - 21)..<(n - 1)]) else {
            throw ODAFailure("the signed dynamic data's hash does not match")
        }
        return Array(r[4..<(4 + length)])
    }

    /// CDA's ICC dynamic data (§6.6.1 table 19): dynamic number, CID, AC, transaction data hash.
    struct CDAData {
        var cid: UInt8
        var ac: [UInt8]
        var transactionDataHash: [UInt8]
    }

    static func cdaData(_ d: [UInt8]) throws(ODAFailure) -> CDAData {
        guard let l = d.first.map(Int.init), (2...8).contains(l), d.count >= 1 + l + 29 else {
            throw ODAFailure("the CDA signature's dynamic data (\(d.count) byte(s)) does not hold a dynamic number, CID, AC and hash")
        }
        return CDAData(cid: d[1 + l], ac: Array(d[(2 + l)..<(10 + l)]), transactionDataHash: Array(d[(10 + l)..<(30 + l)]))
    }

    // MARK: Checks

    /// The modulus: the certificate's leftmost digits, then the remainder when it did not fit.
    private static func assemble(leftmost: [UInt8], length: Int, remainder: [UInt8]?, remainderTag: String,
                                 what: String) throws(ODAFailure) -> [UInt8] {
        guard length >= 64 else { throw ODAFailure("the \(what) key length \(length) is below EMV's 64 bytes") }
        if length <= leftmost.count {
            guard leftmost[length...].allSatisfy({ $0 == 0xBB }) else {
                throw ODAFailure("the \(what) certificate's padding after the key is not BB")
            }
            return Array(leftmost[..<length])
        }
        let needed = length - leftmost.count
        guard let remainder else {
            throw ODAFailure("the \(what) key needs a \(needed)-byte remainder \(remainderTag) the card did not give", missingData: true)
        }
        guard remainder.count == needed else {
            throw ODAFailure("the \(what) key remainder \(remainderTag) has \(remainder.count) byte(s), not \(needed)")
        }
        return leftmost + remainder
    }

    /// The issuer identifier (3 to 8 digits, padded with F) against the PAN's leading digits.
    private static func checkIssuerIdentifier(_ id: [UInt8], panDigits: String) throws(ODAFailure) {
        let digits = panNibbles(id)
        guard (3...8).contains(digits.count), panDigits.hasPrefix(digits) else {
            throw ODAFailure("the issuer certificate's issuer identifier does not match the PAN")
        }
    }

    /// BCD nibbles up to the first F (nil-safe: a nibble above 9 before F ends the digits too).
    static func panNibbles(_ bytes: [UInt8]) -> String {
        var out = ""
        for b in bytes {
            for nibble in [b >> 4, b & 0x0F] {
                guard nibble <= 9 else { return out }
                out.append(Character(Unicode.Scalar(0x30 + nibble)))
            }
        }
        return out
    }

    /// MMYY (BCD): valid through the end of that month.
    private static func checkExpiry(_ mm: UInt8, _ yy: UInt8, today: (year: Int, month: Int), what: String) throws(ODAFailure) {
        guard let month = BCD.value([mm]), let year = BCD.value([yy]), (1...12).contains(month) else {
            throw ODAFailure("the \(what)'s expiry \(Hex.encode([mm, yy])) is not MMYY")
        }
        let y = 2000 + Int(year)
        guard (y, Int(month)) >= today else {
            throw ODAFailure("the \(what) expired at the end of \(Hex.encode([mm]))/\(Hex.encode([yy]))")
        }
    }
}
