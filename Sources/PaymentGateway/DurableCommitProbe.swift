import Foundation
public import Storage

/// The physical limit of a durable authorisation on this disk, for benchmarks: one small row
/// per transaction, each committed with the ledger's settings (WAL, `synchronous=FULL`), in a
/// file of its own in `directory`. Returns each commit's latency.
public enum DurableCommitProbe {
    public static func run(directory: String, commits: Int) throws(GatewayError) -> [Duration] {
        let path = (directory as NSString).appendingPathComponent("commit-probe-\(UUID().uuidString).sqlite3")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let conn = try SQLiteConnection(path: path, busyTimeout: .seconds(5))
        try conn.execute("CREATE TABLE probe (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)")
        let payload = String(repeating: "x", count: 400) // about one ledger row
        let clock = ContinuousClock()
        var out: [Duration] = []
        out.reserveCapacity(commits)
        for _ in 0..<commits {
            let start = clock.now
            try conn.transaction { () throws(GatewayError) in
                try conn.run("INSERT INTO probe (payload) VALUES (?)", [.text(payload)])
            }
            out.append(clock.now - start)
        }
        return out
    }
}
