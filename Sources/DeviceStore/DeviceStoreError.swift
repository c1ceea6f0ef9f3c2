public import CodedErrors
public import Storage

/// An error of the device's store of pending payments (``PendingPaymentStore``): a store that
/// cannot be opened, read or written, a record owned by a live payment, a close that names no
/// record.
///
/// Tests compare ``code`` only (`==` too). The ``reason`` is for people; it never holds a full PAN.
public struct DeviceStoreError: StorageFailure {
    public typealias Code = ErrorCode<DeviceStoreError>
    public let core: ErrorCore<Code>
    public init(core: ErrorCore<Code>) { self.core = core }

    public var description: String { "\(code): \(reason)" }
}

/// What went wrong. Open: new codes may be added, so switch with a `default`.
extension ErrorCode<DeviceStoreError> {
    /// The store could not be read or written (I/O error, disk full, permissions, a data
    /// directory that is not a directory, a record gone under its lease). A failed write
    /// wrote nothing.
    public static var storage: Self { Self("storage") }
    /// The record is owned by a live payment, or another process held the store locked
    /// longer than the busy timeout. Nothing was written; retrying later is safe.
    public static var busy: Self { Self("busy") }
    /// The store file is not a database, is damaged, or holds a record that does not read
    /// back. Move it aside; tapemu never overwrites it.
    public static var corruptStore: Self { Self("corruptStore") }
    /// The store was written by a newer tapemu (its schema version is unknown here).
    public static var unsupportedVersion: Self { Self("unsupportedVersion") }
    /// The storage cannot be written: a read-only file system or file. Nothing was
    /// written; reads still work.
    public static var readOnlyStorage: Self { Self("readOnlyStorage") }
    /// The data directory does not exist (and the call does not create one).
    public static var noDataDirectory: Self { Self("noDataDirectory") }
    /// The store this data directory held is missing, empty, or not this directory's.
    /// tapemu never creates it anew.
    public static var storeMissing: Self { Self("storeMissing") }
    /// No open record matches.
    public static var notFound: Self { Self("notFound") }
    /// The request is incomplete or ambiguous (a close without a reason, an order with
    /// several open attempts and none named).
    public static var invalidRequest: Self { Self("invalidRequest") }
}

extension DeviceStoreError {
    public static var corruptCode: Code { .corruptStore }
}

/// The store's SQLite connection: its failures are ``DeviceStoreError``s.
typealias SQLiteConnection = SQLiteDatabase<DeviceStoreError>
