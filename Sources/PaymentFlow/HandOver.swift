package import DeviceStore

/// The lease of a resolved record whose report has not been handed over yet.
package struct HeldRecord: Sendable, Hashable {
    package let lease: PendingLease
    /// The report is the order's sale as a look-up found it (``PendingLease/complete(settlingTheSale:)``).
    package var settlesSale = false
    package func complete() throws(DeviceStoreError) { try lease.complete(settlingTheSale: settlesSale) }

    /// The one hand-over step, for a payment's result and a recovery's report alike: the
    /// record is held until the caller acknowledges it, or removed now (`.onReturn`); a removal
    /// that fails keeps the record (its lease let go, for recovery) and says why. `settlesSale`: the report is the
    /// order's sale, found by the look-up (the order's other attempts of that sale leave with it).
    package static func settle(_ lease: PendingLease, handOver: ResultHandOver,
                               settlesSale: Bool = false) -> (held: HeldRecord?, removed: Bool, error: DeviceStoreError?) {
        guard handOver == .onReturn else { return (HeldRecord(lease: lease, settlesSale: settlesSale), false, nil) }
        do throws(DeviceStoreError) {
            try lease.complete(settlingTheSale: settlesSale)
            return (nil, true, nil)
        } catch {
            lease.release()
            return (nil, false, error)
        }
    }
    package static func == (a: Self, b: Self) -> Bool { a.lease === b.lease }
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(lease)) }
}
