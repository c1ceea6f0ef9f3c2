import DeviceStore
import CardChannel
import Foundation
import PaymentGateway
import CoreAPI
import Testing
import VirtualCard
import Timing
import TestSupport

/// The seeds' recovery process end to end: a communication error leaves the sale on the device's
/// disk; the process restarts (a new CoreAPI, gateway and store on the same data directory); the
/// resolver finds what the host did and acts.
@Suite struct CoreAPIRecoveryTests {
    enum Interruption: String, CaseIterable, Sendable {
        /// Amount ending 92: the host approved, the answer was lost.
        case hostApprovedAnswerLost
        /// Amount ending 95: the host declined, the answer was lost.
        case hostDeclinedAnswerLost
        /// A server error before the ledger: the sale never arrived.
        case neverArrived
        /// Amount ending 91: no answer, nothing recorded; the caller times out.
        case noAnswer
        /// The card left after early submission; the host approved.
        case tornAfterSubmission
    }

    struct Expected {
        var outcome: String
        var hostCode: String?
    }

    static func expected(_ i: Interruption) -> Expected {
        switch i {
        case .hostApprovedAnswerLost, .tornAfterSubmission: Expected(outcome: "reversed", hostCode: "A")
        case .hostDeclinedAnswerLost: Expected(outcome: "declined", hostCode: "D")
        case .neverArrived, .noAnswer: Expected(outcome: "notFound", hostCode: nil)
        }
    }

    /// Runs a sale that ends in a communication error, in its own "process".
    static func interruptedSale(_ i: Interruption, dir: TempDir, orderId: String) async throws -> CoreSale {
        let clock = ManualClock()
        let source: VirtualCardSource = i == .tornAfterSubmission
            ? VirtualCardSource(profile: CardProfiles.named("visa-qvsdc")!.withTear(afterExchange: 3), simulatesCardTime: false)
            : CoreRig.card()
        let rig = try await CoreRig.make(dir, source: source, gatewayClock: clock) { config in
            if i == .neverArrived { config.gatewayFault = .serverError }
        }
        let amount = switch i {
        case .hostApprovedAnswerLost: 1092
        case .hostDeclinedAnswerLost: 1095
        case .noAnswer: 1091
        case .neverArrived, .tornAfterSubmission: 1000
        }
        let core = rig.core
        let task = Task { await core.processSale(CoreSale(amount: amount, currency: "EUR", orderId: orderId)) }
        if i == .noAnswer {
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(30))
        }
        let outcome = await task.value
        guard let (sale, _) = coreCommError(outcome) else {
            Issue.record("\(i): not a communication error: \(outcome)")
            throw CancellationError()
        }
        #expect(rig.sales.events.count == 1)
        return sale
    }

    static func outcomeName(_ o: PendingSaleReport.Outcome) -> String {
        switch o {
        case .reversed: "reversed"
        case .alreadyReversed: "alreadyReversed"
        case .refunded: "refunded"
        case .declined: "declined"
        case .notFound: "notFound"
        case .mismatch: "mismatch"
        case .inProgress: "inProgress"
        case .unreadable: "unreadable"
        case .answered: "answered"
        case .failed: "failed"
        }
    }

    @Test(arguments: Interruption.allCases, SeedVariant.allCases)
    func aCommErrorIsResolvedAfterARestart(_ interruption: Interruption, _ variant: SeedVariant) async throws {
        let dir = TempDir()
        let orderId = coreOrderId()
        let sale = try await Self.interruptedSale(interruption, dir: dir, orderId: orderId)
        let expected = Self.expected(interruption)

        // The process restarts: everything is opened again from disk.
        let rig = try await CoreRig.make(dir)
        let pending = try rig.core.pendingSales()
        #expect(pending == [sale])
        #expect(pending.first?.maskedPAN == "476173******0010")

        let reports = try await rig.core.resolvePendingSales(variant: variant)
        try #require(reports.count == 1)
        let report = reports[0]
        #expect(report.sale == sale)
        #expect(report.variant == variant)
        #expect(report.filter.orderId == orderId)
        #expect(report.filter.panLastFour == (variant == .seed002 ? "0010" : nil))
        #expect(Self.outcomeName(report.outcome) == expected.outcome)
        #expect(report.match?.code == expected.hostCode)
        #expect(report.isResolved)
        #expect(report.removedFromStore)
        #expect(report.mayRunAgain == (expected.outcome == "notFound"))
        #expect(try rig.store.all().isEmpty)

        let rows = try rig.ledgerRows(orderId: orderId)
        switch expected.outcome {
        case "reversed":
            guard case .reversed(let r) = report.outcome else { return }
            #expect(r.originalUniqueRef == report.match?.uniqueRef)
            #expect(r.deviceType == "AppleTTP")
            #expect(r.amount == sale.amount)
            #expect(rows.filter { $0.kind == .sale }.first?.state == .reversed)
            #expect(rows.filter { $0.kind == .reversal }.count == 1)
            // The transaction now lists as C.
            let list = try await RestConnector.requestTransactionList(CoreTransactionFilter(orderId: orderId), with: rig.terminal)
            #expect(list.transactionSummary.map(\.code) == ["C"])
        case "declined":
            guard case .declined(let code) = report.outcome else { return }
            #expect(code == "D")
            #expect(rows.map(\.kind) == [.sale])
        default:
            #expect(rows.isEmpty)
            // Step 5: the sale may run again, and this time it goes through.
            let r = try await rig.answeredSale(orderId: orderId)
            #expect(r.code == "A")
        }

        // Running the recovery again finds nothing pending, and a second look at the same sale
        // never reverses it twice.
        #expect(try await rig.core.resolvePendingSales(variant: variant).isEmpty)
        let again = await PendingSaleResolver(terminal: rig.terminal, store: rig.store, variant: variant).resolve(sale)
        if expected.outcome == "reversed" {
            #expect(again.outcome == .declined(code: "C"))
            #expect(try rig.reversalCount(orderId: orderId) == 1)
        }
    }

    // MARK: A failed request leaves the sale for later

    @Test(arguments: [GatewayOperation.transactionList, .reversal, .validateToken], SeedVariant.allCases)
    func aFailedRequestLeavesTheSalePending(_ operation: GatewayOperation, _ variant: SeedVariant) async throws {
        let dir = TempDir()
        let orderId = coreOrderId()
        let sale = try await Self.interruptedSale(.hostApprovedAnswerLost, dir: dir, orderId: orderId)
        let rig = try await CoreRig.make(dir)
        rig.gateway.armFault(.serverError, for: operation)
        let first = try await rig.core.resolvePendingSales(variant: variant)
        try #require(first.count == 1)
        guard case .failed(let error) = first[0].outcome else {
            Issue.record("not failed: \(first[0].outcome)")
            return
        }
        #expect(error.code == .networkError)
        #expect(error.isRetryable)
        #expect(!first[0].isResolved)
        #expect(!first[0].removedFromStore)
        #expect(try rig.core.pendingSales() == [sale])
        #expect(try rig.reversalCount(orderId: orderId) == 0)

        // Later, online again.
        let second = try await rig.core.resolvePendingSales(variant: variant)
        #expect(second.map { Self.outcomeName($0.outcome) } == ["reversed"])
        #expect(try rig.core.pendingSales().isEmpty)
        #expect(try rig.reversalCount(orderId: orderId) == 1)
    }

    /// The reversal is done but its answer is lost: the sale stays pending; the next run sees
    /// code C and does not reverse again.
    @Test(arguments: SeedVariant.allCases)
    func aReversalWhoseAnswerIsLostIsNeverRepeated(_ variant: SeedVariant) async throws {
        let dir = TempDir()
        let orderId = coreOrderId()
        _ = try await Self.interruptedSale(.hostApprovedAnswerLost, dir: dir, orderId: orderId)
        let rig = try await CoreRig.make(dir)
        rig.gateway.armFault(.lostAnswer, for: .reversal)
        let first = try await rig.core.resolvePendingSales(variant: variant)
        #expect(first.map { Self.outcomeName($0.outcome) } == ["failed"])
        #expect(try rig.reversalCount(orderId: orderId) == 1)
        #expect(try rig.core.pendingSales().count == 1)

        let second = try await rig.core.resolvePendingSales(variant: variant)
        #expect(second.first?.outcome == .declined(code: "C"))
        #expect(second.first?.removedFromStore == true)
        #expect(try rig.reversalCount(orderId: orderId) == 1)
    }

    /// Between the look-up and the reversal another run reversed the sale: the gateway refuses a
    /// second reversal, and the resolver reports it as already reversed.
    @Test func aReversalRaceIsAlreadyReversed() async throws {
        let dir = TempDir()
        let orderId = coreOrderId()
        let sale = try await Self.interruptedSale(.hostApprovedAnswerLost, dir: dir, orderId: orderId)
        let rig = try await CoreRig.make(dir)
        let racer = RacingGateway(inner: rig.gateway)
        var terminal = rig.terminal
        terminal.gateway = racer
        let report = await PendingSaleResolver(terminal: terminal, store: rig.store).resolve(sale)
        #expect(report.outcome == .alreadyReversed)
        #expect(report.isResolved)
        #expect(try rig.reversalCount(orderId: orderId) == 1)
    }

    /// The sale left unclear was approved, and the merchant refunded it since: the gateway
    /// refuses to reverse a refunded sale, so a recovery that tried would fail on every run and
    /// the record would never leave. Refunded in full: resolved, nothing charged, nothing
    /// reversed. In part: the rest stays charged — kept for a person, nothing reversed.
    @Test(arguments: [(refund: 1092, resolved: true), (refund: 500, resolved: false)], SeedVariant.allCases)
    func aSaleRefundedSinceIsNotReversed(_ c: (refund: Int, resolved: Bool), _ variant: SeedVariant) async throws {
        let dir = TempDir()
        let orderId = coreOrderId()
        _ = try await Self.interruptedSale(.hostApprovedAnswerLost, dir: dir, orderId: orderId)
        let rig = try await CoreRig.make(dir)
        let sale = try #require(try rig.ledgerRows(orderId: orderId).first { $0.kind == .sale })
        guard case .response = await rig.core.processRefund(CoreRefund(uniqueRef: sale.uniqueRef, amount: c.refund)) else {
            Issue.record("the refund failed")
            return
        }
        let reports = try await rig.core.resolvePendingSales(variant: variant)
        try #require(reports.count == 1)
        #expect(reports[0].outcome == .refunded(amount: c.refund))
        #expect(reports[0].match?.code == "A")
        #expect(reports[0].isResolved == c.resolved)
        #expect(reports[0].removedFromStore == c.resolved)
        #expect(try rig.core.pendingSales().count == (c.resolved ? 0 : 1))
        #expect(try rig.reversalCount(orderId: orderId) == 0)
        if !c.resolved {
            // A later run says the same, and still reverses nothing.
            let again = try await rig.core.resolvePendingSales(variant: variant)
            #expect(again.map(\.outcome) == [.refunded(amount: c.refund)])
            #expect(try rig.reversalCount(orderId: orderId) == 0)
        }
    }

    // MARK: Seed 003's checks

    /// A sale of an order the ledger holds for another amount is refused by the gateway after
    /// the submission point: it reached the gateway, which recorded nothing — a transaction error
    /// (`onError`), not a communication error (seeds 002/003), and nothing stays on the device.
    /// (It was `onTransactionCommError(networkError)`, kept pending.)
    @Test func aRefusalAfterTheSubmissionPointIsATransactionError() async throws {
        let dir = TempDir()
        let orderId = coreOrderId()
        let rig = try await CoreRig.make(dir)
        let r = try await rig.answeredSale(orderId: orderId)
        #expect(r.code == "A")
        let outcome = await rig.core.processSale(CoreSale(amount: 2000, orderId: orderId))
        #expect(coreErrorCode(outcome) == .invalidParameters, "\(outcome)")
        guard case .error(_, let description) = outcome else { return }
        #expect(description.contains("orderConflict") && description.contains("no payment occurred"), "\(description)")
        #expect(try rig.core.pendingSales().isEmpty)
        #expect(try rig.ledgerRows(orderId: orderId).count == 1)
        #expect(try rig.reversalCount(orderId: orderId) == 0)
    }

    /// A pending sale of an order the ledger holds for another amount (a process killed after its
    /// request left, which the gateway refused as an order conflict). Neither seed's process
    /// reverses the other sale: 003 checks the amount, and tapemu applies the same check to 002
    /// (looking up by orderId and last four, it would otherwise reverse a sale the app was told
    /// was approved).
    @Test func seed003RefusesATransactionOfAnotherAmount() async throws {
        let dir = TempDir()
        let orderId = coreOrderId()
        do {
            let rig = try await CoreRig.make(dir)
            let r = try await rig.answeredSale(orderId: orderId)
            #expect(r.code == "A")
            // The same orderId again, another amount, killed after its request left: what the
            // process leaves is its record.
            try rig.store.save(PendingPayment(orderId: orderId, origin: .coreAPI, amount: 2000, currency: "EUR",
                                              maskedPAN: r.maskedPAN, last4: String(r.maskedPAN.suffix(4)),
                                              cardBrand: r.cardType, createdAt: Date(),
                                              sale: CoreSale(amount: 2000, orderId: orderId).convertToDictionary()))
        }
        let rig = try await CoreRig.make(dir)
        let sale = try #require(try rig.core.pendingSales().first)
        #expect(sale.amount == 2000)

        let report003 = await PendingSaleResolver(terminal: rig.terminal, store: rig.store, variant: .seed003).resolve(sale)
        guard case .mismatch(let reason) = report003.outcome else {
            Issue.record("003 did not refuse: \(report003.outcome)")
            return
        }
        #expect(reason.contains("amount"))
        #expect(report003.match?.amount == 1000)
        #expect(!report003.isResolved)
        #expect(try rig.reversalCount(orderId: orderId) == 0)
        // Through the store: kept for a person to look at.
        let reports = try await rig.core.resolvePendingSales(variant: .seed003)
        #expect(reports.first?.removedFromStore == false)
        #expect(try rig.core.pendingSales() == [sale])
        #expect(try rig.reversalCount(orderId: orderId) == 0)

        // Seed 002's look-up finds the first sale too, and it is not this sale's: kept, not reversed.
        let report002 = await PendingSaleResolver(terminal: rig.terminal, store: rig.store, variant: .seed002).resolve(sale)
        #expect(Self.outcomeName(report002.outcome) == "mismatch")
        #expect(report002.match?.amount == 1000)
        #expect(try rig.reversalCount(orderId: orderId) == 0)
    }

    /// The same orderId was charged before on another card: seed 003 refuses the card suffix;
    /// seed 002 (last four in the look-up) finds nothing.
    @Test func seed003RefusesATransactionOfAnotherCard() async throws {
        let dir = TempDir()
        let orderId = coreOrderId()
        _ = try await CoreRig.make(dir).answeredSale(orderId: orderId)   // that rig goes away with it
        do {
            // The same order on another card: refused by the gateway (onError, nothing kept) …
            let rig = try await CoreRig.make(dir, source: CoreRig.card("mastercard-mchip"))
            let outcome = await rig.core.processSale(CoreSale(amount: 1000, orderId: orderId))
            #expect(coreErrorCode(outcome) == .invalidParameters, "\(outcome)")
            #expect(try rig.core.pendingSales().isEmpty)
            // … and as a process killed after its request left leaves it.
            try rig.store.save(PendingPayment(orderId: orderId, origin: .coreAPI, amount: 1000, currency: "EUR",
                                              maskedPAN: "541333******0434", last4: "0434", cardBrand: "mastercard",
                                              createdAt: Date(), sale: CoreSale(amount: 1000, orderId: orderId).convertToDictionary()))
        }
        let rig = try await CoreRig.make(dir)
        let sale = try #require(try rig.core.pendingSales().first)

        let report003 = await PendingSaleResolver(terminal: rig.terminal, store: rig.store, variant: .seed003).resolve(sale)
        guard case .mismatch(let reason) = report003.outcome else {
            Issue.record("003 did not refuse: \(report003.outcome)")
            return
        }
        #expect(reason.contains("card"))
        #expect(report003.match?.cardNumber == "476173******0010")

        let report002 = await PendingSaleResolver(terminal: rig.terminal, store: rig.store, variant: .seed002).resolve(sale)
        #expect(report002.outcome == .notFound)
        #expect(report002.filter.panLastFour == "0434")
        #expect(try rig.reversalCount(orderId: orderId) == 0)
    }

    @Test func seed002NeedsTheCardsLastFour() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let report = await PendingSaleResolver(terminal: rig.terminal, store: rig.store)
            .resolve(CoreSale(amount: 100, orderId: "o"))
        guard case .failed(let e) = report.outcome else { Issue.record("\(report.outcome)"); return }
        #expect(e.code == .invalidParameters)
    }

    @Test func aStoredSaleThatDoesNotReadBackIsKept() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        try rig.store.save(PendingPayment(orderId: "broken", origin: .coreAPI, amount: 100, currency: "EUR",
                                          createdAt: Date(), sale: ["amount": "not a number"]))
        try rig.store.save(PendingPayment(orderId: "monei", origin: .tapToPay, amount: 100, currency: "EUR",
                                          createdAt: Date()))
        let reports = try await rig.core.resolvePendingSales()
        #expect(reports.count == 1)
        #expect(reports.first?.sale.orderId == "broken")
        #expect(reports.first.map { Self.outcomeName($0.outcome) } == "unreadable")
        // MONEI-style payments are not the CoreAPI's to resolve, nor to list.
        #expect(try rig.store.all().count == 2)
        #expect(try rig.core.pendingSales().isEmpty)
    }

    /// Without a terminal (no initialise) every request fails for lack of a token; nothing moves.
    @Test func resolvingWithoutATerminalKeepsEverything() async throws {
        let dir = TempDir()
        let orderId = coreOrderId()
        _ = try await Self.interruptedSale(.hostApprovedAnswerLost, dir: dir, orderId: orderId)
        let rig = try await CoreRig.make(dir, initialise: false)
        let reports = try await rig.core.resolvePendingSales()
        guard case .failed(let e)? = reports.first?.outcome else { Issue.record("\(reports)"); return }
        #expect(e.code == .invalidTokenSettings)
        #expect(try rig.core.pendingSales().count == 1)
    }

    /// The sale in progress is not resolved from under itself.
    @Test func theSaleInProgressIsSkipped() async throws {
        let dir = TempDir()
        let gate = CoreCheckpointGate(at: .answered)
        let rig = try await CoreRig.make(dir) { config in config.checkpoint = gate.hook }
        let core = rig.core
        let orderId = coreOrderId()
        let sale = Task { await core.processSale(CoreSale(amount: 1000, orderId: orderId)) }
        await gate.waitUntilReached()
        #expect(try core.pendingSales().map(\.orderId) == [orderId])
        #expect(try await core.resolvePendingSales().isEmpty)
        gate.release()
        guard case .response(let r) = await sale.value else { Issue.record("the sale failed"); return }
        #expect(r.code == "A")
        #expect(try rig.reversalCount(orderId: orderId) == 0)
        #expect(try core.pendingSales().isEmpty)
    }

    // MARK: RestConnector

    @Test func reversalIsNeverDoneTwice() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let orderId = coreOrderId()
        let sale = try await rig.answeredSale(orderId: orderId)
        var reversal = CoreReversal()
        reversal.deviceType = "AppleTTP"
        reversal.uniqueRef = sale.uniqueRef
        let first = try await RestConnector.requestReversal(reversal, isRefund: false, with: rig.terminal)
        #expect(first.code == "A")
        #expect(first.originalUniqueRef == sale.uniqueRef)
        #expect(first.orderId == orderId)
        // Both spellings refuse a second reversal, and nothing changes.
        for attempt in 0..<2 {
            do {
                if attempt == 0 {
                    try await RestConnector.request(reversal, isRefund: false, with: rig.terminal)
                } else {
                    try await RestConnector.requestReversal(reversal, isRefund: false, with: rig.terminal)
                }
                Issue.record("reversed twice")
            } catch {
                #expect(error.code == .alreadyReversed)
                #expect(!error.isRetryable)
            }
        }
        #expect(try rig.reversalCount(orderId: orderId) == 1)
        // A reversed sale cannot be refunded either.
        if case .error(let e, _) = await rig.core.processRefund(CoreRefund(uniqueRef: sale.uniqueRef)) {
            #expect(e == .refundNotAllowed)
        } else {
            Issue.record("a reversed sale was refunded")
        }
    }

    @Test func restConnectorRefusals() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let declined = try await rig.answeredSale(amount: 1054)
        #expect(declined.code == "D")
        func reversalError(_ r: CoreReversal, isRefund: Bool = false) async -> CoreError? {
            do {
                try await RestConnector.requestReversal(r, isRefund: isRefund, with: rig.terminal)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(await reversalError(CoreReversal(uniqueRef: declined.uniqueRef, deviceType: "AppleTTP")) == .notReversible)
        #expect(await reversalError(CoreReversal(uniqueRef: declined.uniqueRef), isRefund: true) == .notReversible)
        #expect(await reversalError(CoreReversal(uniqueRef: "NOSUCHREF0")) == .transactionNotFound)
        #expect(await reversalError(CoreReversal()) == .invalidParameters)
        #expect(await reversalError(CoreReversal(uniqueRef: declined.uniqueRef, deviceType: "")) == .invalidParameters)

        func listError(_ f: CoreTransactionFilter, terminal: CoreTerminal? = nil) async -> CoreError? {
            do {
                _ = try await RestConnector.requestTransactionList(f, with: terminal ?? rig.terminal)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(await listError(CoreTransactionFilter()) == .invalidParameters)
        #expect(await listError(CoreTransactionFilter(orderId: "")) == .invalidParameters)
        #expect(await listError(CoreTransactionFilter(panLastFour: "12a4")) == .invalidParameters)
        var noToken = rig.terminal
        noToken.token = nil
        #expect(await listError(CoreTransactionFilter(orderId: "o"), terminal: noToken) == .invalidTokenSettings)
        var slowGateway = rig.terminal
        slowGateway.requestFault = .serverError
        #expect(await listError(CoreTransactionFilter(orderId: "o"), terminal: slowGateway) == .networkError)
    }

    @Test func transactionListByOrderIdAndLastFour() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let orderId = coreOrderId()
        let sale = try await rig.answeredSale(amount: 1056, orderId: orderId)
        let byOrder = try await RestConnector.requestTransactionList(CoreTransactionFilter(orderId: orderId), with: rig.terminal)
        #expect(byOrder.transactionSummary.count == 1)
        let t = try #require(byOrder.transactionSummary.first)
        #expect(t.code == "R")
        #expect(t.uniqueRef == sale.uniqueRef)
        #expect(t.amount == 1056)
        #expect(t.cardNumber == "476173******0010")
        #expect(t.orderId == orderId)
        #expect(t.type == "sale")
        let byBoth = try await RestConnector.requestTransactionList(
            CoreTransactionFilter(orderId: orderId, panLastFour: "0010"), with: rig.terminal)
        #expect(byBoth == byOrder)
        let otherCard = try await RestConnector.requestTransactionList(
            CoreTransactionFilter(orderId: orderId, panLastFour: "0434"), with: rig.terminal)
        #expect(otherCard.transactionSummary.isEmpty)
        let byCard = try await RestConnector.requestTransactionList(CoreTransactionFilter(panLastFour: "0010"), with: rig.terminal)
        #expect(byCard.transactionSummary.contains(t))
    }
}

/// A gateway whose first reversal request is beaten by another one (done just before it).
struct RacingGateway: ForwardingGateway {
    let inner: any Gateway

    func reverse(uniqueRef: String, options: GatewayRequestOptions) async throws(GatewayError) -> ReversalResponse {
        _ = try? await inner.reverse(uniqueRef: uniqueRef, options: GatewayRequestOptions())
        return try await inner.reverse(uniqueRef: uniqueRef, options: options)
    }
}
