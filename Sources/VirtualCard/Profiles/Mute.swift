import BERTLV
import PaymentRules

// Built-in profile `mute`: `visa-qvsdc` with its own PAN and ATC, and one behaviour.

extension CardProfiles {
    static let mute = visaQVSDC.variant(
        name: "mute",
        summary: "Visa qVSDC that never answers GET PROCESSING OPTIONS (exchange 3)",
        atc: 8, pan: PAN("4761739001010069")!).withMute(atExchange: 3)
}
