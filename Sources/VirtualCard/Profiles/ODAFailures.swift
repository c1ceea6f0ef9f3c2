import BERTLV
public import PaymentRules

// Built-in profiles that fail offline data authentication, one fault each: `visa-qvsdc` (fDDA),
// `mastercard-mchip` (CDA) and `mastercard-mchip-dda` (DDA) with their own PAN and ATC. Each sets its TVR byte 1 bit; see
// README "Offline data authentication" for what the reader then does.

extension CardProfile {
    /// A copy whose applications authenticate with `oda`.
    public func withODA(_ oda: CardODA) -> CardProfile {
        changing { p in
            for i in p.applications.indices { p.applications[i].oda = oda }
        }
    }

    /// A built-in of this file: this profile under its own name and PAN, ATC 30, authenticating
    /// by `method` with `fault` (none: a card whose ODA succeeds).
    func authenticating(_ name: String, pan: String, method: CardODA.Method, fault: CardODA.Fault? = nil,
                        summary: String) -> CardProfile {
        variant(name: name, summary: summary, atc: 30, pan: PAN(pan)!).withODA(CardODA(method: method, fault: fault))
    }
}

extension CardProfiles {
    static let odaExpiredIssuerCertificate = visaQVSDC.authenticating(
        "oda-expired-issuer-certificate", pan: "4761739001010101", method: .fdda, fault: .expiredIssuerCertificate,
        summary: "Visa qVSDC (fDDA) whose issuer certificate expired 12/24: TVR DDA failed, goes online")

    static let odaRevokedCertificate = visaQVSDC.authenticating(
        "oda-revoked-certificate", pan: "4761739001010127", method: .fdda, fault: .revokedCertificate,
        summary: "Visa qVSDC (fDDA) whose issuer certificate has serial 0BAD01: fails with a revocation list (--crl) naming it")

    static let odaTamperedSDAD = visaQVSDC.authenticating(
        "oda-tampered-sdad", pan: "4761739001010143", method: .fdda, fault: .tamperedSignature,
        summary: "Visa qVSDC (fDDA) whose signature 9F4B is changed after signing: TVR DDA failed, goes online")

    static let odaWrongHash = mastercardMChip.authenticating(
        "oda-wrong-hash", pan: "5413330089010103", method: .cda, fault: .wrongHash,
        summary: "Mastercard (CDA) whose issuer certificate hash does not match: TVR CDA failed, goes online without CDA")

    static let odaMissingRecord = mastercardMChip.authenticating(
        "oda-missing-record", pan: "5413330089010111", method: .cda, fault: .missingRecord,
        summary: "Mastercard (CDA) whose AFL leaves out the certificate record: TVR ICC data missing and CDA failed, goes online")

    static let odaCDAMismatch = mastercardMChip.authenticating(
        "oda-cda-mismatch", pan: "5413330089010129", method: .cda, fault: .cdaMismatch,
        summary: "Mastercard (CDA) whose signed transaction data hash leaves out the CDOL1 data: TVR CDA failed, declined offline")

    /// M/Chip as a card that does DDA and not CDA (AIP byte 1 `38`: DDA, no CDA; the reader runs INTERNAL
    /// AUTHENTICATE with the card's DDOL 9F3704 before GENERATE AC, and CDOL1's 9F4C carries the
    /// ICC dynamic number the signature held).
    static let mastercardMChipDDA = mastercardMChip.authenticating(
        "mastercard-mchip-dda", pan: "5413330089010137", method: .dda,
        summary: "Mastercard M/Chip doing DDA (read with --oda-methods DDA,CDA): INTERNAL AUTHENTICATE with its DDOL 9F3704 before GENERATE AC")

    static let odaDDATamperedSDAD = mastercardMChipDDA.authenticating(
        "oda-dda-tampered-sdad", pan: "5413330089010145", method: .dda, fault: .tamperedSignature,
        summary: "Mastercard M/Chip (DDA) whose INTERNAL AUTHENTICATE signature is changed after signing: TVR DDA failed, goes online")
}
