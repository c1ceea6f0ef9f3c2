import CardChannel
import Foundation
import PaymentGateway
import TapToPay
import Testing
import VirtualCard
import Timing

// The seed's failure codes (`paymentFailed(code:)`), its unclear outcome (`outcomeUnknown`, for
// each cause the seed lists), and "declined payments are not errors". Every timeout runs on a
// ManualClock: the flow's for card, APDU, PIN and location waits, the gateway's for its answer.

/// Visa qVSDC's exchanges: SELECT PPSE, SELECT AID, GPO (the cryptogram: the authorisation
/// leaves early, here), READ RECORD.
let qVSDCGPOExchange = 3

@Suite("Failure code: cardDeclined")
struct CardDeclinedTests {
    @Test func theCardDeclinesOffline() async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard("offline-decline")))
        expectFailure(await pay(tapToPay, orderId: "aac-1"), .paymentFailed(code: .cardDeclined))
        try await h.expectNoPayment("aac-1")
    }
}

/// `readerNotReady` is a reader session that was not ready *before reading began*: the card source
/// could not give a card (no card within the presentation timeout, the reader failed or went away
/// while waiting). Once a card is being read, a reader fault is an unclear outcome
/// (``UnclearBeforeSubmissionTests``).
@Suite("Failure code: readerNotReady")
struct ReaderNotReadyTests {
    /// No card within the presentation timeout (30 s by default) on the flow's clock.
    @Test func noCardInTime() async throws {
        let h = try Harness()
        let (tapToPay, task) = try await h.paymentWaiting(.forACard, orderId: "nocard-1")
        await h.flowClock.waitForSleepers(1)
        h.flowClock.advance(by: .seconds(29))
        // The source's own wait and the flow's guard deadline sleep; both end when either fires.
        #expect(h.flowClock.sleeperCount >= 1, "the presentation timeout must not run out before 30 s")
        h.flowClock.advance(by: .seconds(1))
        expectFailure(await task.value, .paymentFailed(code: .readerNotReady))
        try await h.expectNoPayment("nocard-1")
    }

    @Test func theReaderFailsBeforeTheCardIsRead() async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration(source: BrokenReaderSource()))
        expectFailure(await pay(tapToPay, orderId: "reader-1"), .paymentFailed(code: .readerNotReady))
        try await h.expectNoPayment("reader-1")
    }
}

@Suite("Failure code: locationTimeout")
struct LocationTimeoutTests {
    /// `prepare` in a task of its own, its typed error as the value (nil: prepared).
    static func startPrepare(_ tapToPay: TapToPay, token: String) -> Task<TapToPayError?, Never> {
        Task { () -> TapToPayError? in
            do throws(TapToPayError) {
                try await tapToPay.prepare(token: token)
                return nil
            } catch {
                return error
            }
        }
    }

    /// An API whose `prepare` (started in a task of its own) waits for a location fix that never
    /// comes, once the fix's timeout sleeps on the flow's clock.
    static func prepareAwaitingAFix(_ h: Harness) async -> (tapToPay: TapToPay, prepare: Task<TapToPayError?, Never>) {
        let location = SilentLocationProvider()
        let tapToPay = TapToPay(configuration: h.configuration(location: location))
        let task = startPrepare(tapToPay, token: h.token())
        await location.asked.wait()
        await h.flowClock.waitForSleepers(1)
        return (tapToPay, task)
    }

    /// No fix within 15 s (the seed's figure, the default) on the flow's clock.
    @Test func prepareGetsNoFixIn15Seconds() async throws {
        let h = try Harness()
        let (tapToPay, task) = await Self.prepareAwaitingAFix(h)
        h.flowClock.advance(by: .seconds(14))
        #expect(h.flowClock.sleeperCount == 1, "the location timeout must not run out before 15 s")
        h.flowClock.advance(by: .seconds(1))
        #expect(await task.value == .paymentFailed(code: .locationTimeout))
        // The token was valid and is kept: the next call tries the location again.
        #expect(tapToPay.isPrepared)
    }

    /// Issue 12: the user cancels while the fix is awaited (Ctrl-C during `pay --location
    /// no-fix`): that is `cancelled`, not `locationTimeout`.
    @Test func cancellingWhileTheFixIsAwaitedIsCancelled() async throws {
        let h = try Harness()
        let (_, task) = await Self.prepareAwaitingAFix(h)
        h.flowClock.advance(by: .seconds(1))
        task.cancel()
        #expect(await task.value == .cancelled)
    }

    /// Location taken back and given again, but no fix comes: `acceptPayment` waits 15 s for it.
    @Test func acceptPaymentGetsNoFixIn15Seconds() async throws {
        let h = try Harness()
        let location = SwitchableLocationProvider(.authorized)
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = try await h.prepared(h.configuration(source: source, location: location))
        location.set(.denied)
        expectFailure(await pay(tapToPay, orderId: "fix-1"), .locationDenied)
        location.set(.authorized, hasFix: false)
        let task = startPayment(tapToPay, orderId: "fix-2")
        await h.flowClock.waitForSleepers(1)
        h.flowClock.advance(by: .seconds(15))
        expectFailure(await task.value, .paymentFailed(code: .locationTimeout))
        #expect(source.calls.count == 0)
        try await h.expectNoPayment("fix-1")
        try await h.expectNoPayment("fix-2")
    }
}

@Suite("Failure code: unknown")
struct UnknownFailureTests {
    /// The gateway cannot be reached before anything is sent: the payment did not start.
    @Test(arguments: [GatewayOperation.checkSDKVersion, .validateToken])
    func prepareCannotReachTheGateway(operation: GatewayOperation) async throws {
        let h = try Harness()
        h.gateway.armFault(.serverError, for: operation)
        let tapToPay = TapToPay(configuration: h.configuration())
        await #expect(throws: TapToPayError.paymentFailed(code: .unknown)) { try await tapToPay.prepare(token: h.token()) }
        #expect(!tapToPay.isPrepared)
    }
    // acceptPayment's own: a currency the terminal cannot take (RecoveryContainmentTests,
    // TerminalCurrencyTests): the payment does not start.
}

@Suite("outcomeUnknown: a connection or server error at a step before the card")
struct UnclearBeforeTheCardTests {
    /// Seed 000: "A connection or server error at any step of the payment" is an unclear outcome
    /// — the SDK version and terms checks of acceptPayment too, though nothing was sent (it was
    /// `paymentFailed(.unknown)`). The truth beside it: not submitted, not charged, a record kept.
    @Test(arguments: [GatewayOperation.checkSDKVersion, .terms], [GatewayFault.serverError, .noAnswer])
    func acceptPaymentCannotReachTheGatewayBeforeTheCard(operation: GatewayOperation, fault: GatewayFault) async throws {
        let h = try Harness()
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = try await h.prepared(h.configuration(source: source))
        h.gateway.armFault(fault, for: operation)
        let outcome = await driving(h.gatewayClock, by: Harness.gatewayTimeout) {
            await pay(tapToPay, orderId: "gw-1")
        }
        #expect(source.calls.count == 0)
        try await h.expectUnclearNotSubmitted(tapToPay, outcome, orderId: "gw-1")
        #expect(tapToPay.lastAttempt?.stage == .beforeCard)
        #expect(tapToPay.lastAttempt?.cause?.contains("nothing was sent") == true, "\(tapToPay.lastAttempt?.cause ?? "nil")")
    }
}

@Suite("outcomeUnknown: every cause the seed lists")
struct OutcomeUnknownTests {
    enum Cause: String, CaseIterable, Sendable {
        case noAnswer, lostAnswer, serverError, slowBeyondTimeout
        var fault: GatewayFault {
            switch self {
            case .noAnswer: .noAnswer
            case .lostAnswer: .lostAnswer
            case .serverError: .serverError
            case .slowBeyondTimeout: .slow(.seconds(45))
            }
        }
        /// Whether the gateway records the sale before the fault.
        var records: Bool { self == .lostAnswer || self == .slowBeyondTimeout }
    }

    /// A connection or server error at the authorisation: `outcomeUnknown`, the pending record
    /// stays for resolution, and the ledger holds the sale exactly when the gateway recorded it.
    @Test(arguments: Cause.allCases, ["visa-qvsdc", "mastercard-mchip"])
    func theGatewayDoesNotAnswerClearly(cause: Cause, card: String) async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard(card), fault: cause.fault))
        let outcome = await driving(h.gatewayClock, by: Harness.gatewayTimeout) {
            await pay(tapToPay, orderId: "ou-1")
        }
        expectFailure(outcome, .outcomeUnknown(orderId: "ou-1"))
        #expect(try await h.charges("ou-1").count == (cause.records ? 1 : 0))
        #expect(try h.store.get(orderId: "ou-1") != nil, "the pending record must stay until resolved")
    }

    /// The same through the gateway's amount triggers (91 no answer, 92 approved then lost, 94
    /// server error, 95 declined then lost): a lost decline is still unclear, never a decline.
    @Test(arguments: [(1091, 0), (1092, 1), (1094, 0), (1095, 1)])
    func amountTriggers(amount: Int, charges: Int) async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration())
        let outcome = await driving(h.gatewayClock, by: Harness.gatewayTimeout) {
            await pay(tapToPay, amount: amount, orderId: "trig-\(amount)")
        }
        expectFailure(outcome, .outcomeUnknown(orderId: "trig-\(amount)"))
        #expect(try await h.charges("trig-\(amount)").count == charges)
    }

    /// A slow answer within the timeout is just an answer.
    @Test func aSlowAnswerWithinTheTimeout() async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration(fault: .slow(.seconds(10))))
        let outcome = await driving(h.gatewayClock, by: .seconds(10)) { await pay(tapToPay, orderId: "slow-ok") }
        #expect(outcome.result?.status == .approved, "\(outcome)")
        #expect(try h.store.get(orderId: "slow-ok") == nil)
    }

    /// qVSDC: the authorisation left with the GPO answer; the card is torn while the records are
    /// read. The gateway approved, but the SDK cannot tell: `outcomeUnknown`, never the approval.
    @Test(arguments: [GatewayFault.none, .noAnswer, .lostAnswer, .serverError])
    func cardTornAfterEarlySubmission(fault: GatewayFault) async throws {
        let h = try Harness()
        let card = profile("visa-qvsdc").withTear(afterExchange: qVSDCGPOExchange)
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard(card), fault: fault))
        let outcome = await driving(h.gatewayClock, by: Harness.gatewayTimeout) { await pay(tapToPay, orderId: "torn-1") }
        expectFailure(outcome, .outcomeUnknown(orderId: "torn-1"))
        let recorded = fault == GatewayFault.none || fault == .lostAnswer
        #expect(try await h.charges("torn-1").count == (recorded ? 1 : 0))
        #expect(try h.store.get(orderId: "torn-1") != nil)
    }

    /// The same for a mute card after early submission: the APDU deadline runs out.
    @Test func cardMuteAfterEarlySubmission() async throws {
        let h = try Harness()
        let card = profile("visa-qvsdc").withMute(atExchange: qVSDCGPOExchange + 1)
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard(card)))
        let task = startPayment(tapToPay, orderId: "mute-2")
        await h.flowClock.waitForSleepers(2)
        h.flowClock.advance(by: .seconds(2))
        expectFailure(await task.value, .outcomeUnknown(orderId: "mute-2"))
        #expect(try await h.charges("mute-2").count == 1)
    }

    /// A card that breaks the protocol after the early submission (a garbled READ RECORD answer).
    @Test func cardBreaksTheProtocolAfterEarlySubmission() async throws {
        let h = try Harness()
        let card = profile("visa-qvsdc").withScriptedResponse(commandPrefix: [0x00, 0xB2],
                                                              response: [0x70, 0x09, 0x5A, 0x02, 0x90, 0x00])
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard(card)))
        expectFailure(await pay(tapToPay, orderId: "proto-3"), .outcomeUnknown(orderId: "proto-3"))
        #expect(try await h.charges("proto-3").count == 1)
    }

    /// The task is cancelled while the answer is awaited (the request was recorded, or it never
    /// arrived): `outcomeUnknown`, not `cancelled`.
    @Test(arguments: [GatewayFault.slow(.seconds(45)), .noAnswer], [false, true])
    func cancelledAfterSubmission(fault: GatewayFault, explicit: Bool) async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard("mastercard-mchip"), fault: fault))
        let task = startPayment(tapToPay, orderId: "cx-after")
        await h.gatewayClock.waitForSleepers(1)
        if explicit { tapToPay.cancel() } else { task.cancel() }
        expectFailure(await task.value, .outcomeUnknown(orderId: "cx-after"))
        #expect(try await h.charges("cx-after").count == (fault == .noAnswer ? 0 : 1))
        #expect(try h.store.get(orderId: "cx-after") != nil)
    }

    /// A reply that is not a clear approval or decline: the gateway refuses the order (it holds
    /// it already for another amount). Unclear, and nothing is charged again.
    @Test func aRefusalAfterSubmission() async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration())
        let first = try #require(await pay(tapToPay, amount: 1000, orderId: "conflict-1").result)
        expectFailure(await pay(tapToPay, amount: 2000, orderId: "conflict-1"), .outcomeUnknown(orderId: "conflict-1"))
        let charges = try await h.charges("conflict-1")
        #expect(charges.map(\.paymentId) == [first.paymentId])
    }
}

@Suite("Results: approved, and declines that are not errors")
struct ResultTests {
    @Test func approved() async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration())
        let result = try #require(await pay(tapToPay, amount: 1250, orderId: "order-1042").result)
        #expect(result.status == .approved)
        #expect(result.orderId == "order-1042")
        #expect(result.cardBrand == "visa")
        #expect(result.last4 == "0010")
        let charges = try await h.charges("order-1042")
        #expect(charges.count == 1)
        #expect(charges.first?.paymentId == result.paymentId)
        #expect(charges.first?.status == .approved)
        #expect(charges.first?.amount == 1250)
        #expect(try h.store.get(orderId: "order-1042") == nil, "a clear answer resolves the pending record")
    }

    /// With online PIN: the PIN pad is asked with the amount and the masked PAN only.
    @Test func approvedWithOnlinePIN() async throws {
        let h = try Harness()
        let pin = RecordingPINProvider(testPIN)
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard("visa-online-pin"), pin: pin))
        let result = try #require(await pay(tapToPay, amount: 7500, orderId: "pin-ok").result)
        #expect(result.status == .approved)
        let requests = pin.requests.withLock { $0 }
        #expect(requests.count == 1)
        #expect(requests.first?.amount == 7500)
        #expect(requests.first?.maskedPAN.contains("4111111111111111") == false)
        #expect(try await h.charges("pin-ok").count == 1)
    }

    static let declines: [(amount: Int, code: String, message: String)] = [
        (1051, "51", "Insufficient funds"), (1052, "54", "Expired card"), (1053, "41", "Lost card, pick up"),
        (1054, "05", "Do not honour"), (1055, "43", "Stolen card, pick up"),
    ]

    /// "Declined payments are not errors": a result with `.declined`, the reason in
    /// `statusMessage`, and the payment in the gateway with its `paymentId`.
    @Test(arguments: declines)
    func declinedIsAResult(amount: Int, code: String, message: String) async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration())
        let result = try #require(await pay(tapToPay, amount: amount, orderId: "decl-\(amount)").result)
        #expect(result.status == .declined)
        #expect(result.statusMessage == message)
        let charges = try await h.charges("decl-\(amount)")
        #expect(charges.count == 1)
        #expect(charges.first?.paymentId == result.paymentId)
        #expect(charges.first?.status == .declined)
        #expect(charges.first?.statusCode == code)
        #expect(try h.store.get(orderId: "decl-\(amount)") == nil)
    }
}
