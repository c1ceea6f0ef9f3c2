import BERTLV
import PaymentRules

// Built-in profile `two-apps`: `visa-qvsdc`'s application twice, each with its own PAN: a debit
// one (its own AID and label, priority 2) listed in the PPSE before the credit one (priority 1).

extension CardProfiles {
    static let twoApps = visaQVSDC.variant(
        name: "two-apps",
        summary: "Two Visa applications in the PPSE: debit (priority 2) listed before credit (priority 1)",
        atc: 12, pan: PAN("4761739001010135")!)
        .changing { p in
            let debit = p.sibling(pan: "4761739001010119", aid: "A0000000032010", label: "VISA DEBIT",
                                  preferredName: "Visa Debit", priority: 2)
            p.applications.insert(debit.applications[0], at: 0)
        }
}
