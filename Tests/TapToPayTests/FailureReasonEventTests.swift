import CardChannel
import Synchronization
import PaymentFlow
import TapToPay
import Testing
import VirtualCard

@Suite("PaymentEvent.failed: the cause the seed's error cannot carry")
struct FailureReasonEventTests {
    /// An unclear outcome, and what the `failed` event says of its cause.
    enum UnclearCause: String, CaseIterable, Sendable {
        /// The gateway's answer is lost: the connection dropped.
        case lostAnswer = "lost-answer"
        /// The card is torn before the submission point: it was removed.
        case tornBeforeSubmission = "torn"

        var said: String {
            switch self {
            case .lostAnswer: "connectionLost"
            case .tornBeforeSubmission: "the card was removed from the field"
            }
        }

        func configuration(_ h: Harness, onEvent: @escaping @Sendable (PaymentEvent) -> Void) -> TapToPay.Configuration {
            switch self {
            case .lostAnswer: h.configuration(fault: .lostAnswer, onEvent: onEvent)
            case .tornBeforeSubmission:
                h.configuration(source: virtualCard(CardProfiles.named("visa-qvsdc")!.withTear(afterExchange: 1)), onEvent: onEvent)
            }
        }
    }

    @Test("an unclear payment is outcomeUnknown, and the event says its cause: a lost answer that the connection dropped, a card torn before the submission point that it was removed",
          arguments: UnclearCause.allCases)
    func unclearCauseIsSaid(_ cause: UnclearCause) async throws {
        let h = try Harness()
        let events = Mutex<[PaymentEvent]>([])
        let tapToPay = try await h.prepared(cause.configuration(h) { e in events.withLock { $0.append(e) } })
        let orderId = "reason-\(cause.rawValue)"
        expectFailure(await pay(tapToPay, orderId: orderId), .outcomeUnknown(orderId: orderId))
        let reasons = events.withLock { $0 }.compactMap { e -> String? in
            if case .failed(let reason) = e { return reason } else { return nil }
        }
        #expect(reasons.count == 1)
        #expect(reasons.first?.contains(cause.said) == true, "\(reasons)")
    }

    @Test("a decline or a cancel says nothing more")
    func nothingMoreToSay() async throws {
        let h = try Harness()
        let events = Mutex<[PaymentEvent]>([])
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard("offline-decline"),
                                                            onEvent: { e in events.withLock { $0.append(e) } }))
        expectFailure(await pay(tapToPay, orderId: "reason-3"), .paymentFailed(code: .cardDeclined))
        #expect(!events.withLock { $0 }.contains { if case .failed = $0 { true } else { false } })
    }
}
