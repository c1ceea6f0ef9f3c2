import BERTLV
public import PaymentRules

// Built-in profiles that fail offline data authentication, one fault each: `visa-qvsdc` (fDDA),
// `mastercard-mchip` (CDA) and `mastercard-mchip-dda` (DDA) with their own PAN and ATC. Each sets its TVR byte 1 bit; see
// README "Offline data authentication" for what the reader then does.

extension CardProfile {
    /// A copy whose applications authenticate with `oda`.
    public func withODA(_ oda: CardODA) -> CardProfile {
        var p = self
        for i in p.applications.indices { p.applications[i].oda = oda }
        return p
    }
}

extension CardProfiles {
    static let odaExpiredIssuerCertificate = visaQVSDC.variant(
        name: "oda-expired-issuer-certificate",
        summary: "Visa qVSDC (fDDA) whose issuer certificate expired 12/24: TVR DDA failed, goes online",
        atc: 30, pan: PAN("4761739001010101")!).withODA(CardODA(method: .fdda, fault: .expiredIssuerCertificate))

    static let odaRevokedCertificate = visaQVSDC.variant(
        name: "oda-revoked-certificate",
        summary: "Visa qVSDC (fDDA) whose issuer certificate has serial 0BAD01: fails with a revocation list (--crl) naming it",
        atc: 30, pan: PAN("4761739001010127")!).withODA(CardODA(method: .fdda, fault: .revokedCertificate))

    static let odaTamperedSDAD = visaQVSDC.variant(
        name: "oda-tampered-sdad",
        summary: "Visa qVSDC (fDDA) whose signature 9F4B is changed after signing: TVR DDA failed, goes online",
        atc: 30, pan: PAN("4761739001010143")!).withODA(CardODA(method: .fdda, fault: .tamperedSignature))

    static let odaWrongHash = mastercardMChip.variant(
        name: "oda-wrong-hash",
        summary: "Mastercard (CDA) whose issuer certificate hash does not match: TVR CDA failed, goes online without CDA",
        atc: 30, pan: PAN("5413330089010103")!).withODA(CardODA(method: .cda, fault: .wrongHash))

    static let odaMissingRecord = mastercardMChip.variant(
        name: "oda-missing-record",
        summary: "Mastercard (CDA) whose AFL leaves out the certificate record: TVR ICC data missing and CDA failed, goes online",
        atc: 30, pan: PAN("5413330089010111")!).withODA(CardODA(method: .cda, fault: .missingRecord))

    static let odaCDAMismatch = mastercardMChip.variant(
        name: "oda-cda-mismatch",
        summary: "Mastercard (CDA) whose signed transaction data hash leaves out the CDOL1 data: TVR CDA failed, declined offline",
        atc: 30, pan: PAN("5413330089010129")!).withODA(CardODA(method: .cda, fault: .cdaMismatch))

    /// M/Chip as a card that does DDA and not CDA (AIP byte 1 `38`: DDA, no CDA; the reader runs INTERNAL
    /// AUTHENTICATE with the card's DDOL 9F3704 before GENERATE AC, and CDOL1's 9F4C carries the
    /// ICC dynamic number the signature held).
    static let mastercardMChipDDA = mastercardMChip.variant(
        name: "mastercard-mchip-dda",
        summary: "Mastercard M/Chip doing DDA (read with --oda-methods DDA,CDA): INTERNAL AUTHENTICATE with its DDOL 9F3704 before GENERATE AC",
        atc: 30, pan: PAN("5413330089010137")!).withODA(CardODA(method: .dda))

    static let odaDDATamperedSDAD = mastercardMChipDDA.variant(
        name: "oda-dda-tampered-sdad",
        summary: "Mastercard M/Chip (DDA) whose INTERNAL AUTHENTICATE signature is changed after signing: TVR DDA failed, goes online",
        atc: 30, pan: PAN("5413330089010145")!).withODA(CardODA(method: .dda, fault: .tamperedSignature))
}
