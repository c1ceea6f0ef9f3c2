public import Storage
import Cryptography

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

    /// Version 3 (MONEI's merchant API): whether a sale was captured (0: authorised only,
    /// `transactionType: AUTH`; every earlier row was captured at once, so the default is 1), its
    /// newest refund's amount and reason, and its cancellation reason. Additive: no row changes
    /// meaning. The merchant API key, which now also signs webhooks, is made with it (``migrate``).
    static let migrationV3 = """
        ALTER TABLE payments ADD COLUMN captured INTEGER NOT NULL DEFAULT 1 CHECK (captured IN (0, 1));
        ALTER TABLE payments ADD COLUMN last_refund_amount INTEGER;
        ALTER TABLE payments ADD COLUMN last_refund_reason TEXT;
        ALTER TABLE payments ADD COLUMN cancellation_reason TEXT;
        """

    /// The steps from each version to the next, in order: ``steps``[v - 1] takes version v to
    /// v + 1. A later version appends its own step.
    static let steps: [(to: Int, sql: String)] = [(2, migrationV2), (3, migrationV3), (4, migrationV4), (5, migrationV5)]

    /// Brings a ledger to ``schemaVersion`` one step at a time, each in its own transaction
    /// (checked again inside the write lock: another process may have migrated it first), so a
    /// crash between steps leaves a ledger of the earlier version, which the next open migrates
    /// on. A read-only open of an old ledger reads it as it is (its payments and outbox; the
    /// columns of later versions read as their defaults); what version 2 added (delivery state)
    /// throws until a writable open upgrades it.
    static func migrate(_ conn: SQLiteConnection, path: String, writable: Bool) throws(GatewayError) {
        guard try conn.userVersion < schemaVersion else {
            let tables = try conn.tableNames()
            for table in ["webhook_attempts", "terminal_orders", "request_log"] where !tables.contains(table) {
                throw GatewayError(.corruptLedger, "\(path) is damaged: its \(table) table is gone")
            }
            return
        }
        guard writable else { return }
        for step in steps {
            try conn.transaction { () throws(GatewayError) in
                guard try conn.userVersion == step.to - 1 else { return }
                try conn.execute(step.sql)
                if step.to == 3 { try makeMerchantAPIKey(conn) }
                try conn.execute("PRAGMA user_version = \(step.to)")
            }
        }
    }

    /// The merchant API key's setting, made once (kept when a service made it before).
    static func makeMerchantAPIKey(_ conn: SQLiteConnection) throws(GatewayError) {
        try conn.run("INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)",
                     [.text(MerchantAPIKey.settingName), .blob(Crypto.randomBytes(32))])
    }
}
