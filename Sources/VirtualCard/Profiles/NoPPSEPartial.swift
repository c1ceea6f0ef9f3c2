import BERTLV
import PaymentRules

// Built-in profile `no-ppse-partial`: no PPSE, and `visa-qvsdc`'s application twice under one AID
// prefix (A000000003101001 debit, priority 2; A000000003101002 credit, priority 1), each with its
// own PAN and cardholder name, no FCI discretionary data, a CTQ of 0000 (1600 when the reader
// requires a CVM): only partial-AID selection with next occurrence finds the second.

extension CardProfiles {
    static let noPPSEPartial = visaQVSDC.variant(
        name: "no-ppse-partial",
        summary: "No PPSE, two Visa applications under one AID prefix: only partial-AID selection with next occurrence finds the second (priority 1)",
        atc: 30, pan: PAN("4000056655665556")!)
        .changing { p in
            p.hasPPSE = false
            func application(_ pan: String, aid: String, product: String, priority: UInt8) -> CardApplication {
                var app = p.sibling(pan: pan, aid: aid, label: "VISA " + product.uppercased(), preferredName: "Visa " + product,
                                    priority: priority)
                    .replacingObjects(Tag(0x5F20), text: "VISA \(product.uppercased())/CARD")
                    .replacingObjects(Tag(0x9F6C), hex: "0000").applications[0]
                app.fciIssuerDiscretionaryData = []
                app.cardTransactionQualifiersWhenCVMRequired = [0x16, 0x00]
                return app
            }
            p.applications = [
                application("4000056655665556", aid: "A000000003101001", product: "Debit", priority: 2),
                application("4242424242424242", aid: "A000000003101002", product: "Credit", priority: 1),
            ]
        }
}
