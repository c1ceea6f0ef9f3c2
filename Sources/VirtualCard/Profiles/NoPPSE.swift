import BERTLV
import PaymentRules

// Built-in profile `no-ppse`: `mastercard-mchip` with its own PAN and ATC, and no PPSE.

extension CardProfiles {
    static let noPPSE = mastercardMChip.variant(
        name: "no-ppse",
        summary: "Mastercard M/Chip without a PPSE: SELECT PPSE answers 6A82, select by AID only",
        atc: 1, pan: PAN("5413330089030010")!)
        .changing { $0.hasPPSE = false }
}
