public import DeviceStore
public import PaymentFlow
import PaymentGateway
import PaymentRules

/// Which seed's recovery process to run. They differ in step 2 and 3:
///
/// | | `002` | `003` |
/// |---|---|---|
/// | look-up | by `orderId` **and** the card's last four | by `orderId` |
/// | before reversing | the code must be `A` | the code must be `A`, and the transaction's amount and card suffix must be the sale's |
/// | reversal call | `RestConnector.request` | `RestConnector.requestReversal` |
public enum SeedVariant: String, Sendable, Hashable, CaseIterable, Codable {
    case seed002 = "002"
    case seed003 = "003"
}

/// What the recovery found and did for one pending sale.
public struct PendingSaleReport: Sendable, Hashable {
    public enum Outcome: Sendable, Hashable {
        /// Code `A`: the gateway authorised the sale; it is now reversed.
        case reversed(CoreReversalResponse)
        /// Code `A` at the look-up, but the gateway says it was reversed since (by another run):
        /// it was not reversed again.
        case alreadyReversed
        /// The code is not `A` (`D`, `R`, `E`, or `C` for a sale reversed before): there is
        /// nothing to reverse.
        case declined(code: String)
        /// Code `A`, but the merchant refunded the sale since (`amount`, minor units, in all):
        /// there is nothing to reverse, and a sale refunded even in part cannot be reversed. In
        /// full, nothing stays charged: resolved. In part, the rest stays charged: kept for a
        /// person to decide — refund the rest, or close the record (`tapemu pending close`).
        case refunded(amount: Int)
        /// The gateway had answered before the process ended, and the answer was stored in the
        /// record but never handed over (the app may not have seen it): that answer is the sale's
        /// outcome. Nothing is reversed — the answer may already have been shown. Also the outcome
        /// of an unclear attempt whose look-up finds the sale another attempt of the order (the
        /// same sale run again) holds the answer of.
        case answered(PendingPayment.Answer)
        /// No transaction: the sale never reached the gateway. Nothing to resolve; the sale may
        /// run again (``PendingSaleReport/sale``).
        case notFound
        /// A transaction was found for the orderId, but it is not this sale's: its amount,
        /// currency or card suffix (or, for a sale whose answer was stored, its reference)
        /// differ — another payment holds this order id. Nothing was reversed; the sale stays
        /// pending for a person to look at.
        case mismatch(reason: String)
        /// A sale in progress owns the record, or another attempt of its order is live (the sale
        /// run again): it was left alone.
        case inProgress
        /// The stored sale cannot be read back, or its lease cannot be taken, or another attempt
        /// of its order cannot be read back (damage): reported by its order id, kept, nothing
        /// asked of the gateway.
        case unreadable(reason: String)
        /// A request failed (the device is still offline, the gateway failed): the sale stays
        /// pending; try again later.
        case failed(CoreRestError)
    }

    public var sale: CoreSale
    public var variant: SeedVariant
    /// The look-up of step 2.
    public var filter: CoreTransactionFilter
    /// The first transaction the look-up returned (what was "found"), if any.
    public var match: CoreTransactionSummary?
    public var outcome: Outcome
    /// Whether the sale left the device's pending store (it is resolved).
    public var removedFromStore: Bool
    /// Why the record could not leave the store although the sale is resolved (it stays; a later
    /// run finds it again and reports what the gateway says then).
    public var storeError: DeviceStoreError?
    /// With ``ResultHandOver/acknowledged``: the lease of a resolved record, kept until
    /// ``acknowledge()``.
    var held: HeldRecord?

    /// The report has been handed over (written where it had to go): the resolved sale leaves
    /// the device. Only with ``ResultHandOver/acknowledged``; a no-op otherwise.
    public func acknowledge() throws(DeviceStoreError) {
        try held?.complete()
    }

    /// Resolved: the outcome is known and nothing more is to be done for it.
    public var isResolved: Bool {
        switch outcome {
        case .reversed, .alreadyReversed, .declined, .notFound, .answered: true
        case .refunded(let amount): amount >= sale.amount
        case .mismatch, .failed, .inProgress, .unreadable: false
        }
    }

    /// The sale never reached the gateway: it may run again (step 5).
    public var mayRunAgain: Bool { outcome == .notFound }
}

/// The seeds' recovery process for sales with an unknown outcome (seed `002` / `003`, "Handle
/// errors"), step by step:
///
/// 1. The sale is stored on the device (the payment flow wrote it before the submission point).
/// 2. Look the transaction up with `RestConnector.requestTransactionList`: by `orderId` and the
///    last four digits of the card (`002`), or by `orderId` (`003`).
/// 3. Check the first result: no transaction → the sale never reached the gateway, nothing to
///    resolve, it may run again; (`003`: amount and card suffix must be the sale's, else stop);
///    code not `A` → declined, nothing to reverse; code `A` → authorised (unless the merchant
///    refunded it since: nothing to reverse, ``PendingSaleReport/Outcome/refunded(amount:)``).
/// 4. Authorised: reverse it — a `CoreReversal` with the transaction's `uniqueRef` and
///    `deviceType` `AppleTTP`, `isRefund` false.
/// 5. (Optional) run the sale again: left to the app (``PendingSaleReport/mayRunAgain``).
///
/// A failed request leaves the sale pending for a later try. A resolved sale leaves the store.
/// Running the recovery again never reverses twice: a reversed sale lists as code `C` (not `A`),
/// and the gateway refuses a second reversal (``CoreError/alreadyReversed``).
public struct PendingSaleResolver: Sendable {
    public var terminal: CoreTerminal
    public var store: PendingPaymentStore
    public var variant: SeedVariant

    public init(terminal: CoreTerminal, store: PendingPaymentStore, variant: SeedVariant = .seed002) {
        self.terminal = terminal
        self.store = store
        self.variant = variant
    }

    /// Steps 2 to 4 for one sale. Does not touch the store (``PendingSaleReport/removedFromStore``
    /// is false).
    public func resolve(_ sale: CoreSale) async -> PendingSaleReport {
        await resolve(sale, record: nil)
    }

    /// Steps 2 to 4, checking that what is found is what was attempted: the sale's amount,
    /// currency and card suffix (seed 003 says so; tapemu applies it to 002 as well, since
    /// reversing another payment of the same order id would undo a sale the app was told was
    /// approved), and, when the record kept the gateway's answer, its reference.
    ///
    /// `answeredElsewhere`: the answers other attempts of the order hold on the device. A sale
    /// found with one of their references is the outcome of this attempt too (the gateway holds
    /// one sale per order id, and this attempt asked for the same amount and card): it is
    /// reported ``PendingSaleReport/Outcome/answered(_:)`` and not reversed — the app may have
    /// shown that answer.
    func resolve(_ sale: CoreSale, record: PendingPayment?,
                 answeredElsewhere: [PendingPayment.Answer] = []) async -> PendingSaleReport {
        var filter = CoreTransactionFilter()
        filter.orderId = sale.orderId
        if variant == .seed002 { filter.panLastFour = sale.panLastFour }
        func report(_ outcome: PendingSaleReport.Outcome, match: CoreTransactionSummary? = nil) -> PendingSaleReport {
            PendingSaleReport(sale: sale, variant: variant, filter: filter, match: match, outcome: outcome,
                              removedFromStore: false)
        }
        if variant == .seed002 && filter.panLastFour == nil {
            return report(.failed(CoreRestError(.invalidParameters,
                                                "the pending sale has no card number, so it cannot be looked up by its last four digits")))
        }

        // Step 2: the transaction list.
        let result: CoreTransactions
        do throws(CoreRestError) {
            result = try await RestConnector.requestTransactionList(filter, with: terminal)
        } catch {
            return report(.failed(error))
        }

        // Step 3: the first transaction, which must be this sale's.
        guard let match = result.transactionSummary.first(where: { $0.type == "sale" }) ?? result.transactionSummary.first else {
            return report(.notFound)
        }
        let attempted = record ?? PendingPayment(orderId: sale.orderId, origin: .coreAPI, amount: sale.amount,
                                                  currency: sale.currency, last4: sale.panLastFour,
                                                  cardBrand: sale.cardType, createdAt: .distantPast)
        if let reason = attempted.mismatch(orderId: match.orderId, amount: match.amount, currency: match.currency,
                                           last4: match.cardNumber.map { String($0.suffix(4)) }, brand: nil,
                                           uniqueRef: match.uniqueRef) {
            return report(.mismatch(reason: "another payment holds this order id: not this sale's (\(reason))"), match: match)
        }
        guard match.code == TransactionCode.approved.rawValue else {
            return report(.declined(code: match.code), match: match)
        }
        if let answer = answeredElsewhere.first(where: { $0.uniqueRef == match.uniqueRef }) {
            return report(.answered(answer), match: match)
        }
        // Refunded since (by the merchant): the gateway refuses to reverse it, every run. Its
        // refunds list beside it (one sale per order id: the order's refunds are its).
        let refunded = result.transactionSummary
            .filter { $0.type == "refund" && $0.code == TransactionCode.approved.rawValue && OrderID.same($0.orderId, match.orderId) }
            .reduce(0) { $0 + $1.amount }
        if refunded > 0 { return report(.refunded(amount: refunded), match: match) }

        // Step 4: the reversal.
        var reversal = CoreReversal()
        reversal.deviceType = DeviceEnum.appleTTP.name
        reversal.uniqueRef = match.uniqueRef
        do throws(CoreRestError) {
            let response = switch variant {
            case .seed002: try await RestConnector.request(reversal, isRefund: false, with: terminal)
            case .seed003: try await RestConnector.requestReversal(reversal, isRefund: false, with: terminal)
            }
            return report(.reversed(response), match: match)
        } catch {
            if error.code == .alreadyReversed { return report(.alreadyReversed, match: match) }
            return report(.failed(error), match: match)
        }
    }

    /// Resolves every CoreAPI-style pending sale in the store, oldest first, and removes the
    /// resolved ones. Recoveries on one data directory run one at a time (a second waits, then
    /// sees what the first left); a sale owned by a live process (a sale in progress, here or in
    /// another process) — or whose order has another attempt owned by one (the sale run again:
    /// the look-up would find that attempt's sale, and reverse it from under it) — is reported
    /// ``PendingSaleReport/Outcome/inProgress`` and left alone, as are the orders in `skipping`;
    /// MONEI-style pending payments too (they resolve by webhook and charges query). A stored
    /// sale that does not read back, or whose lease cannot be taken, is reported by its order id
    /// and kept — and so are the other attempts of its order, left alone (the damaged record may
    /// hold the answer of the sale their look-up would find); the others still resolve. Throws only when the store cannot be read at all.
    ///
    /// A resolved sale leaves the device when the reports are returned (`.onReturn`), or when
    /// each report is acknowledged (``PendingSaleReport/acknowledge()``) by a caller that must
    /// write them somewhere first; until then it stays, owned by this process.
    public func resolvePending(skipping: Set<String> = [],
                               handOver: ResultHandOver = .onReturn) async throws(DeviceStoreError) -> [PendingSaleReport] {
        try await store.withRecovery { () async throws(DeviceStoreError) -> [PendingSaleReport] in
            let scan = try store.scan()
            var reports: [PendingSaleReport] = scan.unreadable.map { u in
                PendingSaleReport(sale: CoreSale(amount: 0, currency: "", orderId: u.orderId), variant: variant,
                                  filter: CoreTransactionFilter(orderId: u.orderId), match: nil,
                                  outcome: .unreadable(reason: u.reason), removedFromStore: false)
            }
            for pending in scan.records where pending.origin == .coreAPI && !skipping.contains(pending.orderId) {
                // The resolved records this run holds until their reports are acknowledged.
                let held = Set(reports.compactMap { $0.held?.lease.attemptId })
                do throws(DeviceStoreError) {
                    if let report = try await resolveRecord(pending, holding: held, handOver: handOver) { reports.append(report) }
                } catch {
                    // Its lease or its order's other attempts cannot be read (a damaged lease
                    // file, a lease folder that cannot be written): nothing was done for it. It
                    // is reported by its order id, and the others still resolve — a throw here
                    // would lose the reports of the sales already reversed and removed.
                    reports.append(PendingSaleReport(
                        sale: CoreSale(pending: pending) ?? CoreSale(amount: pending.amount, currency: pending.currency, orderId: pending.orderId),
                        variant: variant, filter: CoreTransactionFilter(orderId: pending.orderId), match: nil,
                        outcome: .unreadable(reason: "its record cannot be taken over (\(error.reason)): nothing was done for it"),
                        removedFromStore: false))
                }
            }
            return reports
        }
    }

    /// One pending sale of ``resolvePending(skipping:handOver:)``: nil when it left the store
    /// meanwhile. `holding`: the attempts this run resolved and holds. Throws only before
    /// anything was asked of the gateway (its lease, its order's other attempts).
    private func resolveRecord(_ pending: PendingPayment, holding: Set<String>,
                               handOver: ResultHandOver) async throws(DeviceStoreError) -> PendingSaleReport? {
        func inProgress(_ sale: CoreSale) -> PendingSaleReport {
            PendingSaleReport(sale: sale, variant: variant, filter: CoreTransactionFilter(orderId: pending.orderId),
                              match: nil, outcome: .inProgress, removedFromStore: false)
        }
        guard let lease = try store.claim(pending.attemptId) else {
            guard try store.record(attemptId: pending.attemptId) != nil, let sale = CoreSale(pending: pending) else { return nil }
            return inProgress(sale)
        }
        let record = lease.record
        guard let sale = CoreSale(pending: record) else {
            lease.release()
            return PendingSaleReport(
                sale: CoreSale(amount: record.amount, currency: record.currency, orderId: record.orderId), variant: variant,
                filter: CoreTransactionFilter(orderId: record.orderId), match: nil,
                outcome: .unreadable(reason: "the stored sale cannot be read back as a CoreSale"), removedFromStore: false)
        }
        // Another attempt of this order is live (the sale run again, in this process or another):
        // the gateway holds one sale per order id, so what the look-up finds may be the live
        // attempt's sale, and reversing it would undo a sale about to be reported approved. The
        // order is left alone until that attempt ends (its hand-over takes this record with it).
        let order = try store.scan(orderId: record.orderId)
        let siblings = order.records.filter { $0.attemptId != record.attemptId }
        if siblings.contains(where: { !holding.contains($0.attemptId) && ((try? store.isOwned($0.attemptId)) ?? true) }) {
            lease.release()
            return inProgress(sale)
        }
        // Another attempt of the order cannot be read back: it may hold the answer of the sale the
        // look-up would find (the same sale run again and shown approved), which must not be
        // reversed. Nothing is asked or done for the order until that record is repaired or closed;
        // the damaged record itself is reported on its own.
        if let damaged = order.unreadable.first(where: { $0.attemptId != record.attemptId }) {
            lease.release()
            return PendingSaleReport(
                sale: sale, variant: variant, filter: CoreTransactionFilter(orderId: record.orderId), match: nil,
                outcome: .unreadable(reason: "another attempt of this order (\(damaged.attemptId)) cannot be read back (\(damaged.reason)): nothing was done for it, since that record may hold the answer of the sale a look-up would find"),
                removedFromStore: false)
        }
        // The answers the order's other attempts hold (a sale run again whose process ended before
        // its response was acknowledged, held by this run or by nobody): the sale they name may
        // have been shown approved, so it is never reversed for this attempt.
        var report = if let answer = record.answer {
            PendingSaleReport(sale: sale, variant: variant, filter: CoreTransactionFilter(orderId: record.orderId),
                              match: nil, outcome: .answered(answer), removedFromStore: false)
        } else {
            await resolve(sale, record: record, answeredElsewhere: siblings.compactMap(\.answer))
        }
        if report.isResolved, handOver == .acknowledged, record.answer == nil, case .answered(let a) = report.outcome,
           siblings.contains(where: { holding.contains($0.attemptId) && $0.answer?.uniqueRef == a.uniqueRef }) {
            // Its outcome is the answer of a record this run holds (the same sale): it leaves with
            // that record's acknowledgement, which takes it along — held here as well, it would
            // stop that acknowledgement.
            lease.release()
        } else if report.isResolved {
            (report.held, report.removedFromStore, report.storeError) = HeldRecord.settle(lease, handOver: handOver)
        } else {
            lease.release()
        }
        return report
    }
}
