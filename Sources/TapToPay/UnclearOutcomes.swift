public import PaymentGateway

/// What the charges query found for one payment whose outcome was unknown.
public struct UnclearOutcomeReport: Sendable {
    public enum Finding: Sendable {
        /// The gateway holds the payment: its status (approved or declined) is the outcome.
        case found(Payment)
        /// No payment shows. This does **not** prove the card was not charged (seed `000`, step
        /// 4): the record stays; contact support with the orderId before charging again.
        case notFound
        /// The query failed; the record stays for a later try.
        case failed(GatewayError)
    }

    /// The pending record as it was stored before the submission point.
    public var pending: PendingPayment
    public var finding: Finding
    /// Whether the record left the device (only when the payment was found).
    public var removedFromStore: Bool
}

extension TapToPay {
    /// Seed `000`'s "Unclear outcome" process for every payment this device left pending
    /// (`outcomeUnknown`), oldest first: find the orderId with the charges query; a payment that
    /// shows is the outcome, and its record leaves the device; when none shows, the record stays
    /// (that does not prove the card was not charged). Never retries and never charges.
    ///
    /// Only MONEI-style records are looked at; CoreAPI-style sales have their own recovery
    /// (``PendingSaleResolver``). Throws only when the device's store cannot be read.
    public func resolveUnclearOutcomes() async throws(GatewayError) -> [UnclearOutcomeReport] {
        let store = configuration.pendingStore
        let gateway = configuration.gateway
        let options = GatewayRequestOptions(timeout: configuration.timeouts.gatewayRequest)
        var reports: [UnclearOutcomeReport] = []
        for pending in try store.all() where pending.origin == .tapToPay {
            let finding: UnclearOutcomeReport.Finding
            do throws(GatewayError) {
                let sales = try await gateway.charges(orderId: pending.orderId, options: options)
                    .filter { $0.kind == .sale }
                finding = sales.first.map { .found($0) } ?? .notFound
            } catch {
                finding = .failed(error)
            }
            var removed = false
            if case .found = finding {
                removed = (try? store.remove(orderId: pending.orderId)) ?? false
            }
            reports.append(UnclearOutcomeReport(pending: pending, finding: finding, removedFromStore: removed))
        }
        return reports
    }
}
