// Every call into libsqlite3 lives in this file; nothing else imports CSQLite.
import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// A value bound to or read from a statement.
package enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])

    package var int64: Int64? { if case .integer(let v) = self { return v }; return nil }
    package var int: Int? { int64.flatMap { Int(exactly: $0) } }
    package var string: String? { if case .text(let s) = self { return s }; return nil }
    package var bytes: [UInt8]? {
        switch self {
        case .blob(let b): return b
        case .text(let s): return Array(s.utf8)
        default: return nil
        }
    }
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    package init(stringLiteral value: String) { self = .text(value) }
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(_ s: String?) { self = s.map { .text($0) } ?? .null }
    package init(_ i: Int) { self = .integer(Int64(i)) }
    package init(_ i: Int64?) { self = i.map { .integer($0) } ?? .null }
    package init(_ b: Bool) { self = .integer(b ? 1 : 0) }
}

/// One row of a result, by column position.
package struct SQLRow: Sendable {
    package var values: [SQLValue]
    package subscript(_ i: Int) -> SQLValue { i < values.count ? values[i] : .null }
}

/// One SQLite connection with a cache of prepared statements; its failures are
/// ``StorageError``s (a store sees them as its own error type through ``SQLiteDatabase``). Not
/// thread-safe: a store keeps it inside a mutex.
package final class SQLiteHandle {
    private var db: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    package let path: String

    /// How a connection opens its file.
    package enum OpenMode: Sendable, Equatable {
        /// Read and write; the file is created when missing (only the data directory creates).
        case readWriteCreate
        /// Read and write an existing file.
        case readWrite
        /// Read only. On a read-only file system (where SQLite cannot make the WAL index) the
        /// file is opened immutable: nobody can change it there.
        case readOnly
        /// Read only, beside a connection of this process that writes the file: a WAL reader,
        /// which sees the last commit when each statement starts and never waits for the
        /// writer. Never opened immutable (the file changes under it).
        case reader
    }

    /// Opens the database at `path` in WAL mode with durable commits (`synchronous=FULL`) and a
    /// busy timeout. A file that is not a database throws `corrupt`.
    package init(path: String, busyTimeout: Duration, mode: OpenMode = .readWriteCreate) throws(StorageError) {
        self.path = path
        self.mode = mode
        do {
            try open(path, busyTimeout: busyTimeout, immutable: false)
        } catch where mode == .readOnly && (error.code == .storage || error.code == .readOnlyStorage) {
            // No -shm can be made beside a WAL file on a read-only mount: read it as immutable.
            sqlite3_close_v2(db)
            db = nil
            try open(path, busyTimeout: busyTimeout, immutable: true)
        }
    }

    private func open(_ path: String, busyTimeout: Duration, immutable: Bool) throws(StorageError) {
        var handle: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        switch mode {
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readOnly, .reader: flags |= SQLITE_OPEN_READONLY
        }
        let uri = Self.fileURI(path, immutable: immutable)
        let rc = sqlite3_open_v2(uri, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            let errno = handle.map { sqlite3_system_errno($0) } ?? 0
            sqlite3_close_v2(handle)
            throw Self.error(rc, "cannot open \(path): \(message)", systemErrno: errno)
        }
        db = handle
        sqlite3_extended_result_codes(handle, 1)
        let ms = busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(handle, Int32(clamping: ms))
        if mode == .readOnly || mode == .reader {
            // The first statement reads the file header: a file that is not a database fails here.
            _ = try query("SELECT count(*) FROM sqlite_master")
            return
        }
        let journal = try query("PRAGMA journal_mode=WAL").first?[0].string?.lowercased()
        guard journal == "wal" else {
            throw StorageError(.storage, "\(path) cannot use write-ahead logging (journal mode \(journal ?? "unknown"))")
        }
        try execute("PRAGMA synchronous=FULL")
        try execute("PRAGMA foreign_keys=ON")
        // A bounded WAL: SQLite checkpoints (passively) after the commit that takes the WAL past
        // `walCheckpointPages`, and truncates the file back to `walSizeLimit` after a checkpoint
        // — by default it lets the WAL reach 1000 pages (4 MB) and keeps that size for good, which
        // filled a small volume by itself (issue 33).
        try execute("PRAGMA wal_autocheckpoint=\(Self.walCheckpointPages)")
        try execute("PRAGMA journal_size_limit=\(Self.walSizeLimit)")
    }

    /// WAL pages after which a commit checkpoints (about 256 KiB with 4 KiB pages).
    package static let walCheckpointPages = 64
    /// The size the WAL file is truncated back to after a checkpoint.
    package static let walSizeLimit = 256 * 1024

    // MARK: Reserve space (a full disk never jams the WAL)

    /// A file of `reserveBytes` beside the database, held while there is room and removed when a
    /// write meets a full disk, so that the checkpoint that moves the WAL into the database (which
    /// may need to grow) can run and the WAL be truncated: without it a WAL that filled the disk
    /// could never be checkpointed, and every write failed for good, also after a restart.
    package private(set) var reservePath: String?
    package private(set) var reserveBytes = 0
    /// How often a full disk released the reserve (tests).
    package private(set) var reserveReleases = 0

    /// Holds `bytes` of reserve in `path` (made now when there is room for twice that, else at
    /// a later write when there is).
    package func holdReserve(at path: String, bytes: Int) {
        reservePath = path
        reserveBytes = bytes
        refillReserve()
    }

    /// Whether the reserve file is there (tests).
    package var holdsReserve: Bool {
        guard let reservePath else { return false }
        var st = stat()
        return stat(reservePath, &st) == 0 && Int(st.st_size) >= reserveBytes
    }

    /// Makes the reserve when it is missing and the volume has room for twice its size (never
    /// the last free bytes a write needs).
    private func refillReserve() {
        guard let reservePath, reserveBytes > 0, !holdsReserve else { return }
        var vfs = statvfs()
        // The volume of the directory (the reserve file is not there yet).
        let directory = reservePath.lastIndex(of: "/").map { String(reservePath[..<$0]) } ?? "."
        guard statvfs(directory.isEmpty ? "/" : directory, &vfs) == 0, Int(vfs.f_bavail) * Int(vfs.f_frsize) >= 2 * reserveBytes else { return }
        let fd = Glibc.open(reservePath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let rc = posix_fallocate(fd, 0, off_t(reserveBytes))
        if rc == 0 { _ = fsync(fd) }
        close(fd)
        if rc != 0 { unlink(reservePath) }
    }

    /// A write met a full disk: gives the reserve back and checkpoints the WAL into the database
    /// (truncating it), so the space the WAL held is free again. Best effort: the write that
    /// failed is answered as failed ("nothing was written") either way.
    private func reclaimAfterFullDisk() {
        if let reservePath, unlink(reservePath) == 0 { reserveReleases += 1 }
        _ = try? execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// The last failure was a full disk (SQLITE_FULL, or the system's ENOSPC).
    private var lastFailureWasFull = false

    /// A `file:` URI for `path` (percent-encoding what a URI cannot hold as is).
    private static func fileURI(_ path: String, immutable: Bool) -> String {
        var out = "file:"
        for b in path.utf8 {
            switch b {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x21, 0x7F...:
                out += String(format: "%%%02X", b)
            default:
                out.unicodeScalars.append(Unicode.Scalar(b))
            }
        }
        return immutable ? out + "?immutable=1" : out
    }

    package let mode: OpenMode

    deinit {
        for s in statements.values { sqlite3_finalize(s) }
        sqlite3_close_v2(db)
    }

    /// Runs SQL text that may hold several statements and returns no rows (schema, pragmas).
    package func execute(_ sql: String) throws(StorageError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard rc == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? lastMessage
            let errno = db.map { sqlite3_system_errno($0) } ?? 0
            if rc & 0xFF == SQLITE_FULL || errno == ENOSPC { lastFailureWasFull = true }
            throw Self.error(rc, text, systemErrno: errno)
        }
    }

    /// Runs one statement and returns every row.
    @discardableResult
    package func query(_ sql: String, _ bindings: [SQLValue] = []) throws(StorageError) -> [SQLRow] {
        let stmt = try prepared(sql)
        defer {
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
        }
        try bind(bindings, to: stmt)
        var rows: [SQLRow] = []
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw failure(rc) }
            let n = sqlite3_column_count(stmt)
            var values: [SQLValue] = []
            values.reserveCapacity(Int(n))
            for i in 0..<n { values.append(column(stmt, i)) }
            rows.append(SQLRow(values: values))
        }
        return rows
    }

    /// Runs one statement that returns no rows; returns how many rows it changed.
    @discardableResult
    package func run(_ sql: String, _ bindings: [SQLValue] = []) throws(StorageError) -> Int {
        try query(sql, bindings)
        return Int(sqlite3_changes(db))
    }

    /// Runs `body` in an immediate transaction (the write lock is taken at once, so two
    /// processes never interleave a read-check-write). Commits when `body` returns; rolls
    /// back when it throws.
    /// `failure` turns the transaction's own failures (BEGIN, COMMIT) into `body`'s error type.
    package func transaction<T, E: Error>(_ body: () throws(E) -> T, failure: (StorageError) -> E) throws(E) -> T {
        refillReserve()
        lastFailureWasFull = false
        defer { if lastFailureWasFull { reclaimAfterFullDisk() } }
        do { try execute("BEGIN IMMEDIATE") } catch { throw failure(error) }
        let result: T
        do {
            result = try body()
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
        defer {
            if pendingCommitFailure {
                sqlite3_commit_hook(db, nil, nil)
                pendingCommitFailure = false
            }
        }
        do {
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw failure(error)
        }
        return result
    }

    /// Whether a transaction is open (SQLite ends one by itself after some errors: a full
    /// disk, an I/O error).
    package var inTransaction: Bool { db.map { sqlite3_get_autocommit($0) == 0 } ?? false }

    /// Makes the next COMMIT fail as SQLite's own refusal (its commit hook turns it into a
    /// ROLLBACK, `SQLITE_CONSTRAINT_COMMITHOOK`); for tests of a failed group commit.
    package func failNextCommit() {
        sqlite3_commit_hook(db, { _ in 1 }, nil)
        pendingCommitFailure = true
    }
    private var pendingCommitFailure = false

    package var userVersion: Int {
        get throws(StorageError) { try query("PRAGMA user_version").first?[0].int ?? 0 }
    }

    private var lastMessage: String { db.map { String(cString: sqlite3_errmsg($0)) } ?? "no connection" }

    private func prepared(_ sql: String) throws(StorageError) -> OpaquePointer {
        if let s = statements[sql] { return s }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw failure(rc) }
        statements[sql] = stmt
        return stmt
    }

    private func bind(_ values: [SQLValue], to stmt: OpaquePointer) throws(StorageError) {
        // SQLITE_TRANSIENT: SQLite copies the bytes before the call returns.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (i, v) in values.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch v {
            case .null: rc = sqlite3_bind_null(stmt, index)
            case .integer(let n): rc = sqlite3_bind_int64(stmt, index, n)
            case .text(let s): rc = sqlite3_bind_text(stmt, index, s, -1, transient)
            case .blob(let b):
                rc = b.withUnsafeBytes { sqlite3_bind_blob(stmt, index, $0.baseAddress, Int32($0.count), transient) }
            }
            guard rc == SQLITE_OK else { throw failure(rc) }
        }
    }

    private func column(_ stmt: OpaquePointer, _ i: Int32) -> SQLValue {
        switch sqlite3_column_type(stmt, i) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(stmt, i))
        case SQLITE_TEXT:
            guard let p = sqlite3_column_text(stmt, i) else { return .text("") }
            let n = Int(sqlite3_column_bytes(stmt, i))
            return .text(String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self))
        case SQLITE_BLOB:
            let n = Int(sqlite3_column_bytes(stmt, i))
            guard n > 0, let p = sqlite3_column_blob(stmt, i) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: p, count: n)))
        case SQLITE_FLOAT:
            return .integer(Int64(sqlite3_column_double(stmt, i)))
        default:
            return .null
        }
    }

    /// The one place that turns a SQLite result code into a ``StorageError``. Where the
    /// operating system said why (a full disk, a read-only file system), its words lead.
    package static func error(_ rc: Int32, _ message: String, systemErrno: Int32 = 0) -> StorageError {
        let os = systemErrno != 0 ? String(cString: strerror(systemErrno)) : nil
        switch rc & 0xFF {
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return StorageError(.corrupt, "the file is damaged or not a database (\(message))")
        case SQLITE_BUSY, SQLITE_LOCKED:
            return StorageError(.busy, "the file is locked by another connection (\(message))")
        case SQLITE_CONSTRAINT:
            return StorageError(.storage, "a constraint failed (\(message))")
        case SQLITE_FULL:
            return StorageError(.storage, "\(os ?? "No space left on device"): nothing was written (\(message))")
        case SQLITE_READONLY:
            return StorageError(.readOnlyStorage, "\(os ?? "Read-only file system"): nothing was written (\(message))")
        default:
            if systemErrno == EROFS {
                return StorageError(.readOnlyStorage, "\(os!): nothing was written (\(message))")
            }
            let name = String(cString: sqlite3_errstr(rc))
            return StorageError(.storage, os.map { "\($0) (\(name): \(message))" } ?? "error \(rc) (\(name)): \(message)")
        }
    }

    /// The SQLite error for `rc` on this connection, with the system's reason.
    private func failure(_ rc: Int32) -> StorageError {
        let errno = db.map { sqlite3_system_errno($0) } ?? 0
        if rc & 0xFF == SQLITE_FULL || errno == ENOSPC { lastFailureWasFull = true }
        return Self.error(rc, lastMessage, systemErrno: errno)
    }

    /// `PRAGMA quick_check` (`full`: `integrity_check`): throws `corrupt` naming the
    /// first problem SQLite reports.
    package func checkIntegrity(full: Bool) throws(StorageError) {
        let rows = try query(full ? "PRAGMA integrity_check(5)" : "PRAGMA quick_check(5)")
        let lines = rows.compactMap { $0[0].string }
        guard lines != ["ok"] else { return }
        throw StorageError(.corrupt, "\(path) is damaged: \(lines.joined(separator: "; "))")
    }

    /// The names of the tables in the file.
    package func tableNames() throws(StorageError) -> Set<String> {
        Set(try query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0[0].string })
    }

    package var applicationId: Int {
        get throws(StorageError) { try query("PRAGMA application_id").first?[0].int ?? 0 }
    }
}

/// A ``SQLiteHandle`` whose failures reach the caller as its store's error type (`Failure`: the
/// ledger's `GatewayError`, the device store's `DeviceStoreError`), so a store's code runs its
/// statements and transactions in its own typed throws. Not thread-safe: a store keeps it inside
/// a mutex.
package final class SQLiteDatabase<Failure: StorageFailure> {
    /// The connection.
    package let handle: SQLiteHandle
    package typealias OpenMode = SQLiteHandle.OpenMode

    /// Opens the database at `path` (``SQLiteHandle/init(path:busyTimeout:mode:)``).
    package init(path: String, busyTimeout: Duration, mode: SQLiteHandle.OpenMode = .readWriteCreate) throws(Failure) {
        handle = try Self.map { () throws(StorageError) in try SQLiteHandle(path: path, busyTimeout: busyTimeout, mode: mode) }
    }

    package var path: String { handle.path }
    package var mode: SQLiteHandle.OpenMode { handle.mode }
    package static var walCheckpointPages: Int { SQLiteHandle.walCheckpointPages }
    package static var walSizeLimit: Int { SQLiteHandle.walSizeLimit }

    package func execute(_ sql: String) throws(Failure) {
        try Self.map { () throws(StorageError) in try handle.execute(sql) }
    }

    @discardableResult
    package func query(_ sql: String, _ bindings: [SQLValue] = []) throws(Failure) -> [SQLRow] {
        try Self.map { () throws(StorageError) in try handle.query(sql, bindings) }
    }

    @discardableResult
    package func run(_ sql: String, _ bindings: [SQLValue] = []) throws(Failure) -> Int {
        try Self.map { () throws(StorageError) in try handle.run(sql, bindings) }
    }

    /// ``SQLiteHandle/transaction(_:failure:)`` in the store's error type.
    package func transaction<T>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        try handle.transaction(body, failure: { Failure($0) })
    }

    package var inTransaction: Bool { handle.inTransaction }
    package func failNextCommit() { handle.failNextCommit() }

    package var userVersion: Int {
        get throws(Failure) { try Self.map { () throws(StorageError) in try handle.userVersion } }
    }
    package var applicationId: Int {
        get throws(Failure) { try Self.map { () throws(StorageError) in try handle.applicationId } }
    }
    package func checkIntegrity(full: Bool) throws(Failure) {
        try Self.map { () throws(StorageError) in try handle.checkIntegrity(full: full) }
    }
    package func tableNames() throws(Failure) -> Set<String> {
        try Self.map { () throws(StorageError) in try handle.tableNames() }
    }

    package func holdReserve(at path: String, bytes: Int) { handle.holdReserve(at: path, bytes: bytes) }
    package var holdsReserve: Bool { handle.holdsReserve }
    package var reservePath: String? { handle.reservePath }
    package var reserveBytes: Int { handle.reserveBytes }
    package var reserveReleases: Int { handle.reserveReleases }

    /// The store's error for a SQLite result code (``SQLiteHandle/error(_:_:systemErrno:)``).
    package static func error(_ rc: Int32, _ message: String, systemErrno: Int32 = 0) -> Failure {
        Failure(SQLiteHandle.error(rc, message, systemErrno: systemErrno))
    }

    private static func map<T>(_ body: () throws(StorageError) -> T) throws(Failure) -> T {
        try Failure.mapping(body)
    }
}
