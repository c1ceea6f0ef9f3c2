import Foundation

/// A few connections to one database, handed to one caller at a time, and threads of their
/// own for async callers (``run(_:)``, ``PostgresExecutor/shared``): libpq blocks its thread
/// for every round trip, which must never be a thread of Swift's cooperative pool.
///
/// Connections are made when first needed and remade after the server came back: a
/// connection that broke reconnects on its next query.
public final class PostgresPool: @unchecked Sendable {
    public let url: String
    public let size: Int
    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    private var opened = 0
    /// Where ``run(_:)`` runs its work: threads of their own, shared by every pool.
    public var executor: PostgresExecutor { PostgresExecutor.shared }

    /// Checks the server is reachable by opening one connection.
    public init(url: String, size: Int = 4) throws(PostgresError) {
        self.url = url
        self.size = max(1, size)
        let first = try PostgresConnection(url: url)
        idle = [first]
        opened = 1
    }

    /// Runs `body` with a connection of its own, on the calling thread (which blocks while the
    /// pool is busy and during each round trip).
    public func withConnection<T>(_ body: (PostgresConnection) throws(PostgresError) -> T) throws(PostgresError) -> T {
        condition.lock()
        var conn: PostgresConnection?
        while conn == nil {
            if let c = idle.popLast() {
                conn = c
            } else if opened < size {
                opened += 1
                condition.unlock()
                do {
                    conn = try PostgresConnection(url: url)
                } catch {
                    condition.lock()
                    opened -= 1
                    condition.signal()
                    condition.unlock()
                    throw PostgresError(.notSent, error.message)
                }
                condition.lock()
            } else {
                condition.wait()
            }
        }
        condition.unlock()
        defer {
            condition.lock()
            idle.append(conn!)
            condition.signal()
            condition.unlock()
        }
        return try body(conn!)
    }

    /// `withConnection` on the pool's own threads, for async callers.
    public func run<T: Sendable>(_ body: @Sendable (PostgresConnection) throws(PostgresError) -> T) async throws(PostgresError) -> T {
        try await withTaskExecutorPreference(executor) { () async throws(PostgresError) -> T in
            try self.withConnection(body)
        }
    }
}

/// Dedicated threads as a task executor: blocking database calls run here, never on the
/// cooperative pool.
public final class PostgresExecutor: TaskExecutor, @unchecked Sendable {
    /// One for the process (its threads live as long as it does).
    public static let shared = PostgresExecutor(threads: 8, name: "tapemu.postgres")

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    public init(threads: Int, name: String) {
        for i in 0..<max(1, threads) {
            let t = Thread { [self] in work() }
            t.name = "\(name).\(i)"
            t.start()
        }
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
