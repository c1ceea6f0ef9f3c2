public import Storage

/// An error of the device's store of pending payments (``PendingPaymentStore``): a store that
/// cannot be opened, read or written, a record owned by a live payment, a close that names no
/// record.
///
/// Tests compare ``code`` only (`==` too). The ``reason`` is for people; it never holds a full PAN.
public struct DeviceStoreError: Error, Hashable, Sendable, CustomStringConvertible, StorageFailure {
    /// What went wrong. Open: new codes may be added, so switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The store could not be read or written (I/O error, disk full, permissions, a data
        /// directory that is not a directory, a record gone under its lease). A failed write
        /// wrote nothing.
        public static let storage = Code("storage")
        /// The record is owned by a live payment, or another process held the store locked
        /// longer than the busy timeout. Nothing was written; retrying later is safe.
        public static let busy = Code("busy")
        /// The store file is not a database, is damaged, or holds a record that does not read
        /// back. Move it aside; tapemu never overwrites it.
        public static let corruptStore = Code("corruptStore")
        /// The store was written by a newer tapemu (its schema version is unknown here).
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// The storage cannot be written: a read-only file system or file. Nothing was
        /// written; reads still work.
        public static let readOnlyStorage = Code("readOnlyStorage")
        /// The data directory does not exist (and the call does not create one).
        public static let noDataDirectory = Code("noDataDirectory")
        /// The store this data directory held is missing, empty, or not this directory's.
        /// tapemu never creates it anew.
        public static let storeMissing = Code("storeMissing")
        /// No open record matches.
        public static let notFound = Code("notFound")
        /// The request is incomplete or ambiguous (a close without a reason, an order with
        /// several open attempts and none named).
        public static let invalidRequest = Code("invalidRequest")
    }

    private struct Backing: Sendable {
        let code: Code
        let reason: String
        let file: String
        let line: Int
    }
    private var backing: Backing

    public var code: Code { backing.code }
    public var reason: String { backing.reason }
    public var file: String { backing.file }
    public var line: Int { backing.line }

    init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        backing = Backing(code: code, reason: reason, file: file, line: line)
    }

    public var description: String { "\(code): \(reason)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension DeviceStoreError {
    /// A failure of the storage pieces (SQLite, the data directory, file locks) under the
    /// store: the same meaning, as a store error.
    public init(_ storage: StorageError) {
        let code: Code = switch storage.code {
        case .busy: .busy
        case .corrupt: .corruptStore
        case .readOnlyStorage: .readOnlyStorage
        case .noDataDirectory: .noDataDirectory
        case .storeMissing: .storeMissing
        default: .storage
        }
        self.init(code, storage.reason, file: storage.file, line: storage.line)
    }
}

/// The store's SQLite connection: its failures are ``DeviceStoreError``s.
typealias SQLiteConnection = SQLiteDatabase<DeviceStoreError>
