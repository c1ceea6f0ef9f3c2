extension Ledger {
    /// Version 2: the delivery state of each webhook (next try, last try and status, the
    /// lease of the deliverer that holds it, when it gave up) and one row per attempt.
    static let migrationV2 = """
        ALTER TABLE webhooks ADD COLUMN next_attempt_at INTEGER;
        ALTER TABLE webhooks ADD COLUMN last_attempt_at INTEGER;
        ALTER TABLE webhooks ADD COLUMN last_status INTEGER;
        ALTER TABLE webhooks ADD COLUMN lease_owner TEXT;
        ALTER TABLE webhooks ADD COLUMN lease_until INTEGER;
        ALTER TABLE webhooks ADD COLUMN gave_up_at INTEGER;
        CREATE TABLE webhook_attempts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            webhook_id INTEGER NOT NULL REFERENCES webhooks(id),
            attempt INTEGER NOT NULL,
            started_at INTEGER NOT NULL,
            finished_at INTEGER NOT NULL,
            status INTEGER,
            error TEXT,
            next_attempt_at INTEGER,
            fault TEXT
        );
        CREATE INDEX webhook_attempts_webhook ON webhook_attempts(webhook_id);
        """

    /// Brings an older ledger (version 1 on) to ``schemaVersion``, step by step (``migrations``), in one transaction (checked again inside
    /// the write lock: another process may have migrated it first). A read-only open of an old
    /// ledger reads it as it is (its payments and outbox); what version 2 added (delivery
    /// state) throws until a writable open upgrades it.
    static func migrate(_ conn: SQLiteConnection, path: String, writable: Bool) throws(GatewayError) {
        guard try conn.userVersion < schemaVersion else {
            let tables = try conn.tableNames()
            for table in ["webhook_attempts", "terminal_orders"] where !tables.contains(table) {
                throw GatewayError(.corruptLedger, "\(path) is damaged: its \(table) table is gone")
            }
            return
        }
        guard writable else { return }
        try conn.transaction { () throws(GatewayError) in
            // Each step in turn, from the version the file has (read again inside the lock).
            for (from, sql) in migrations {
                guard try conn.userVersion == from else { continue }
                try conn.execute(sql)
                try conn.execute("PRAGMA user_version = \(from + 1)")
            }
        }
    }

    /// The steps, in order: the version a step upgrades from, and its statements.
    static let migrations: [(from: Int, sql: String)] = [(1, migrationV2), (2, migrationV3), (3, migrationV4)]

    /// Version 3 (the monei-api change's; empty until it lands).
    static let migrationV3 = ""
}
