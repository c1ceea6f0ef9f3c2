import BERTLV
import PaymentRules

// Built-in profile `visa-cdcvm`: `visa-qvsdc` on a phone — its own PAN, ATC and cardholder name,
// and a CTQ (9F6C) that says the consumer device CVM was performed.

extension CardProfiles {
    static let visaCDCVM = visaQVSDC.variant(
        name: "visa-cdcvm",
        summary: "Visa qVSDC on a phone: the CTQ says the consumer device CVM was performed (no PIN above the limit)",
        atc: 230, pan: PAN("4761739001010150")!)
        .replacingObjects(Tag(0x9F6C), hex: "0080")
        .replacingObjects(Tag(0x5F20), text: "VISA MOBILE/CARD")
}
