import BERTLV
import PaymentRules

// Built-in profile `visa-online-pin`: `visa-qvsdc` with its own PAN, ATC and cardholder name, a
// second record holding its CVM list (online PIN over 50.00 EUR) and the IACs, and a CTQ asking
// for online PIN when the reader requires a CVM.

extension CardProfiles {
    static let visaOnlinePIN = visaQVSDC.variant(
        name: "visa-online-pin",
        summary: "Visa qVSDC asking for online PIN when the reader requires a CVM (CTQ), CVM list: PIN over 50.00 EUR",
        atc: 64, pan: PAN("4111111111111111")!)
        .replacingObjects(Tag(0x5F20), text: "VISA PIN/CARD")
        .changing {
            $0.applications[0].afl = [0x18, 0x01, 0x02, 0x00]
            $0.applications[0].records.append(CardRecord(sfi: 3, number: 2, objects: [
                CardDataObject(Tag(0x8E), [0x00, 0x00, 0x13, 0x88, 0x00, 0x00, 0x00, 0x00, 0x42, 0x07, 0x1F, 0x06]),
                CardDataObject(Tag(0x9F0D), [0xB4, 0x50, 0x84, 0x00, 0x00]),
                CardDataObject(Tag(0x9F0E), [0x00, 0x00, 0x00, 0x00, 0x00]),
                CardDataObject(Tag(0x9F0F), [0xB4, 0x70, 0x84, 0x80, 0x00]),
            ]))
            $0.applications[0].cardTransactionQualifiersWhenCVMRequired = [0x96, 0x00]
        }
}
