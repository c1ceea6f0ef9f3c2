public import Storage

extension GatewayError: StorageFailure {
    public static var corruptCode: Code { .corruptLedger }
}

/// The ledger's SQLite connection: its failures are ``GatewayError``s.
package typealias SQLiteConnection = SQLiteDatabase<GatewayError>
