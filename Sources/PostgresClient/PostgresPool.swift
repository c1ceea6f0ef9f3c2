import Foundation
public import Timing

/// A few connections to one database, handed to one caller at a time, and threads of their
/// own for async callers (``run(_:)``, ``Timing/BlockingExecutor/postgres``): libpq blocks its thread
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
    public var executor: BlockingExecutor { BlockingExecutor.postgres }

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
                    throw error.with(code: .notSent)
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
        try await executor.run { () async throws(PostgresError) -> T in
            try self.withConnection(body)
        }
    }
}

extension BlockingExecutor {
    /// The PostgreSQL client's threads for async callers of ``PostgresPool/run(_:)``.
    public static let postgres = BlockingExecutor(threads: 8, name: "tapemu.postgres")
}
