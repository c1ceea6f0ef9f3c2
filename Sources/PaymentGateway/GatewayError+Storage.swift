public import Storage

extension GatewayError: StorageFailure {
    /// A failure of the storage pieces (SQLite, the data directory, file locks) under the
    /// ledger, with the same meaning as a gateway error.
    public init(_ storage: StorageError) {
        let code: Code = switch storage.code {
        case .busy: .busy
        case .corrupt: .corruptLedger
        case .readOnlyStorage: .readOnlyStorage
        case .noDataDirectory: .noDataDirectory
        case .storeMissing: .storeMissing
        default: .storage
        }
        self.init(code, storage.reason, file: storage.file, line: storage.line)
    }
}

/// The ledger's SQLite connection: its failures are ``GatewayError``s.
package typealias SQLiteConnection = SQLiteDatabase<GatewayError>
