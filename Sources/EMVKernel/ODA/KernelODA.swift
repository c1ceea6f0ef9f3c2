import BERTLV
import PaymentRules
import Cryptography
import ISO7816

/// Offline data authentication in the kernel (EMV Book 2, Book 3 §10.3, Books C-2 and C-3):
/// which method runs, the chain of certificates, the signature, and what a failure means.
///
/// - A cryptogram in the GPO answer (qVSDC, C-3): fDDA when the card signed (9F4B in the GPO
///   answer), over the unpredictable number, amount, currency and 9F69; else SDA when the card and
///   the terminal support it. The TVR in the PDOL data the card signed stays as it was; the bits
///   are reported in ``CardRead/oda``.
/// - GENERATE AC (Book 3 §10.3): CDA when the AIP and the terminal (9F33 byte 3) both support it —
///   certificates before GENERATE AC, the signature in its answer; else DDA when both support it —
///   INTERNAL AUTHENTICATE with the card's DDOL 9F49 (the terminal's default DDOL when the card has
///   none), the signature over the DDOL data, before GENERATE AC; else SDA before it. The TVR bits
///   go into CDOL1. tapemu applies this rule, Book 3's, under every kernel (a C-2 reader proper runs
///   CDA only).
/// - A failure sets its TVR byte 1 bit. A signature that fails on a cryptogram the card meant as
///   final (CDA, or fDDA on a TC) makes the reader decline offline (Book 2 §6.6.2; C-3: a failed
///   fDDA on an offline approval is a decline); a failed certificate or SDA before GENERATE AC, or
///   fDDA on an ARQC, goes online with the bit set for the issuer to judge.
/// - A failed DDA goes online with its bit set (Book 3 §10.3); on a TC it is a decline.
extension EMVKernel {
    // MARK: Methods

    func authenticateGPOCryptogram(_ r: RecordReading, pan: PAN) -> ODAResult {
        let aip1 = r.aip.first ?? 0
        if let sdad = r.data[.signedDynamicApplicationData] {
            var (result, _, icc) = chain(r, pan: pan, method: .fdda, failBit: TVR1.ddaFailed, needsICC: true)
            guard let icc else { return result }
            guard let related = r.data[.cardAuthenticationRelatedData] else {
                return failed(&result, \.signature, TVR1.ddaFailed,
                              ODAFailure("the card gave no card authentication related data 9F69", missingData: true))
            }
            let terminal = terminalData
            let terminalPart = (terminal[.unpredictableNumber] ?? []) + (terminal[.amountAuthorised] ?? [])
                + (terminal[.transactionCurrencyCode] ?? []) + related
            do {
                _ = try Book2.verifyDynamicSignature(sdad, icc: icc, terminalData: terminalPart)
                result.signature = .passed
            } catch {
                return failed(&result, \.signature, TVR1.ddaFailed, error)
            }
            return result
        }
        if aip1 & 0x40 != 0, terminalSupports(0x80) { return sda(r, pan: pan) }
        return .notPerformed
    }

    /// What ODA does before GENERATE AC.
    enum BeforeGenerateAC {
        /// Done (SDA, not performed, or a chain that failed), or CDA's certificates with the key
        /// its signature will be checked with.
        case done(ODAResult, cdaKey: RSAPublicKey?)
        /// DDA: send INTERNAL AUTHENTICATE with this DDOL data; the certificates are recovered.
        case internalAuthenticate(ddolData: [UInt8], ODAResult, key: RSAPublicKey)
    }

    func authenticateBeforeGenerateAC(_ r: RecordReading, pan: PAN) -> BeforeGenerateAC {
        let aip1 = r.aip.first ?? 0
        if aip1 & 0x01 != 0, terminalSupports(0x08) {
            let (result, _, icc) = chain(r, pan: pan, method: .cda, failBit: TVR1.cdaFailed, needsICC: true)
            return .done(result, cdaKey: icc)
        }
        if aip1 & 0x20 != 0, terminalSupports(0x40) {
            var (result, _, icc) = chain(r, pan: pan, method: .dda, failBit: TVR1.ddaFailed, needsICC: true)
            guard let icc else { return .done(result, cdaKey: nil) }
            do throws(ODAFailure) {
                return .internalAuthenticate(ddolData: try ddolData(r), result, key: icc)
            } catch {
                return .done(failed(&result, \.signature, TVR1.ddaFailed, error), cdaKey: nil)
            }
        }
        if aip1 & 0x40 != 0, terminalSupports(0x80) { return .done(sda(r, pan: pan), cdaKey: nil) }
        return .done(.notPerformed, cdaKey: nil)
    }

    /// The DDOL data INTERNAL AUTHENTICATE sends (Book 3 §10.3.2 / Book 2 §6.5.1): the card's DDOL
    /// 9F49, else the terminal's default; either must ask for the unpredictable number.
    private func ddolData(_ r: RecordReading) throws(ODAFailure) -> [UInt8] {
        let bytes = r.data[.dynamicDataAuthenticationDOL] ?? configuration.defaultDDOL
        guard !bytes.isEmpty else {
            throw ODAFailure("the card gave no DDOL 9F49 and the terminal has no default DDOL", missingData: true)
        }
        let ddol: DataObjectList
        do { ddol = try DataObjectList(bytes: bytes) } catch {
            throw ODAFailure("the DDOL \(Hex.encode(bytes)) is not a data object list")
        }
        guard ddol.entries.contains(where: { $0.tag == .unpredictableNumber }) else {
            throw ODAFailure("the DDOL \(Hex.encode(bytes)) does not ask for the unpredictable number 9F37")
        }
        let data = ddol.build { [terminalValues = terminalData, store = r.data] tag in terminalValues[tag] ?? store[tag] }
        guard data.count <= 255 else { throw ODAFailure("the DDOL asks for \(data.count) bytes; INTERNAL AUTHENTICATE holds at most 255") }
        return data
    }

    /// DDA's signature (Book 2 §6.5.2): the INTERNAL AUTHENTICATE answer (format 1 `80`, or
    /// format 2 `77` holding 9F4B) recovered with the card's key, its hash over the DDOL data sent.
    /// The ICC dynamic number it holds, once verified.
    func verifyDDA(_ response: ResponseAPDU, request: DynamicAuthentication) -> (ODAResult, dynamicNumber: [UInt8]?) {
        var result = request.oda
        do throws(ODAFailure) {
            guard response.statusWord == .success else {
                throw ODAFailure("INTERNAL AUTHENTICATE answered \(response.statusWord)")
            }
            let sdad: [UInt8]
            switch try? BERTLV.parse(response.data) {
            case let nodes? where nodes.count == 1 && nodes[0].tag == .responseMessageTemplateFormat1:
                sdad = Array(nodes[0].value)
            case let nodes? where nodes.count == 1 && nodes[0].tag == .responseMessageTemplateFormat2:
                guard let s = nodes.find(.signedDynamicApplicationData) else {
                    throw ODAFailure("the INTERNAL AUTHENTICATE answer 77 holds no signature 9F4B", missingData: true)
                }
                sdad = Array(s.value)
            default:
                throw ODAFailure("the INTERNAL AUTHENTICATE answer is not one template 80 or 77")
            }
            let dynamic = try Book2.verifyDynamicSignature(sdad, icc: request.key, terminalData: request.ddolData)
            guard let l = dynamic.first.map(Int.init), (2...8).contains(l), dynamic.count >= 1 + l else {
                throw ODAFailure("the signed dynamic data (\(dynamic.count) byte(s)) holds no ICC dynamic number of 2 to 8 bytes")
            }
            result.signature = .passed
            return (result, Array(dynamic[1...l]))
        } catch {
            return (failed(&result, \.signature, TVR1.ddaFailed, error), nil)
        }
    }

    /// The CDA signature in the GENERATE AC answer (Book 2 §6.6.2): recovered with the card's key,
    /// its hash over the unpredictable number, its CID the answer's, its transaction data hash over
    /// the PDOL data, the CDOL1 data and the answer's objects but 9F4B. Puts the AC it holds in
    /// `data`.
    func verifyCDA(_ answer: [TLV], key: RSAPublicKey, request: CryptogramRequest,
                   data: inout CardDataStore) -> ODAResult {
        var result = request.oda
        let objects = answer.first?.tag == .responseMessageTemplateFormat2 ? answer[0].children : answer
        let cid = objects.first { $0.tag == .cryptogramInformationData }?.valueBytes
        guard let sdad = objects.first(where: { $0.tag == .signedDynamicApplicationData })?.valueBytes else {
            if let cid, cid.count == 1, cid[0] & 0xC0 == 0 {   // an AAC needs no signature
                result.signature = .absent
                return result
            }
            return failed(&result, \.signature, TVR1.cdaFailed,
                          ODAFailure("CDA was asked for; the GENERATE AC answer has no signature 9F4B", missingData: true))
        }
        do throws(ODAFailure) {
            let dynamic = try Book2.verifyDynamicSignature(sdad, icc: key,
                                                            terminalData: terminalData[.unpredictableNumber] ?? [])
            let signed = try Book2.cdaData(dynamic)
            guard let cid, cid == [signed.cid] else {
                throw ODAFailure("the CID in the signature differs from the answer's 9F27")
            }
            var covered = request.pdolData + request.cdolData
            for o in objects where o.tag != .signedDynamicApplicationData { covered += o.encoded }
            guard Crypto.sha1(covered) == signed.transactionDataHash else {
                throw ODAFailure("the transaction data hash in the signature does not match the data exchanged")
            }
            if let ac = data[.applicationCryptogram] {
                guard ac == signed.ac else { throw ODAFailure("the AC 9F26 differs from the one in the signature") }
            } else {
                try? data.add([TLV(tag: .applicationCryptogram, value: signed.ac)], step: .generateAC)
            }
            result.signature = .passed
        } catch {
            return failed(&result, \.signature, TVR1.cdaFailed, error)
        }
        return result
    }

    /// Why the reader declines offline whatever the card asked for, if it does: a signature that
    /// failed over a final cryptogram (CDA, whatever its type; fDDA or SDA on a TC).
    static func readerDeclines(_ read: CardRead) -> String? {
        guard let failure = read.oda.failure else { return nil }
        switch read.oda.method {
        case .cda:
            if case .failed = read.oda.signature { return "CDA failed: \(failure)" }
            return nil
        case .fdda, .sda, .dda:
            return read.cryptogram.kind == .tc ? "\(read.oda.method) failed on an offline approval: \(failure)" : nil
        case .none:
            return nil
        }
    }

    // MARK: Steps

    private func sda(_ r: RecordReading, pan: PAN) -> ODAResult {
        var (result, issuer, _) = chain(r, pan: pan, method: .sda, failBit: TVR1.sdaFailed, needsICC: false)
        result.tvrByte1 |= TVR1.sdaSelected
        guard let issuer else { return result }
        guard let ssad = r.data[.signedStaticApplicationData] else {
            return failed(&result, \.signature, TVR1.sdaFailed,
                          ODAFailure("the card gave no signed static application data 93", missingData: true))
        }
        do {
            let staticData = try self.staticData(r)
            try Book2.verifySDA(ssad, issuer: issuer, staticData: staticData)
            result.signature = .passed
        } catch {
            return failed(&result, \.signature, TVR1.sdaFailed, error)
        }
        return result
    }

    /// The CA key, the issuer key and (`needsICC`) the card's key.
    private func chain(_ r: RecordReading, pan: PAN, method: ODAMethod, failBit: UInt8,
                       needsICC: Bool) -> (ODAResult, RSAPublicKey?, RSAPublicKey?) {
        var result = ODAResult(method: method)
        let d = r.data
        let today = transactionMonth
        guard let index = d[.caPublicKeyIndex], index.count == 1 else {
            return (failed(&result, \.issuerCertificate, failBit,
                           ODAFailure("the card gave no CA public key index 8F", missingData: true)), nil, nil)
        }
        let rid = Array(r.application.fci.dfName.prefix(5))
        result.caKey = "\(Hex.encode(rid))/\(Hex.encode(index))"
        guard let ca = configuration.caPublicKeys.key(rid: rid, index: index[0]) else {
            return (failed(&result, \.issuerCertificate, failBit,
                           ODAFailure("the terminal has no CA public key \(result.caKey!)")), nil, nil)
        }
        guard let certificate = d[.issuerPublicKeyCertificate] else {
            return (failed(&result, \.issuerCertificate, failBit,
                           ODAFailure("the card gave no issuer public key certificate 90", missingData: true)), nil, nil)
        }
        let issuer: RSAPublicKey
        do {
            issuer = try Book2.issuerKey(certificate: certificate, remainder: d[.issuerPublicKeyRemainder],
                                         exponent: d[.issuerPublicKeyExponent], ca: ca, panDigits: pan.digits,
                                         today: today, revoked: configuration.revocationList)
        } catch {
            return (failed(&result, \.issuerCertificate, failBit, error), nil, nil)
        }
        result.issuerCertificate = .passed
        guard needsICC else { return (result, issuer, nil) }
        guard let iccCertificate = d[.iccPublicKeyCertificate] else {
            return (failed(&result, \.iccCertificate, failBit,
                           ODAFailure("the card gave no ICC public key certificate 9F46", missingData: true)), issuer, nil)
        }
        do {
            let staticData = try self.staticData(r)
            let icc = try Book2.iccKey(certificate: iccCertificate, remainder: d[.iccPublicKeyRemainder],
                                       exponent: d[.iccPublicKeyExponent], issuer: issuer, panDigits: pan.digits,
                                       today: today, staticData: staticData)
            result.iccCertificate = .passed
            return (result, issuer, icc)
        } catch {
            return (failed(&result, \.iccCertificate, failBit, error), issuer, nil)
        }
    }

    /// The static data to be authenticated: the marked records, then the AIP when 9F4A names it
    /// (the only tag it may name, Book 3 §10.3).
    private func staticData(_ r: RecordReading) throws(ODAFailure) -> [UInt8] {
        var data = r.staticData
        if let list = r.data[.staticDataAuthenticationTagList] {
            guard list == [0x82] else {
                throw ODAFailure("the static data authentication tag list 9F4A names \(Hex.encode(list)), not only the AIP 82")
            }
            data += r.aip
        }
        return data
    }

    private func failed(_ result: inout ODAResult, _ step: WritableKeyPath<ODAResult, ODACheck>, _ bit: UInt8,
                        _ failure: ODAFailure) -> ODAResult {
        result[keyPath: step] = .failed(failure.reason)
        result.tvrByte1 |= bit | (failure.missingData ? TVR1.iccDataMissing : 0)
        return result
    }

    private func terminalSupports(_ securityBit: UInt8) -> Bool {
        configuration.terminalCapabilities.count == 3 && configuration.terminalCapabilities[2] & securityBit != 0
    }

    /// The transaction date's year and month (9A), for certificate expiry.
    private var transactionMonth: (year: Int, month: Int) {
        guard let date = terminalData[.transactionDate], date.count == 3, let v = BCD.value(date) else { return (2000, 1) }
        return (2000 + Int(v / 10_000), Int(v / 100 % 100))
    }
}
