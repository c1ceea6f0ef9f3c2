public import DeviceStore
public import PaymentGateway
public import PaymentFlow

/// What the charges query found for one payment whose outcome was unknown.
public struct UnclearOutcomeReport: Sendable {
    public enum Finding: Sendable {
        /// The gateway holds this attempt's payment: its status (approved or declined) is the
        /// outcome.
        case found(Payment)
        /// The gateway had answered before the process ended, and the answer was stored in the
        /// record but never handed over: this is the outcome (no look-up was needed).
        case answered(PendingPayment.Answer)
        /// No payment shows. This does **not** prove the card was not charged (seed `000`, step
        /// 4): the record stays; contact support with the orderId before charging again, then
        /// close it (``PendingPaymentStore/close(orderId:attemptId:reason:at:)``).
        case notFound
        /// Another payment holds this order id (a different amount, currency or card): it is
        /// not this attempt's. The record stays for a person to look at.
        case otherPayment(Payment, reason: String)
        /// A payment in progress owns the record: it was left alone.
        case inProgress
        /// The record cannot be read back, or its lease cannot be taken (damage): reported by its
        /// order id, left as it is.
        case unreadable(reason: String)
        /// The query failed; the record stays for a later try.
        case failed(GatewayError)
    }

    /// The pending record as it was stored before the submission point (for an unreadable
    /// record: its order id and attempt id only).
    public var pending: PendingPayment
    public var finding: Finding
    /// Whether the record left the device (only when the outcome is known).
    public var removedFromStore: Bool
    /// Why the record could not be removed although the outcome is known (it stays; a later
    /// run reports it again).
    public var storeError: DeviceStoreError?
    /// With ``ResultHandOver/acknowledged``: the lease of a resolved record, kept until
    /// ``acknowledge()``.
    var held: HeldRecord?

    /// The outcome is known: the record leaves the device (has left, or leaves on
    /// ``acknowledge()``).
    public var isResolved: Bool {
        switch finding {
        case .found, .answered: storeError == nil
        case .notFound, .otherPayment, .inProgress, .unreadable, .failed: false
        }
    }

    /// The report has been handed over (written where it had to go): the resolved record
    /// leaves the device. Only with ``ResultHandOver/acknowledged``; a no-op otherwise.
    public func acknowledge() throws(DeviceStoreError) {
        try held?.complete()
    }
}

extension TapToPay {
    /// Seed `000`'s "Unclear outcome" process for every payment this device left pending
    /// (`outcomeUnknown`, or a result that was never handed over), oldest first: find the
    /// orderId with the charges query; a payment that shows *and is this attempt's* (same
    /// amount, currency and card) is the outcome, and its record leaves the device; when none
    /// shows, the record stays (that does not prove the card was not charged).
    ///
    /// Records owned by a payment in progress are left alone, recoveries on one data directory
    /// run one at a time, and an unreadable record — or one whose lease cannot be taken — is
    /// reported without blocking the others.
    /// A resolved record leaves the device when the reports are returned (`.onReturn`), or — for
    /// a caller that must write them somewhere first — when each report is acknowledged
    /// (``UnclearOutcomeReport/acknowledge()``); until then it stays, owned by this process.
    /// Never retries and never charges. Only MONEI-style records are looked at; CoreAPI-style
    /// sales have their own recovery (``PendingSaleResolver``). Throws only when the device's
    /// store cannot be read at all.
    public func resolveUnclearOutcomes(handOver: ResultHandOver = .onReturn) async throws(DeviceStoreError) -> [UnclearOutcomeReport] {
        let store = configuration.pendingStore
        return try await store.withRecovery { () async throws(DeviceStoreError) -> [UnclearOutcomeReport] in
            let scan = try store.scan()
            var reports: [UnclearOutcomeReport] = scan.unreadable.map {
                UnclearOutcomeReport(pending: .unreadable($0), finding: .unreadable(reason: $0.reason), removedFromStore: false)
            }
            for pending in scan.records where pending.origin == .tapToPay {
                do throws(DeviceStoreError) {
                    if let report = try await resolveRecord(pending, handOver: handOver) { reports.append(report) }
                } catch {
                    // Its lease cannot be taken (a damaged lease file, a lease folder that cannot
                    // be written): nothing was done for it. It is reported by its order id, and the
                    // others still resolve — a throw here would lose the reports of the payments
                    // already found and removed from the device.
                    reports.append(UnclearOutcomeReport(
                        pending: pending, finding: .unreadable(reason: "its record cannot be taken over (\(error.reason)): nothing was done for it"),
                        removedFromStore: false))
                }
            }
            return reports
        }
    }

    /// One pending payment of ``resolveUnclearOutcomes(handOver:)``: nil when it left the store
    /// meanwhile. Throws only before the gateway was asked (its lease).
    private func resolveRecord(_ pending: PendingPayment,
                               handOver: ResultHandOver) async throws(DeviceStoreError) -> UnclearOutcomeReport? {
        let store = configuration.pendingStore
        guard let lease = try store.claim(pending.attemptId) else {
            guard try store.record(attemptId: pending.attemptId) != nil else { return nil }
            return UnclearOutcomeReport(pending: pending, finding: .inProgress, removedFromStore: false)
        }
        let record = lease.record
        let finding: UnclearOutcomeReport.Finding
        if let answer = record.answer {
            finding = .answered(answer)
        } else {
            let options = GatewayRequestOptions(timeout: configuration.timeouts.gatewayRequest)
            do throws(GatewayError) {
                let sales = try await configuration.gateway.charges(orderId: record.orderId, options: options).filter { $0.kind == .sale }
                if let sale = sales.first {
                    if !sale.captured {
                        // An authorisation only (MONEI AUTH, made by the merchant's backend): a
                        // terminal's sale is captured at once, so this is not this attempt's.
                        finding = .otherPayment(sale, reason: "it is an authorisation not captured (\(MoneiStatus.of(sale))), which a terminal sale never is")
                    } else if let reason = record.mismatch(orderId: sale.orderId, amount: sale.amount, currency: sale.currency,
                                                    last4: sale.last4, brand: sale.cardBrand.rawValue, uniqueRef: sale.uniqueRef) {
                        finding = .otherPayment(sale, reason: reason)
                    } else {
                        finding = .found(sale)
                    }
                } else {
                    finding = .notFound
                }
            } catch {
                finding = .failed(error)
            }
        }
        var report = UnclearOutcomeReport(pending: record, finding: finding, removedFromStore: false)
        switch finding {
        case .found:
            // The order's sale, which matches this attempt: the order's other attempts of the same
            // sale (the CoreAPI face's too) have this outcome and leave with it.
            (report.held, report.removedFromStore, report.storeError) = HeldRecord.settle(lease, handOver: handOver, settlesSale: true)
        case .answered:
            (report.held, report.removedFromStore, report.storeError) = HeldRecord.settle(lease, handOver: handOver)
        case .notFound, .otherPayment, .failed, .inProgress, .unreadable:
            lease.release()
        }
        return report
    }
}

extension PendingPayment {
    /// A stand-in for a record that cannot be read back: its order id and attempt id.
    static func unreadable(_ u: UnreadablePendingRecord) -> PendingPayment {
        PendingPayment(orderId: u.orderId, origin: .tapToPay, amount: 0, currency: "", createdAt: .distantPast,
                       attemptId: u.attemptId)
    }
}
