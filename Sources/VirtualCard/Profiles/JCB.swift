import BERTLV
import PaymentRules

// Built-in profile `jcb`: `maestro`'s personalisation under JCB's AID and kernel (C-5), with its
// own PAN, ATC, issuer key and application data, cardholder name, and a CVM list of online PIN,
// signature and no CVM.

extension CardProfiles {
    static let jcb = maestro.variant(
        name: "jcb",
        summary: "JCB (C-5): CVM list online PIN, signature, no CVM, each if the reader offers it (9F6C is not CTQ under C-5)",
        atc: 21, pan: PAN("3566002020360505")!)
        .relabelling(aid: "A0000000651010", label: "JCB", preferredName: "JCB", kernel: "05")
        .issued(masterKey: "15162B7ED2A6AE28F7ABF7153C094FCF", issuerApplicationData: "0105A0400000000000")
        .replacingObjects(Tag(0x5F20), text: "JCB TEST/CARD")
        .replacingObjects(Tag(0x8E), hex: "000000000000000042031E031F03")
}
