import Foundation

/// Dedicated threads for the gateway's blocking work: the ledger's SQLite calls block their
/// thread (a lock, then an fsync per commit), and the service runs them with this executor as
/// the task's preference so they never hold a thread of Swift's cooperative pool — on a 2-core
/// machine that pool has two threads, which 32 waiting authorisations would otherwise fill.
final class LedgerExecutor: TaskExecutor, @unchecked Sendable {
    /// One for the process: its threads live as long as it does.
    static let shared = LedgerExecutor(threads: 4)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    init(threads: Int) {
        for i in 0..<max(1, threads) {
            let t = Thread { [self] in run() }
            t.name = "tapemu.ledger.\(i)"
            t.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
