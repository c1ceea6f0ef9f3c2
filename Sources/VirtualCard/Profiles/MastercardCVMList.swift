import BERTLV
import PaymentRules

// Built-in profile `mastercard-cvm-list`: `maestro`'s personalisation under Mastercard's AID, with
// its own PAN, ATC, issuer key and cardholder name, a 9F6C that is its mag-stripe application
// version (0001) in the first record, and a CVM list: no CVM under 50.00 EUR, online PIN over it.

extension CardProfiles {
    static let mastercardCVMList = maestro.variant(
        name: "mastercard-cvm-list",
        summary: "Mastercard (C-2) whose 9F6C is its mag-stripe application version 0001, CVM list: no CVM under 50.00 EUR, online PIN over it",
        atc: 12, pan: PAN("5555555555554444")!)
        .relabelling(aid: "A0000000041010", label: "MASTERCARD", preferredName: "Mastercard")
        .issued(masterKey: "2B7E151628AED2A6ABF7158809CF4F3C")
        .replacingObjects(Tag(0x5F20), text: "MASTERCARD CVM/LIST")
        .replacingObjects(Tag(0x8E), hex: "00001388000000001F0602071F03")
        .changing { $0.applications[0].records[0].objects.append(CardDataObject(Tag(0x9F6C), [0x00, 0x01])) }
}
