public import PaymentGateway

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
        /// No transaction: the sale never reached the gateway. Nothing to resolve; the sale may
        /// run again (``PendingSaleReport/sale``).
        case notFound
        /// Seed `003`: a transaction was found for the orderId, but its amount or card suffix is
        /// not the sale's. Nothing was reversed; the sale stays pending for a person to look at.
        case mismatch(reason: String)
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

    /// Resolved: the outcome is known and nothing more is to be done for it.
    public var isResolved: Bool {
        switch outcome {
        case .reversed, .alreadyReversed, .declined, .notFound: true
        case .mismatch, .failed: false
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
///    code not `A` → declined, nothing to reverse; code `A` → authorised.
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

        // Step 3: the first transaction.
        guard let match = result.transactionSummary.first else {
            return report(.notFound)
        }
        if variant == .seed003 {
            guard match.amount == sale.amount else {
                return report(.mismatch(reason: "the transaction's amount \(match.amount) is not the sale's \(sale.amount)"),
                              match: match)
            }
            guard let cardNumber = match.cardNumber, cardNumber.count >= 4, let last4 = sale.panLastFour,
                  cardNumber.hasSuffix(last4) else {
                return report(.mismatch(reason: "the transaction's card \(match.cardNumber ?? "(none)") does not end in the sale's \(sale.panLastFour ?? "(unknown)")"),
                              match: match)
            }
        }
        guard match.code == TransactionCode.approved.rawValue else {
            return report(.declined(code: match.code), match: match)
        }

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
    /// resolved ones. Sales in `skipping` (a sale still in progress) are left alone; MONEI-style
    /// pending payments too (they resolve by webhook and charges query). A stored sale that does
    /// not read back as a `CoreSale` is reported as failed and kept.
    public func resolvePending(skipping: Set<String> = []) async throws(GatewayError) -> [PendingSaleReport] {
        var reports: [PendingSaleReport] = []
        for pending in try store.all() where pending.origin == .coreAPI && !skipping.contains(pending.orderId) {
            guard let sale = CoreSale(pending: pending) else {
                let placeholder = CoreSale(amount: pending.amount, currency: pending.currency, orderId: pending.orderId)
                reports.append(PendingSaleReport(
                    sale: placeholder, variant: variant, filter: CoreTransactionFilter(orderId: pending.orderId), match: nil,
                    outcome: .failed(CoreRestError(.invalidParameters, "the stored sale cannot be read back")),
                    removedFromStore: false))
                continue
            }
            var report = await resolve(sale)
            if report.isResolved {
                report.removedFromStore = (try? store.remove(orderId: pending.orderId)) ?? false
            }
            reports.append(report)
        }
        return reports
    }
}
