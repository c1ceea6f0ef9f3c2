import Synchronization

/// A sale as the ledger recorded it, or the stored one its orderId already had (`isReplay`).
public struct SaleOutcome: Sendable {
    public var payment: Payment
    public var isReplay: Bool

    public init(payment: Payment, isReplay: Bool) {
        self.payment = payment
        self.isReplay = isReplay
    }
}

/// Group commit of sales: concurrent authorisations share one write transaction and one
/// durable commit (`synchronous=FULL`: one fsync for the batch instead of one per sale).
///
/// No thread of its own. The first caller when no batch runs becomes the *leader*: it takes
/// every waiting sale (up to ``maxBatch``) with its own, writes them with
/// ``LedgerStore/storeSales(_:beforeCommit:)`` — one transaction, each sale in its savepoint,
/// each decided as if alone and in arrival order, on SQLite (``Ledger/recordSales(_:beforeCommit:)``)
/// as on PostgreSQL — commits, and only then answers them all. Callers that arrive meanwhile wait
/// suspended (no thread held); when the leader is done it hands the lead to the first of them,
/// which writes the next batch, so a leader's own answer never waits for more than its batch.
///
/// A waiting caller is not cancellable: once queued its sale is in the next commit, and its
/// answer says what that commit did.
final class SaleGroupCommit: Sendable {
    /// The most sales in one transaction.
    static let maxBatch = 128

    private enum Turn: Sendable {
        case lead
        case done(Result<SaleOutcome, GatewayError>)
    }

    private struct Waiter {
        var sale: Payment
        var fingerprint: String
        var claim: TerminalClaim?
        var continuation: CheckedContinuation<Turn, Never>
    }

    private struct State {
        var leading = false
        var queue: [Waiter] = []
        var batches = 0
        var sales = 0
        var largest = 0
        /// Tests: a leader waits for this many waiters before it takes its batch.
        var gate: Int?
        var gateWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        /// Called with a batch's orderIds after its sales were written, before its COMMIT.
        var beforeCommit: (@Sendable ([String]) -> Void)?
    }

    private let state = Mutex(State())

    /// Batches committed (or failed), sales in them, and the largest batch so far.
    var statistics: (batches: Int, sales: Int, largest: Int) {
        state.withLock { ($0.batches, $0.sales, $0.largest) }
    }

    /// Records `sale` (with its terminal's `claim` on the orderId, in its savepoint) in the next
    /// group commit; returns after that commit.
    func record(_ sale: Payment, fingerprint: String, claim: TerminalClaim? = nil,
                in ledger: any LedgerStore) async throws(GatewayError) -> SaleOutcome {
        let turn = await withCheckedContinuation { (c: CheckedContinuation<Turn, Never>) in
            let lead = state.withLock { s -> Bool in
                if s.leading {
                    s.queue.append(Waiter(sale: sale, fingerprint: fingerprint, claim: claim, continuation: c))
                    s.gateWatchers.removeAll { w in
                        guard s.queue.count >= w.count else { return false }
                        w.continuation.resume()
                        return true
                    }
                    return false
                }
                s.leading = true
                return true
            }
            if lead { c.resume(returning: .lead) }
        }
        switch turn {
        case .done(let result):
            return try result.get()
        case .lead:
            return try await lead(sale, fingerprint: fingerprint, claim: claim, ledger).get()
        }
    }

    private func lead(_ sale: Payment, fingerprint: String, claim: TerminalClaim?,
                      _ ledger: any LedgerStore) async -> Result<SaleOutcome, GatewayError> {
        if let n = state.withLock({ $0.gate }) { await queued(n) }
        let (others, hook) = state.withLock { s -> ([Waiter], (@Sendable ([String]) -> Void)?) in
            let n = min(s.queue.count, Self.maxBatch - 1)
            let taken = Array(s.queue.prefix(n))
            s.queue.removeFirst(n)
            return (taken, s.beforeCommit)
        }
        var results = ledger.storeSales([(sale, fingerprint, claim)] + others.map { ($0.sale, $0.fingerprint, $0.claim) },
                                        beforeCommit: hook)
        if results.count != others.count + 1 {
            // A store that broke the contract: nobody is told a sale was recorded.
            results = Array(repeating: .failure(GatewayError(.serverError, "the ledger answered \(results.count) of \(others.count + 1) sales of a batch; whether they were recorded is unknown")),
                            count: others.count + 1)
        }
        let next = state.withLock { s -> Waiter? in
            s.batches += 1
            s.sales += results.count
            s.largest = max(s.largest, results.count)
            if s.queue.isEmpty {
                s.leading = false
                return nil
            }
            return s.queue.removeFirst()
        }
        for (w, r) in zip(others, results.dropFirst()) { w.continuation.resume(returning: .done(r)) }
        next?.continuation.resume(returning: .lead)
        return results[0]
    }

    /// Calls `hook` with the orderIds of every batch after its sales were written and before
    /// its commit (nil: none).
    func setBeforeCommit(_ hook: (@Sendable ([String]) -> Void)?) {
        state.withLock { $0.beforeCommit = hook }
    }

    /// Tests: every leader waits until `count` sales wait behind it before taking its batch
    /// (nil: never waits).
    func setGate(_ count: Int?) {
        state.withLock { $0.gate = count }
    }

    /// Returns once `count` sales wait in the queue.
    func queued(_ count: Int) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.queue.count >= count { return true }
                s.gateWatchers.append((count, c))
                return false
            }
            if now { c.resume() }
        }
    }
}
