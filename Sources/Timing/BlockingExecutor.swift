import Foundation
import Synchronization

/// Dedicated threads as a task executor, for work that blocks its thread for long or often (a
/// database's calls: SQLite's lock and fsync, libpq's network round trips). A task that prefers
/// it (`withTaskExecutorPreference(executor) { … }`) runs there, never holding a thread of
/// Swift's cooperative pool — on a 2-core machine that pool has two threads, which a few waiting
/// database calls would otherwise fill. For one call, ``withBlockingCall(_:)`` is enough.
public final class BlockingExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    /// The executor's threads, for ``isCurrent``.
    private let threadIDs = Mutex<[pthread_t]>([])

    /// Starts `threads` threads named `name.0`, `name.1`…; they live as long as the process.
    public init(threads: Int, name: String) {
        for i in 0..<max(1, threads) {
            // Named from inside: on Linux, Foundation sets a thread's system name only from the
            // thread itself, so a name given before `start()` is not what `perf`, `top -H` or
            // `Thread.current.name` see (they saw the creating thread's name).
            let t = Thread { [self] in
                Thread.current.name = "\(name).\(i)"
                self.threadIDs.withLock { $0.append(pthread_self()) }
                work()
            }
            t.start()
        }
    }

    /// Whether the calling thread is one of this executor's (by thread identity: a thread's name,
    /// as Foundation's `Thread.current` or the kernel reports it, has not been a reliable witness).
    public var isCurrent: Bool {
        let me = pthread_self()
        return threadIDs.withLock { $0.contains { pthread_equal($0, me) != 0 } }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

extension BlockingExecutor {
    /// Runs `body` on this executor's threads, from its first line (BlockingExecutorRunTests:
    /// a body that never suspends, 500 times, by thread identity). `withTaskExecutorPreference`
    /// moves the task there itself; an earlier `Task.yield()` here, meant to force the move, was
    /// a second enqueue on every gateway request, made on the word of a thread's name, which
    /// Foundation's `Thread.current` gives wrongly in async code.
    public func run<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        try await withTaskExecutorPreference(self) { () async throws(Failure) -> T in
            try await body()
        }
    }
}
