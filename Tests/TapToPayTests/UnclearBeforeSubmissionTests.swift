import CardChannel
import DeviceStore
import Foundation
import PaymentGateway
import Synchronization
import PaymentFlow
import TapToPay
import Testing
import TestSupport
import VirtualCard
import Storage

// Seed 000, "Unclear outcome": "A card read error, a PIN entry error, or a lost reader session
// during the payment" and "A cancelled task" are `outcomeUnknown`, and "Why is a card read error an
// unclear outcome?": the SDK cannot tell a reader error before the request left from one after it,
// "so it throws outcomeUnknown for all of them". These are the ones before the submission point:
// the seed's error, nothing charged, a pending record for the app's recovery, and the truth
// (submitted: false) beside the error in the diagnostics.

extension Harness {
    /// An `outcomeUnknown` whose request never left: nothing in the ledger, one unanswered record
    /// of the attempt on the device (recovery's to resolve), and diagnostics that say so.
    func expectUnclearNotSubmitted(_ tapToPay: TapToPay, _ outcome: Outcome, orderId: String,
                                   sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(outcome.error == .outcomeUnknown(orderId: orderId), "expected outcomeUnknown, got \(outcome)",
                sourceLocation: sourceLocation)
        #expect(try await charges(orderId).isEmpty, "charged before the submission point", sourceLocation: sourceLocation)
        let records = try store.records(orderId: orderId)
        #expect(records.count == 1, "\(records.count) records for \(orderId)", sourceLocation: sourceLocation)
        #expect(records.first?.origin == .tapToPay && records.first?.answer == nil, sourceLocation: sourceLocation)
        #expect(try store.isOwned(try #require(records.first).attemptId) == false,
                "the record of an ended attempt is owned", sourceLocation: sourceLocation)
        let d = try #require(tapToPay.diagnostics(for: orderId), sourceLocation: sourceLocation)
        #expect(d.error == .outcomeUnknown(orderId: orderId) && !d.submitted && d.recordKept, "\(d)",
                sourceLocation: sourceLocation)
        #expect(tapToPay.lastAttempt == d, sourceLocation: sourceLocation)
        #expect(try await tapToPay.groundTruth(of: d) == GroundTruth(submitted: false, charged: false),
                sourceLocation: sourceLocation)
    }
}

@Suite("outcomeUnknown before the submission point (seed 000: the SDK cannot tell)")
struct UnclearBeforeSubmissionTests {
    /// Torn before the cryptogram was known (after PPSE, SELECT or during GPO): a lost reader
    /// session while the card is read. It was `readerNotReady` (the old mapping).
    @Test(arguments: 0..<qVSDCGPOExchange)
    func tornBeforeTheCryptogram(afterExchange n: Int) async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard(profile("visa-qvsdc").withTear(afterExchange: n))))
        let outcome = await pay(tapToPay, orderId: "tear-\(n)")
        try await h.expectUnclearNotSubmitted(tapToPay, outcome, orderId: "tear-\(n)")
        let d = try #require(tapToPay.lastAttempt)
        #expect(d.stage == .reading)
        #expect(d.cause?.contains("removed") == true, "\(d.cause ?? "nil")")
    }

    /// A mute card: the APDU deadline (2 s by default) runs out on the flow's clock. The built-in
    /// `mute` profile (no answer to GPO) likewise.
    @Test(arguments: [1, qVSDCGPOExchange - 1])
    func aMuteCardTimesOut(atExchange n: Int) async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard(profile("visa-qvsdc").withMute(atExchange: n))))
        let task = startPayment(tapToPay, orderId: "mute-\(n)")
        // The mute card and the APDU deadline both sleep on the clock.
        await h.flowClock.waitForSleepers(2)
        h.flowClock.advance(by: .seconds(2))
        try await h.expectUnclearNotSubmitted(tapToPay, await task.value, orderId: "mute-\(n)")
        #expect(tapToPay.lastAttempt?.cancellation == nil)
    }

    /// A card that breaks the protocol before the cryptogram (a truncated GPO template), and one
    /// whose application answers SELECT with a status the reader cannot go on from: card read
    /// errors. They were `paymentFailed(.unknown)`.
    @Test(arguments: [("visa-qvsdc", [UInt8]([0x80, 0xA8]), [UInt8]([0x77, 0x05, 0x01, 0x02, 0x90, 0x00])),
                      ("mastercard-mchip", [0x00, 0xA4], [0x6A, 0x82])])
    func aCardReadError(card: String, command: [UInt8], response: [UInt8]) async throws {
        let h = try Harness()
        let source = virtualCard(profile(card).withScriptedResponse(commandPrefix: command, response: response))
        let tapToPay = try await h.prepared(h.configuration(source: source))
        try await h.expectUnclearNotSubmitted(tapToPay, await pay(tapToPay, orderId: "proto-\(card)"), orderId: "proto-\(card)")
    }

    /// PIN entry errors (online PIN cards never submit early: the PIN comes before the request).
    /// They were `cancelled` (cardholder cancels) and `paymentFailed(.unknown)` (the pad fails).
    @Test(arguments: [ScriptedPINProvider.Answer.cancel, .fail])
    func aPINEntryError(answer: ScriptedPINProvider.Answer) async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard("visa-online-pin"), pin: ScriptedPINProvider(answer)))
        let outcome = await pay(tapToPay, amount: 7500, orderId: "pin-x")
        try await h.expectUnclearNotSubmitted(tapToPay, outcome, orderId: "pin-x")
        // The card was read whole: its record carries the card (masked), for recovery's matching.
        let record = try #require(try h.store.get(orderId: "pin-x"))
        #expect(record.last4 != nil && record.maskedPAN?.contains("*") == true)
        #expect(tapToPay.lastAttempt?.cause?.contains("PIN") == true)
    }

    /// No PIN within the PIN-entry timeout (30 s). It was `readerNotReady`.
    @Test func pinEntryTimesOut() async throws {
        let h = try Harness()
        let pin = SilentPINProvider()
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard("visa-online-pin"), pin: pin))
        let task = startPayment(tapToPay, amount: 7500, orderId: "pin-timeout")
        await pin.asked.wait()
        await h.flowClock.waitForSleepers(1)
        h.flowClock.advance(by: .seconds(29))
        #expect(h.flowClock.sleeperCount == 1)
        h.flowClock.advance(by: .seconds(1))
        try await h.expectUnclearNotSubmitted(tapToPay, await task.value, orderId: "pin-timeout")
    }

    /// A cancelled task is `outcomeUnknown` wherever it stops the payment — while the reader waits
    /// for a card, while the terms are shown — not `cancelled` (which is the user's cancel).
    @Test func aCancelledTaskWhileWaitingForACard() async throws {
        let h = try Harness()
        let (tapToPay, task) = try await h.paymentWaiting(.forACard, orderId: "cx-task-1")
        task.cancel()
        try await h.expectUnclearNotSubmitted(tapToPay, await task.value, orderId: "cx-task-1")
        let d = try #require(tapToPay.lastAttempt)
        #expect(d.cancellation == .task && d.stage == .waitingForCard && d.maskedPAN == nil)
        // No card was read: the record has none.
        #expect(try h.store.get(orderId: "cx-task-1")?.last4 == nil)
    }

    @Test func aCancelledTaskWhileTheTermsAreShown() async throws {
        let h = try Harness()
        let terms = SilentTermsProvider()
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = try await h.prepared(h.configuration(source: source, terms: terms))
        let task = startPayment(tapToPay, orderId: "cx-task-2")
        await terms.asked.wait()
        task.cancel()
        try await h.expectUnclearNotSubmitted(tapToPay, await task.value, orderId: "cx-task-2")
        #expect(tapToPay.lastAttempt?.stage == .beforeCard)
        #expect(source.calls.count == 0)
    }

    /// The user's cancel or a cancelled task once the card was read (M/Chip: nothing leaves before
    /// the read ends), or once the record was written: `outcomeUnknown`. They were `cancelled`.
    @Test(arguments: [FlowCheckpoint.cardRead, .pendingWritten], [false, true])
    func cancelledOnceTheCardIsRead(at point: FlowCheckpoint, explicit: Bool) async throws {
        let h = try Harness()
        let reached = OneShotEvent()
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard("mastercard-mchip"), checkpoint: { p in
            if p == point {
                reached.fire()
                await suspendUntilCancelled()
            }
        }))
        let task = startPayment(tapToPay, orderId: "cx-3")
        await reached.wait()
        if explicit { tapToPay.cancel() } else { task.cancel() }
        try await h.expectUnclearNotSubmitted(tapToPay, await task.value, orderId: "cx-3")
        #expect(tapToPay.lastAttempt?.cancellation == (explicit ? .user : .task))
        #expect(tapToPay.lastAttempt?.maskedPAN?.hasSuffix("0434") == true)
    }

    /// What the app's recovery meets (DESIGN "The device's pending store"): the record of an
    /// unclear attempt that never left is resolved like any other — the charges query finds no
    /// payment, so it stays (seed 000 step 4: that does not prove the card was not charged) until a
    /// person closes it; nothing is ever charged by it; the order can be paid again, and that
    /// sale's hand-over takes the stale record with it.
    @Test func recoveryOfAnUnsentAttempt() async throws {
        let h = try Harness()
        // A fresh torn card for each (a virtual card tears once).
        let tornCard = profile("mastercard-mchip").withTear(afterExchange: 2)
        var torn = try await h.prepared(h.configuration(source: virtualCard(tornCard)))
        try await h.expectUnclearNotSubmitted(torn, await pay(torn, amount: 1250, orderId: "rec-1"), orderId: "rec-1")
        torn = try await h.prepared(h.configuration(source: virtualCard(tornCard)))
        try await h.expectUnclearNotSubmitted(torn, await pay(torn, amount: 1250, orderId: "rec-2"), orderId: "rec-2")

        let reports = try await torn.resolveUnclearOutcomes()
        #expect(reports.map(\.pending.orderId).sorted() == ["rec-1", "rec-2"])
        for report in reports {
            guard case .notFound = report.finding else { Issue.record("\(report.finding)"); continue }
            #expect(!report.removedFromStore)
        }
        #expect(try await h.charges("rec-1").isEmpty)
        #expect(try await h.charges("rec-2").isEmpty)

        // Support confirmed no charge: closed deliberately, kept as an audit entry.
        let closed = try h.store.close(orderId: "rec-1", reason: "support: not charged")
        #expect(closed.state == .closed)
        #expect(try h.store.get(orderId: "rec-1") == nil)

        // rec-2 is paid again with a good card (what the seed's step 4 allows after support).
        let again = try await h.prepared(h.configuration(source: virtualCard("mastercard-mchip")))
        let result = try #require(await pay(again, amount: 1250, orderId: "rec-2").result)
        #expect(result.status == .approved)
        #expect(try await h.charges("rec-2").map(\.paymentId) == [result.paymentId])
        #expect(try h.store.records(orderId: "rec-2").isEmpty, "the unsent attempt's record outlived the order's sale")
        #expect(try await again.resolveUnclearOutcomes().isEmpty)
    }

    /// The device's disk refuses the record of an unclear attempt that never left: the app is still
    /// told `outcomeUnknown` (never a typed failure: the SDK cannot tell), the diagnostics say the
    /// record is missing and why, and the observer is warned.
    @Test func theRecordCannotBeWritten() async throws {
        let h = try Harness()
        let events = Mutex<[PaymentEvent]>([])
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard(profile("visa-qvsdc").withTear(afterExchange: 1)),
                                                            onEvent: { e in events.withLock { $0.append(e) } }))
        let db = try SQLiteConnection(path: h.store.path, busyTimeout: .seconds(5))
        try db.execute("CREATE TRIGGER refuse BEFORE INSERT ON attempts BEGIN SELECT RAISE(ABORT, 'disk full'); END;")
        expectFailure(await pay(tapToPay, orderId: "nowrite-1"), .outcomeUnknown(orderId: "nowrite-1"))
        let d = try #require(tapToPay.lastAttempt)
        #expect(!d.recordKept && d.recordError?.contains("disk full") == true, "\(d)")
        #expect(try h.store.get(orderId: "nowrite-1") == nil)
        #expect(events.withLock { $0 }.contains { if case .recordKept(let r) = $0 { r.contains("nowrite-1") } else { false } })
        #expect(try await h.charges("nowrite-1").isEmpty)
    }
}

@Suite("Diagnostics beside the seed's error: submitted and charged")
struct DiagnosticsTests {
    /// After the submission point the ledger is the truth: a lost answer was charged, no answer
    /// was not; both are the same `outcomeUnknown` for the app.
    @Test(arguments: [(GatewayFault.lostAnswer, true), (.noAnswer, false), (.serverError, false)])
    func unclearAfterTheSubmissionPoint(fault: GatewayFault, charged: Bool) async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration(source: virtualCard("mastercard-mchip"), fault: fault))
        let outcome = await driving(h.gatewayClock, by: Harness.gatewayTimeout) { await pay(tapToPay, orderId: "gt-1") }
        expectFailure(outcome, .outcomeUnknown(orderId: "gt-1"))
        let d = try #require(tapToPay.diagnostics(for: "gt-1"))
        #expect(d.submitted && d.stage == .submitted && d.recordKept && d.maskedPAN?.hasSuffix("0434") == true)
        #expect(try await tapToPay.groundTruth(of: d) == GroundTruth(submitted: true, charged: charged))
        #expect(try await h.charges("gt-1").filter { $0.status == .approved }.count == (charged ? 1 : 0))
    }

    /// A clear answer: charged exactly when approved; an offline decline submitted nothing.
    @Test func results() async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration())
        #expect(try #require(await pay(tapToPay, amount: 1250, orderId: "gt-ok").result).status == .approved)
        #expect(try #require(await pay(tapToPay, amount: 1051, orderId: "gt-no").result).status == .declined)
        for (order, charged) in [("gt-ok", true), ("gt-no", false)] {
            let d = try #require(tapToPay.diagnostics(for: order))
            #expect(d.error == nil && d.result?.orderId == order && d.submitted && !d.recordKept)
            #expect(try await tapToPay.groundTruth(of: d) == GroundTruth(submitted: true, charged: charged))
        }
        let declining = try await h.prepared(h.configuration(source: virtualCard("offline-decline")))
        expectFailure(await pay(declining, orderId: "gt-aac"), .paymentFailed(code: .cardDeclined))
        let d = try #require(declining.lastAttempt)
        #expect(d.stage == .reading && !d.recordKept && d.cause == nil)
        #expect(try await declining.groundTruth(of: d) == GroundTruth(submitted: false, charged: false))
    }

    /// The same order id charged by another attempt (another amount) is not this attempt's charge.
    @Test func anotherAttemptsChargeIsNotThisOnes() async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration())
        _ = try #require(await pay(tapToPay, amount: 1000, orderId: "gt-2").result)
        expectFailure(await pay(tapToPay, amount: 2000, orderId: "gt-2"), .outcomeUnknown(orderId: "gt-2"))
        let d = try #require(tapToPay.diagnostics(for: "gt-2"))
        #expect(d.submitted)
        #expect(try await tapToPay.groundTruth(of: d) == GroundTruth(submitted: true, charged: false))
    }

    /// Refused before anything ran: diagnostics too, and `busy` never replaces the running one's.
    @Test func refusalsAndBusy() async throws {
        let h = try Harness()
        let reader = EmptyReaderSource()
        let tapToPay = try await h.prepared(h.configuration(source: reader))
        expectFailure(await pay(tapToPay, amount: 0, orderId: "gt-arg"), .invalidArgument)
        #expect(tapToPay.lastAttempt?.error == .invalidArgument && tapToPay.lastAttempt?.cause != nil)
        let first = startPayment(tapToPay, orderId: "gt-run")
        await reader.waiting.wait()
        expectFailure(await pay(tapToPay, orderId: "gt-run"), .busy)
        #expect(tapToPay.diagnostics(for: "gt-run") == nil)
        tapToPay.cancel()
        expectFailure(await first.value, .cancelled)
        let d = try #require(tapToPay.diagnostics(for: "gt-run"))
        #expect(d.error == .cancelled && d.cancellation == .user && d.stage == .waitingForCard && !d.recordKept)
        #expect(try h.store.get(orderId: "gt-run") == nil)
    }
}
