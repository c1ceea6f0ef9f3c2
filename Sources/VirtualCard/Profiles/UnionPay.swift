import BERTLV
import PaymentRules

// Built-in profile `unionpay`: `visa-qvsdc`'s qVSDC flow as UnionPay's qUICS (kernel C-7), with its
// own PAN, ATC, issuer key and cardholder name, no FCI discretionary data, a CTQ that asks for
// nothing (0000) until the reader requires a CVM, then for online PIN (8000).

extension CardProfiles {
    static let unionPay = visaQVSDC.variant(
        name: "unionpay",
        summary: "UnionPay debit (C-7, qUICS): cryptogram in the GPO answer; the CTQ (9F6C) asks for online PIN when the reader requires a CVM",
        atc: 9, pan: PAN("6200000000000005")!)
        .relabelling(aid: "A000000333010101", label: "UnionPay Debit", preferredName: "UnionPay Debit", kernel: "07")
        .issued(masterKey: "A6D2AE2816157E2B3C4FCF098815F7AB")
        .replacingObjects(Tag(0x5F20), text: "UNIONPAY TEST/CARD")
        .replacingObjects(Tag(0x9F6C), hex: "0000")
        .changing {
            $0.applications[0].fciIssuerDiscretionaryData = []
            $0.applications[0].cardTransactionQualifiersWhenCVMRequired = [0x80, 0x00]
        }
}
