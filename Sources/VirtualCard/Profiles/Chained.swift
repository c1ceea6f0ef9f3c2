import BERTLV
import PaymentRules

// Built-in profile `chained`: `visa-qvsdc` with its own PAN and ATC, and one behaviour.

extension CardProfiles {
    static let chained = visaQVSDC.variant(
        name: "chained",
        summary: "Visa qVSDC as a T=0 card: answers through 61xx and GET RESPONSE, demands the exact Le (6Cxx)",
        atc: 5, pan: PAN("4761739001010044")!)
        .changing {
            $0.behaviour.answersThroughGetResponse = true
            $0.behaviour.demandsExactLe = true
        }
}
