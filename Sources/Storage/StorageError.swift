/// A failure of the storage pieces (SQLite, file locks, the data directory): a file that cannot
/// be opened, read or written, a lock held elsewhere, a store the directory held that is gone.
///
/// Tests compare ``code`` only (`==` too). The ``reason`` is for people.
public struct StorageError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. Open: new codes may be added, so switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The file could not be read or written (I/O error, full disk, permissions, a
        /// constraint). A failed write wrote nothing.
        public static let storage = Code("storage")
        /// Another connection or process holds the file locked longer than the busy timeout.
        public static let busy = Code("busy")
        /// The file is not a database, is damaged, or the directory's manifest is.
        public static let corrupt = Code("corrupt")
        /// The storage cannot be written: a read-only file system or file.
        public static let readOnlyStorage = Code("readOnlyStorage")
        /// The data directory does not exist (and the call does not create one).
        public static let noDataDirectory = Code("noDataDirectory")
        /// A store the data directory held is missing, empty, or not this directory's.
        public static let storeMissing = Code("storeMissing")
    }

    public let code: Code
    public let reason: String
    public let file: String
    public let line: Int

    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    public var description: String { "\(code): \(reason)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// The error type of a store built on the storage pieces (the gateway's ledger, the device's
/// store): the storage's failures reach its callers in it, with their meaning.
public protocol StorageFailure: Error {
    init(_ storage: StorageError)
}

extension StorageFailure {
    /// A storage failure, made where it happens.
    package init(storage code: StorageError.Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.init(StorageError(code, reason, file: file, line: line))
    }

    /// Runs `body`, its storage failure as this error type.
    package static func mapping<T>(_ body: () throws(StorageError) -> T) throws(Self) -> T {
        do { return try body() } catch { throw Self(error) }
    }
}
