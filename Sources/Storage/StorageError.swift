public import CodedErrors

/// A failure of the storage pieces (SQLite, file locks, the data directory): a file that cannot
/// be opened, read or written, a lock held elsewhere, a store the directory held that is gone.
///
/// Tests compare ``code`` only (`==` too). The ``reason`` is for people.
public struct StorageError: PlainCodedError {
    public typealias Code = ErrorCode<StorageError>
    public let core: ErrorCore<Code>
    public init(core: ErrorCore<Code>) { self.core = core }

    public var description: String { "\(code): \(reason)" }
}

extension ErrorCode<StorageError> {
    /// The file could not be read or written (I/O error, full disk, permissions, a
    /// constraint). A failed write wrote nothing.
    public static var storage: Self { Self("storage") }
    /// Another connection or process holds the file locked longer than the busy timeout.
    public static var busy: Self { Self("busy") }
    /// The file is not a database, is damaged, or the directory's manifest is.
    public static var corrupt: Self { Self("corrupt") }
    /// The storage cannot be written: a read-only file system or file.
    public static var readOnlyStorage: Self { Self("readOnlyStorage") }
    /// The data directory does not exist (and the call does not create one).
    public static var noDataDirectory: Self { Self("noDataDirectory") }
    /// A store the data directory held is missing, empty, or not this directory's.
    public static var storeMissing: Self { Self("storeMissing") }
}

/// The error type of a store built on the storage pieces (the gateway's ledger, the device's
/// store): the storage's failures reach its callers in it, with their meaning. Such a type has
/// codes named as the storage's (`storage`, `busy`, `readOnlyStorage`, `noDataDirectory`,
/// `storeMissing`) and its own name for a damaged file.
public protocol StorageFailure: PlainCodedError {
    /// The store's code for a file that is not a database or is damaged (the storage's `corrupt`).
    static var corruptCode: Code { get }
}

extension StorageFailure {
    /// A failure of the storage pieces (SQLite, the data directory, file locks) under the
    /// store, as the store's error of the same meaning.
    public init(_ storage: StorageError) {
        let code: Code = switch storage.code {
        case .corrupt: Self.corruptCode
        case .busy, .readOnlyStorage, .noDataDirectory, .storeMissing: Code(storage.code.name)
        default: Code(StorageError.Code.storage.name)
        }
        self.init(core: ErrorCore(code, storage.reason, file: storage.file, line: storage.line))
    }

    /// A storage failure, made where it happens.
    package init(storage code: StorageError.Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.init(StorageError(code, reason, file: file, line: line))
    }

    /// Runs `body`, its storage failure as this error type.
    package static func mapping<T>(_ body: () throws(StorageError) -> T) throws(Self) -> T {
        do { return try body() } catch { throw Self(error) }
    }
}
