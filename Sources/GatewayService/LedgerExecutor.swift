import Timing

extension BlockingExecutor {
    /// The gateway service's threads for its ledger calls (SQLite's lock and fsync per commit,
    /// PostgreSQL's round trips): requests and webhook delivery run there, off the cooperative pool.
    static let ledger = BlockingExecutor(threads: 4, name: "tapemu.ledger")
}
