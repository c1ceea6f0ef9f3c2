import CardChannel
import Synchronization
import PaymentFlow
import Testing
import VirtualCard

@Suite("PaymentEvent.failed: the cause the seed's error cannot carry")
struct FailureReasonEventTests {
    @Test("a lost answer is outcomeUnknown, and the event says the connection dropped")
    func lostAnswer() async throws {
        let h = try Harness()
        let events = Mutex<[PaymentEvent]>([])
        let tapToPay = try await h.prepared(h.configuration(fault: .lostAnswer, onEvent: { e in events.withLock { $0.append(e) } }))
        expectFailure(await pay(tapToPay, orderId: "reason-1"), .outcomeUnknown(orderId: "reason-1"))
        let reasons = events.withLock { $0 }.compactMap { e -> String? in
            if case .failed(let reason) = e { return reason } else { return nil }
        }
        #expect(reasons.count == 1)
        #expect(reasons.first?.contains("connectionLost") == true)
    }

    @Test("a card torn before the submission point is outcomeUnknown, and the event says it was removed")
    func tornBeforeSubmission() async throws {
        let h = try Harness()
        let events = Mutex<[PaymentEvent]>([])
        let card = virtualCard(CardProfiles.named("visa-qvsdc")!.withTear(afterExchange: 1))
        let tapToPay = try await h.prepared(h.configuration(source: card, onEvent: { e in events.withLock { $0.append(e) } }))
        expectFailure(await pay(tapToPay, orderId: "reason-2"), .outcomeUnknown(orderId: "reason-2"))
        let reasons = events.withLock { $0 }.compactMap { e -> String? in
            if case .failed(let reason) = e { return reason } else { return nil }
        }
        #expect(reasons.count == 1)
        // The message says the card was removed.
        #expect(reasons.first?.contains("the card was removed from the field") == true)
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
