import BERTLV
import PaymentRules

// Built-in profile `slow`: `visa-qvsdc` with its own PAN and ATC, and one behaviour.

extension CardProfiles {
    static let slow = visaQVSDC.variant(
        name: "slow",
        summary: "Visa qVSDC that spends 150 ms on every command (slept in real time, so reads take 0.6 s; tests run it on an injected clock)",
        atc: 3, pan: PAN("4761739001010085")!).withCardTime(.milliseconds(150))
}
