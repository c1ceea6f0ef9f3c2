import DeviceStore
import Foundation
import PaymentGateway
import CoreAPI
import PaymentFlow
import TapToPay
import TestSupport
import VirtualCard
import Testing
#if canImport(Glibc)
import Glibc
import Storage
#endif

// A hostile review of the device side of a payment, one test per defect: a recovery that acted
// on an order a live sale of another process was paying, and a recovery that one record's lease
// stopped after it had already acted on others.

/// A new directory and an order id (`name` and a random suffix) whose CoreAPI sale ended by
/// `interruption` — by default unclear without reaching the gateway —, its record left on the device.
private func interruptedOrder(_ name: String, _ interruption: CoreAPIRecoveryTests.Interruption = .neverArrived)
    async throws -> (dir: TempDir, orderId: String) {
    let dir = TempDir()
    let orderId = coreOrderId(name)
    _ = try await CoreAPIRecoveryTests.interruptedSale(interruption, dir: dir, orderId: orderId)
    return (dir, orderId)
}

/// What a recovery must leave of an order whose approval the app was given: no report of a
/// reversal, no reversal in the ledger, and the order's one sale approved; with `device`, no
/// record of the order left in that store.
private func expectTheApprovalStands(_ reports: [PendingSaleReport], ledger: any LedgerStore, device: PendingPaymentStore? = nil,
                                     orderId: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(!reports.contains { if case .reversed = $0.outcome { true } else { false } }, "\(reports.map(\.outcome))",
            sourceLocation: sourceLocation)
    let rows = try ledger.allPayments().filter { $0.orderId == orderId }
    #expect(rows.filter { $0.kind == .reversal }.isEmpty, "the recovery reversed a sale whose approval the app was given",
            sourceLocation: sourceLocation)
    #expect(rows.map(\.state) == [.approved], "\(rows.map { ($0.kind, $0.state) })", sourceLocation: sourceLocation)
    if let device {
        #expect(try device.records(orderId: orderId).isEmpty, "records of the order stayed", sourceLocation: sourceLocation)
    }
}

/// A MONEI-style payment of 12.50 in `currency` does not start: `paymentFailed(unknown)`, no
/// payment, no record.
private func expectNoStart(currency: String, orderId: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let h = try Harness()
    var config = h.configuration()
    config.currency = currency
    let t = try await h.prepared(config)
    expectFailure(await pay(t, amount: 1250, orderId: orderId), .paymentFailed(code: .unknown), sourceLocation: sourceLocation)
    try await h.expectNoPayment(orderId, sourceLocation: sourceLocation)
}

/// A CoreAPI sale of 12.50 in `currency`, the terminal and the reader set for it, ends in
/// onError(terminalSettings) with nothing on the device or in the ledger.
private func expectTerminalSettings(currency: String, orderId: String,
                                    sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let dir = TempDir()
    let rig = try await CoreRig.make(dir) { $0.currency = currency }
    let outcome = await rig.core.processSale(CoreSale(amount: 1250, currency: currency, orderId: orderId))
    #expect(coreErrorCode(outcome) == .terminalSettings, "\(outcome)", sourceLocation: sourceLocation)
    #expect(try rig.store.all().isEmpty, sourceLocation: sourceLocation)
    #expect(try rig.ledgerRows(orderId: orderId).isEmpty, sourceLocation: sourceLocation)
}

@Suite("Recovery beside a retry of the same sale")
struct RecoveryBesideARetryTests {
    /// A sale ended unclear (it never reached the gateway); the same sale — order, amount, card —
    /// runs again in another process before the first was resolved, and `tapemu resolve` runs
    /// beside it. The earlier attempt's look-up finds the live attempt's sale (the gateway holds
    /// one sale per order id, so it matches), and the recovery reversed it: the live sale then
    /// reported approved a sale that was reversed. While an attempt of the order is live, the
    /// order is left alone.
    @Test(arguments: SeedVariant.allCases)
    func aLiveRetryOfTheOrderIsNotReversedFromUnderIt(_ variant: SeedVariant) async throws {
        let (dir, orderId) = try await interruptedOrder("retry")

        let gate = CoreCheckpointGate(at: .answered)
        let rig = try await CoreRig.make(dir) { $0.checkpoint = gate.hook }
        let retry = Task { await rig.core.processSale(CoreSale(amount: 1000, orderId: orderId)) }
        await gate.waitUntilReached()

        let reports = try await OtherProcess(dir.path + "/data").resolver(variant).resolvePending()
        #expect(reports.map(\.outcome) == [.inProgress, .inProgress], "\(reports.map(\.outcome))")
        #expect(try rig.reversalCount(orderId: orderId) == 0, "the recovery reversed the sale a live retry is paying")

        gate.release()
        guard case .response(let r) = await retry.value else { Issue.record("the retry did not answer"); return }
        #expect(r.code == "A")
        #expect(try rig.ledgerRows(orderId: orderId).map(\.state) == [.approved], "a sale reported approved is not standing")
        // The retry's hand-over took the earlier attempt of the order with it: nothing is left.
        #expect(try rig.store.all().isEmpty)
    }

    /// The records a recovery holds until its reports are acknowledged (`tapemu resolve`) are not
    /// live attempts: a second dead attempt of the same order is still looked up in the same run.
    @Test func theRecordsARecoveryHoldsDoNotStopItsOwnRun() async throws {
        let dir = TempDir()
        let orderId = coreOrderId("twice")
        _ = try await CoreAPIRecoveryTests.interruptedSale(.hostApprovedAnswerLost, dir: dir, orderId: orderId)
        _ = try await CoreAPIRecoveryTests.interruptedSale(.neverArrived, dir: dir, orderId: orderId)

        let second = try OtherProcess(dir.path + "/data")
        let reports = try await second.resolver(.seed002).resolvePending(handOver: .acknowledged)
        #expect(reports.map { CoreAPIRecoveryTests.outcomeName($0.outcome) } == ["reversed", "mismatch"])
        for r in reports where r.isResolved { try r.acknowledge() }
        #expect(try second.store.all().map(\.amount) == [1000])
    }
}

@Suite("One record's lease never stops a recovery halfway")
struct RecoveryContainmentTests {
    /// Makes the lease of `attemptId` impossible to open: its path is a directory (EISDIR).
    private static func breakLease(_ data: String, _ attemptId: String) throws {
        let path = data + "/" + PendingPaymentStore.leaseDirectoryName + "/" + attemptId + ".lock"
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Two sales whose answers were lost (both approved). The second one's lease cannot be
    /// taken. The recovery reversed the first sale, removed its record — and then threw for the
    /// second: the caller never learned of the reversal, and the device kept no trace of it.
    /// Now the second is reported by its order id and the first's report comes back.
    @Test func aCoreAPIRecoveryReportsWhatItDidAndTheRecordItCouldNotTake() async throws {
        let dir = TempDir()
        let first = coreOrderId("first")
        let second = coreOrderId("second")
        _ = try await CoreAPIRecoveryTests.interruptedSale(.hostApprovedAnswerLost, dir: dir, orderId: first)
        _ = try await CoreAPIRecoveryTests.interruptedSale(.hostApprovedAnswerLost, dir: dir, orderId: second)
        let rig = try await CoreRig.make(dir)
        let damaged = try #require(try rig.store.records(orderId: second).first)
        try Self.breakLease(dir.path + "/data", damaged.attemptId)

        let reports = try await rig.core.resolvePendingSales()
        #expect(Set(reports.map(\.sale.orderId)) == [first, second])
        let reversed = try #require(reports.first { $0.sale.orderId == first })
        let kept = try #require(reports.first { $0.sale.orderId == second })
        guard case .reversed = reversed.outcome else { Issue.record("\(reports.map(\.outcome))"); return }
        #expect(reversed.removedFromStore)
        guard case .unreadable(let reason) = kept.outcome else { Issue.record("\(reports.map(\.outcome))"); return }
        #expect(reason.contains("lease"), "\(reason)")
        #expect(!kept.isResolved)
        #expect(try rig.reversalCount(orderId: first) == 1)
        #expect(try rig.reversalCount(orderId: second) == 0, "a sale whose record could not be taken was reversed")
        #expect(try rig.store.all().map(\.orderId) == [second], "the record that could not be taken must stay")
    }

    /// The same for the MONEI-style recovery: the first payment was found and its record left the
    /// device, then the second's lease threw and the found payment was never reported.
    @Test func aMONEIRecoveryReportsWhatItFoundAndTheRecordItCouldNotTake() async throws {
        let h = try Harness()
        let t = try await h.prepared(h.configuration(fault: .lostAnswer))
        for (amount, orderId) in [(1000, "lost-1"), (1001, "lost-2")] {
            let outcome = await driving(h.gatewayClock, by: Harness.gatewayTimeout) {
                await pay(t, amount: amount, orderId: orderId)
            }
            expectFailure(outcome, .outcomeUnknown(orderId: orderId))
        }
        let damaged = try #require(try h.store.records(orderId: "lost-2").first)
        try Self.breakLease(h.directory, damaged.attemptId)

        // The harness's wall clock stands still: the two records may come in either order.
        let reports = try await t.resolveUnclearOutcomes()
        #expect(Set(reports.map(\.pending.orderId)) == ["lost-1", "lost-2"])
        let found = try #require(reports.first { $0.pending.orderId == "lost-1" })
        let kept = try #require(reports.first { $0.pending.orderId == "lost-2" })
        guard case .found(let payment) = found.finding else { Issue.record("\(reports.map(\.finding))"); return }
        #expect(payment.status == .approved)
        #expect(found.removedFromStore)
        guard case .unreadable(let reason) = kept.finding else { Issue.record("\(reports.map(\.finding))"); return }
        #expect(reason.contains("lease"), "\(reason)")
        #expect(try h.store.all().map(\.orderId) == ["lost-2"])
    }
}

@Suite("The communication error carries this attempt's card")
struct CommErrorCardTests {
    /// A card torn after early submission: the sale the listener gets back took its card from
    /// the newest open record of the order — another attempt's when one is newer (here a record of
    /// another card). Seed 002's recovery looks the sale up by that card's last four, so it would
    /// find nothing ("run the sale again") while this attempt's sale stands. The sale now carries
    /// the card the request was sent with.
    @Test func aTornCardAfterEarlySubmissionReportsTheCardItSent() async throws {
        let dir = TempDir()
        let card = VirtualCardSource(profile: CardProfiles.named("visa-qvsdc")!.withTear(afterExchange: 3),
                                     simulatesCardTime: false)
        let rig = try await CoreRig.make(dir, source: card)
        let orderId = coreOrderId("torn")
        try rig.store.save(PendingPayment(orderId: orderId, origin: .coreAPI, amount: 1000, currency: "EUR",
                                          maskedPAN: "541333******4111", last4: "4111", cardBrand: "mastercard",
                                          createdAt: Date().addingTimeInterval(3600)))
        guard let (sale, error) = coreCommError(await rig.core.processSale(CoreSale(amount: 1000, orderId: orderId))) else {
            Issue.record("not a comm error: \(rig.sales.events)")
            return
        }
        #expect(error == .cardReadFailed)
        #expect(sale.maskedPAN == "476173******0010")
        #expect(sale.cardType == "visa")
        #expect(sale.panLastFour == "0010")
    }
}

@Suite("The currency is checked before the card")
struct CurrencyBeforeTheCardTests {
    /// A configuration in lower case ("eur"): the gateway takes upper-case codes only, so it
    /// refused the request after the submission point — `outcomeUnknown`, nothing charged, and a
    /// record on the device that no recovery could ever resolve. The code is the same currency.
    @Test func aLowerCaseCurrencyIsTheSameCurrency() async throws {
        let h = try Harness()
        var config = h.configuration()
        config.currency = "eur"
        let t = try await h.prepared(config)
        let result = try #require(await pay(t, amount: 1250, orderId: "cur-lower").result)
        #expect(result.status == .approved)
        #expect(try await h.charges("cur-lower").map(\.currency) == ["EUR"])
        #expect(try h.store.all().isEmpty)
    }

    /// A currency that is no ISO 4217 code cannot be charged: the payment does not start (no
    /// card is asked for), instead of ending unclear after the request left.
    @Test(arguments: ["EURO", "E1", "€", ""])
    func aCurrencyThatIsNoCodeStopsBeforeTheCard(_ currency: String) async throws {
        try await expectNoStart(currency: currency, orderId: "cur-bad")
    }

    /// The same for the CoreAPI face: the terminal and the reader agree on a currency that is no
    /// code; the sale ended in a communication error with nothing charged.
    @Test func aCoreAPISaleInACurrencyThatIsNoCodeIsTerminalSettings() async throws {
        try await expectTerminalSettings(currency: "EURO", orderId: "cur-core")
    }
}

@Suite("The currency the card is told is the one charged")
struct TerminalCurrencyTests {
    /// The configuration charges USD while the reader's terminal settings still give the card
    /// EUR (5F2A 0978): the gateway refused the request after the submission point (the card's
    /// currency is not the one asked for) — `outcomeUnknown` with nothing charged. Now the payment
    /// does not start.
    @Test func aCurrencyTheTerminalDoesNotGiveTheCardStopsBeforeTheCard() async throws {
        try await expectNoStart(currency: "USD", orderId: "cur-usd")
    }

    @Test func aCoreAPISaleInACurrencyTheTerminalDoesNotGiveTheCardIsTerminalSettings() async throws {
        try await expectTerminalSettings(currency: "USD", orderId: "cur-core-usd")
    }

    /// With the terminal set for the currency, the sale goes through.
    @Test func aCurrencyTheTerminalGivesTheCardIsCharged() async throws {
        let h = try Harness()
        var config = h.configuration()
        config.currency = "USD"
        config.terminal.currencyCode = 840
        let t = try await h.prepared(config)
        #expect(await pay(t, amount: 1250, orderId: "cur-usd-ok").result?.status == .approved)
        #expect(try await h.charges("cur-usd-ok").map(\.currency) == ["USD"])
    }
}

@Suite("Closing is for records without an answer")
struct ClosingAnsweredRecordsTests {
    /// A record that holds the gateway's answer (the process ended before the result was handed
    /// over) was closed like one without: it became an audit entry, and the approval in it was
    /// never reported by a recovery — the merchant, told nothing, may charge again. Its outcome
    /// is known: closing it is refused, and the recovery reports it.
    @Test func aRecordHoldingTheGatewaysAnswerIsNotClosed() async throws {
        let h = try Harness()
        do {
            let t = try await h.preparedAcknowledging()
            #expect(await pay(t, amount: 1250, orderId: "answered-close").result?.status == .approved)
            // `t` goes away without acknowledging: a process that died after the answer.
        }
        let other = try PendingPaymentStore(dataDirectory: h.directory)
        do {
            _ = try other.close(orderId: "answered-close", reason: "support says no payment")
            Issue.record("a record holding an approval was closed")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.reason.contains("answer"), "\(error.reason)")
        }
        #expect(try h.store.get(orderId: "answered-close")?.state == .answered)
        let reports = try await h.prepared(h.configuration()).resolveUnclearOutcomes()
        guard case .answered(let answer)? = reports.first?.finding else { Issue.record("\(reports.map(\.finding))"); return }
        #expect(answer.status == .approved)
    }
}

@Suite("A reversed order is not an approval")
struct ReversedReplayTests {
    /// The order's sale was approved, then reversed (seed 002's recovery, after a communication
    /// error). The same payment run again through the MONEI-style face gets the gateway's stored
    /// answer back — status approved, code C — and reported it APPROVED: the merchant hands the
    /// goods over for a payment that moves no money. It is a clear no: declined, with the reason.
    @Test func aReplayOfAReversedSaleIsDeclined() async throws {
        let h = try Harness()
        let t = try await h.prepared(h.configuration())
        let first = try #require(await pay(t, amount: 1250, orderId: "reversed-1").result)
        #expect(first.status == .approved)
        let sale = try #require(try await h.charges("reversed-1").first)
        _ = try await h.gateway.reverse(uniqueRef: sale.uniqueRef, options: GatewayRequestOptions(fault: GatewayFault.none))

        let again = try #require(await pay(t, amount: 1250, orderId: "reversed-1").result)
        #expect(again.status == .declined, "a reversed sale was reported \(again.status)")
        #expect(again.paymentId == first.paymentId)
        #expect(again.statusMessage?.contains("reversed") == true, "\(again.statusMessage ?? "nil")")
        #expect(try await h.charges("reversed-1").map(\.state) == [.reversed])
        #expect(try h.store.all().isEmpty)
    }
}

@Suite("One live attempt per order")
struct OneLiveAttemptPerOrderTests {
    /// The race left by a recovery's check for live attempts of its order: the recovery has
    /// claimed the dead attempt and checked, and is looking the order up, when the same sale runs
    /// again. The new attempt went through (its answer approved) while the recovery went on to
    /// reverse the order's sale. A sale now does not start while another attempt of its order is
    /// owned by a live process — a sale in progress or a recovery acting on it: nothing is sent.
    @Test func aSaleDoesNotStartWhileARecoveryActsOnItsOrder() async throws {
        let (dir, orderId) = try await interruptedOrder("racing")
        let second = try OtherProcess(dir.path + "/data")
        let dead = try #require(try second.store.records(orderId: orderId).first)
        let recovery = try #require(try second.store.claim(dead.attemptId))

        let rig = try await CoreRig.make(dir)
        let outcome = await rig.core.processSale(CoreSale(amount: 1000, orderId: orderId))
        #expect(coreErrorCode(outcome) == .transactionInProgress, "\(outcome)")
        #expect(try rig.ledgerRows(orderId: orderId).isEmpty, "the sale was sent while a recovery acted on its order")
        #expect(try rig.store.records(orderId: orderId).map(\.attemptId) == [dead.attemptId])

        // Once the recovery let go, the sale runs.
        recovery.release()
        guard case .response(let r) = await rig.core.processSale(CoreSale(amount: 1000, orderId: orderId)) else {
            Issue.record("the sale did not run once the recovery let go: \(rig.sales.events)")
            return
        }
        #expect(r.code == "A")
    }

    /// The MONEI-style face: `busy` (a payment of the order is in progress), nothing charged.
    @Test func aPaymentDoesNotStartWhileAnotherAttemptOfItsOrderIsLive() async throws {
        let h = try Harness()
        let (_, live, gate) = try await h.paymentHeld(at: .submitted, orderId: "two-live")

        let other = try await h.prepared(h.configuration(source: virtualCard("mastercard-mchip")))
        expectFailure(await pay(other, amount: 1000, orderId: "two-live"), .busy)
        #expect(try h.store.records(orderId: "two-live").count == 1)

        gate.release()
        #expect(await live.value.result?.status == .approved)
        #expect(try await h.charges("two-live").count == 1)
        #expect(try h.store.all().isEmpty)
    }
}

/// A sale that ended unclear (it never reached the gateway), then the same sale — order, amount,
/// card — run again and approved, its response not acknowledged yet: the retry's rig (let it go
/// without acknowledging, and its answered record stays, as a process that died after the
/// response leaves it) and its response.
private func unclearSaleThenApprovedRetry(_ name: String) async throws
    -> (dir: TempDir, orderId: String, rig: CoreRig, response: CoreSaleResponse) {
    let (dir, orderId) = try await interruptedOrder(name)
    let (rig, r) = try await CoreRig.approvedNotAcknowledged(dir, orderId: orderId)
    return (dir, orderId, rig, r)
}

@Suite("A sale whose answer another attempt holds is not reversed")
struct AnsweredSiblingTests {
    /// A sale ended unclear (it never reached the gateway); the same sale — order, amount, card —
    /// ran again and was approved, and the app got the response, but its process ended before it
    /// acknowledged it (`tapemu sale` killed after printing APPROVED): that attempt's record holds
    /// the approval. The recovery took the older, unclear attempt first: no live attempt of the
    /// order, so it looked the order up, found the approved sale (it matches: same amount and
    /// card) and reversed it — then reported the other record "answered, approved, nothing
    /// reversed". The approval the app was given no longer stands. A sale whose answer is stored
    /// in another attempt's record is that answer, and is not reversed.
    @Test(arguments: SeedVariant.allCases, [ResultHandOver.onReturn, .acknowledged])
    func aSaleAnsweredToARetryThatDiedIsNotReversed(_ variant: SeedVariant, _ handOver: ResultHandOver) async throws {
        // The retry's rig goes away without acknowledging: a process that died after the response.
        let (dir, orderId, _, _) = try await unclearSaleThenApprovedRetry("retry-died")
        let second = try OtherProcess(dir.path + "/data")
        let records = try second.store.records(orderId: orderId)
        #expect(records.map(\.state) == [.pending, .answered])
        for r in records { #expect(try !second.store.isOwned(r.attemptId)) }

        let reports = try await second.resolver(variant).resolvePending(handOver: handOver)
        for r in reports where r.isResolved { try r.acknowledge() }
        let names = reports.map { CoreAPIRecoveryTests.outcomeName($0.outcome) }
        #expect(names.allSatisfy { $0 == "answered" }, "\(names)")
        try expectTheApprovalStands(reports, ledger: second.gateway.ledger, device: second.store, orderId: orderId)
    }
}

@Suite("A sale run again through the other face")
struct OtherFaceRetryTests {
    /// A CoreAPI sale ended unclear (it never reached the gateway); the same sale — order,
    /// amount, card — then ran through the MONEI-style face on the same device, was approved and
    /// handed over. Its hand-over takes the order's other unowned attempts for the same sale with
    /// it (the gateway holds one sale per order id: their outcome is the one just handed over) —
    /// but only those the same face wrote, so the CoreAPI attempt stayed, and seed 002's recovery
    /// then found the approved sale, which matches it, and reversed it: the approval the app was
    /// given no longer stood.
    @Test(arguments: SeedVariant.allCases)
    func aSaleHandedOverThroughTheOtherFaceIsNotReversed(_ variant: SeedVariant) async throws {
        let (dir, orderId) = try await interruptedOrder("other-face")
        let rig = try await CoreRig.make(dir)
        let monei = TapToPay(configuration: TapToPay.Configuration(cardSource: CoreRig.card(), gateway: rig.gateway,
                                                                   pendingStore: rig.store))
        try await monei.prepare(token: rig.gateway.issueToken(accountId: "acct_core_test"))
        let result = try #require(await pay(monei, amount: 1000, orderId: orderId).result)
        #expect(result.status == .approved)

        let reports = try await OtherProcess(dir.path + "/data").resolver(variant).resolvePending()
        try expectTheApprovalStands(reports, ledger: rig.gateway.ledger, device: rig.store, orderId: orderId)
    }
}

@Suite("A hand-over beside a recovery looking at the order")
struct HandOverBesideARecoveryTests {
    /// A sale ended unclear (it never reached the gateway); the same sale ran again and was
    /// approved. At the moment its response was acknowledged, a recovery in another process held
    /// the unclear attempt's lease (it had claimed it, and was about to see the live attempt and
    /// let go). The hand-over cannot take a record another process holds, so it left it — and
    /// removed its own record, the only trace of the approval on the device. The next recovery
    /// found the approved sale, which matches the unclear attempt, and reversed it: the app had
    /// been told APPROVED. Now the answered record stays when an attempt of the same sale cannot
    /// be taken with it, and the recovery reports that answer for both.
    @Test(arguments: SeedVariant.allCases)
    func theAnswerStaysWhenTheUnclearAttemptIsHeldElsewhere(_ variant: SeedVariant) async throws {
        let (dir, orderId, rig, r) = try await unclearSaleThenApprovedRetry("beside")

        let second = try OtherProcess(dir.path + "/data")
        let unclear = try #require(try second.store.records(orderId: orderId).first { $0.answer == nil })
        let recovery = try #require(try second.store.claim(unclear.attemptId))
        do {
            try rig.core.acknowledge(r)
        } catch {
            #expect(error.code == .busy, "\(error)")
        }
        recovery.release()

        let reports = try await second.resolver(variant).resolvePending()
        try expectTheApprovalStands(reports, ledger: rig.gateway.ledger, device: rig.store, orderId: orderId)
    }
}

@Suite("A recovery hands over an answer and the attempts it covers")
struct AnsweredBeforeTheUnclearAttemptTests {
    /// The order's sale was approved and the app got the response, but its process ended before
    /// acknowledging it; then the same sale ran again and ended unclear (it never reached the
    /// gateway). `tapemu resolve` reports both from the stored answer, holding both records until
    /// its report is written — and the first acknowledgement, the answered record's, could not
    /// take the unclear attempt with it (this run holds it): the acknowledgement failed and the
    /// answered record stayed. Both leave.
    @Test func bothRecordsLeaveWhenTheAnsweredOneIsOlder() async throws {
        let dir = TempDir()
        let orderId = coreOrderId("answered-first")
        _ = try await CoreRig.approvedNotAcknowledged(dir, orderId: orderId)   // its process ends: not acknowledged
        _ = try await CoreAPIRecoveryTests.interruptedSale(.neverArrived, dir: dir, orderId: orderId)
        let second = try OtherProcess(dir.path + "/data")
        #expect(try second.store.records(orderId: orderId).map(\.state) == [.answered, .pending])

        let reports = try await second.resolver(.seed002).resolvePending(handOver: .acknowledged)
        #expect(reports.map { CoreAPIRecoveryTests.outcomeName($0.outcome) } == ["answered", "answered"])
        for r in reports {
            #expect(r.storeError == nil)
            do { try r.acknowledge() } catch { Issue.record("the acknowledgement of \(r.sale.orderId) failed: \(error)") }
        }
        #expect(try second.store.records(orderId: orderId).isEmpty)
        #expect(try second.gateway.ledger.allPayments().filter { $0.orderId == orderId }.map(\.state) == [.approved])
    }
}

@Suite("A damaged attempt of the order stops its recovery")
struct DamagedSiblingTests {
    /// As in ``AnsweredSiblingTests``: a sale ended unclear, the same sale ran again and was
    /// approved, and its process ended before acknowledging — but the approved attempt's record is
    /// damaged (its body no longer reads back). The recovery's look-up of the unclear attempt
    /// finds the approved sale, which matches it; the damaged record, the only trace of the
    /// approval the app was given, was skipped without a word, so the sale was reversed. Now a
    /// damaged attempt of the order stops the order's recovery: both are reported unreadable and
    /// kept, and nothing is asked of the gateway.
    @Test(arguments: SeedVariant.allCases)
    func aSaleIsNotReversedBesideADamagedAttemptOfItsOrder(_ variant: SeedVariant) async throws {
        let (dir, orderId, _, _) = try await unclearSaleThenApprovedRetry("damaged-sibling")   // not acknowledged
        let second = try OtherProcess(dir.path + "/data")
        let answered = try #require(try second.store.records(orderId: orderId).first { $0.answer != nil })
        do {
            let c = try SQLiteConnection(path: second.store.path, busyTimeout: .seconds(1))
            try c.run("UPDATE attempts SET body = '{not json' WHERE attempt_id = ?", [.text(answered.attemptId)])
        }
        let order = try second.store.scan(orderId: orderId)
        #expect(order.records.map(\.answer).map { $0 == nil } == [true])
        #expect(order.unreadable.map(\.attemptId) == [answered.attemptId])

        let reports = try await second.resolver(variant).resolvePending()
        let names = reports.map { CoreAPIRecoveryTests.outcomeName($0.outcome) }
        #expect(names == ["unreadable", "unreadable"], "\(names)")
        #expect(!reports.contains { $0.removedFromStore })
        try expectTheApprovalStands(reports, ledger: second.gateway.ledger, orderId: orderId)
        #expect(try second.store.scan(orderId: orderId).records.count == 1, "the unclear attempt stays")
    }
}

@Suite("A sale found by the MONEI face's recovery takes its CoreAPI attempt along")
struct FoundSaleTakesItsSiblingsTests {
    /// A CoreAPI sale was approved and its answer lost (the app was told of a communication
    /// error); the same sale then ran through the MONEI-style face, whose process died after the
    /// gateway recorded it (no answer stored). `tapemu charges --pending` looked the order up,
    /// found the approved sale — it matches — and reported it approved; but only a record holding
    /// the answer took the order's other attempts of the same sale along, so the CoreAPI attempt
    /// stayed, and `tapemu resolve` then reversed the sale just reported approved (found by the
    /// extended chaos campaign). A sale found by the look-up settles them all.
    @Test(arguments: SeedVariant.allCases, [ResultHandOver.onReturn, .acknowledged])
    func aSaleReportedApprovedByTheLookUpIsNotReversed(_ variant: SeedVariant, _ handOver: ResultHandOver) async throws {
        let (dir, orderId) = try await interruptedOrder("found-by-look-up", .hostApprovedAnswerLost)
        let second = try OtherProcess(dir.path + "/data")
        let sale = try #require(try second.gateway.ledger.allPayments().first { $0.orderId == orderId && $0.kind == .sale })
        #expect(sale.state == .approved)
        // The MONEI-style attempt of the same sale, as its process left it when it died after
        // the gateway recorded the sale: no answer.
        try second.store.save(PendingPayment(orderId: orderId, origin: .tapToPay, amount: sale.amount, currency: sale.currency,
                                             maskedPAN: sale.maskedPAN, last4: sale.last4, cardBrand: sale.cardBrand.rawValue,
                                             createdAt: Date()))

        let monei = TapToPay(configuration: .init(cardSource: CoreRig.card(), gateway: second.gateway, pendingStore: second.store))
        let found = try await monei.resolveUnclearOutcomes(handOver: handOver)
        #expect(found.count == 1)
        for r in found {
            #expect(r.isResolved, "\(r.finding)")
            try r.acknowledge()
        }
        #expect(try second.store.records(orderId: orderId).isEmpty, "the CoreAPI attempt of the sale stayed behind")

        let reports = try await second.resolver(variant).resolvePending()
        try expectTheApprovalStands(reports, ledger: second.gateway.ledger, orderId: orderId)
    }
}
