import BERTLV
import PaymentRules

// Built-in profile `torn`: `visa-qvsdc` with its own PAN and ATC, and one behaviour.

extension CardProfiles {
    static let torn = visaQVSDC.variant(
        name: "torn",
        summary: "Visa qVSDC torn from the field after the GPO answer (exchange 3): READ RECORD never answers",
        atc: 20, pan: PAN("4761739001010028")!).withTear(afterExchange: 3)
}
