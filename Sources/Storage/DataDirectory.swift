public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the embedded gateway keeps its ledger when the caller does not say (`--data-dir`).
public enum DataDirectory {
    /// `$XDG_DATA_HOME/tapemu` when `XDG_DATA_HOME` is set to an absolute path (the XDG Base
    /// Directory spec ignores relative ones), else `$HOME/.local/share/tapemu`, else the
    /// account's home directory from the system, then `.local/share/tapemu`.
    public static func defaultPath() -> String {
        defaultPath(environment: ProcessInfo.processInfo.environment)
    }

    /// ``defaultPath()`` for the given environment variables.
    public static func defaultPath(environment: [String: String]) -> String {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return join(xdg, "tapemu")
        }
        let home: String
        if let h = environment["HOME"], h.hasPrefix("/") {
            home = h
        } else {
            home = FileManager.default.homeDirectoryForCurrentUser.path
        }
        return join(join(home, ".local/share"), "tapemu")
    }

    private static func join(_ a: String, _ b: String) -> String {
        a.hasSuffix("/") ? a + b : a + "/" + b
    }
}

/// The stores a data directory holds, and the rule that keeps them: **a store that existed is
/// never silently created anew.**
///
/// The directory keeps a manifest, `tapemu-data.json`, written (atomically, durably) before any
/// store is created in it: the directory's id and, for each store, when it was created. Each
/// store carries the directory's id inside it and its own SQLite `application_id`. So:
///
/// - a store the manifest lists that is missing or empty is ``StorageError/Code/storeMissing``,
///   never a fresh empty store (its history and secrets, or the device's pending payments,
///   would be gone without a word);
/// - a store whose id is another directory's, or another kind of file, is `storeMissing` too
///   (foreign);
/// - a store that names a directory while the manifest is gone is `storeMissing` (the manifest
///   was lost; a store created now would not know what was there);
/// - a new store is built under a temporary name and renamed into place, so a crash while
///   creating leaves no half-made file under the real name; a 0-byte file there is not ours.
///
/// Starting over is deliberate: a new (or empty) `--data-dir`, or removing the whole directory.
/// Stores made by tapemu before the manifest existed are adopted (stamped) on first open.
public struct DataDirectoryLayout: Sendable {
    /// The manifest's file name.
    public static let manifestName = "tapemu-data.json"
    static let lockName = ".tapemu.lock"

    /// One kind of store.
    package struct Store<Failure: StorageFailure>: Sendable {
        package var fileName: String
        /// SQLite `PRAGMA application_id` of this kind of file.
        package var applicationId: Int
        /// What it holds, for messages.
        package var holds: String
        /// Writes the schema into a new, empty file and stamps it with the directory's id.
        package var create: @Sendable (SQLiteDatabase<Failure>, _ directoryId: String) throws(Failure) -> Void
        /// The directory id stamped in an existing file (nil: not stamped yet, an older tapemu's).
        package var readId: @Sendable (SQLiteDatabase<Failure>) throws(Failure) -> String?
        /// Whether a file not stamped yet (an older tapemu's) has this kind's tables.
        package var recognises: @Sendable (_ tables: Set<String>) -> Bool
        /// Stamps an adopted older file.
        package var stamp: @Sendable (SQLiteDatabase<Failure>, _ directoryId: String) throws(Failure) -> Void

        package init(fileName: String, applicationId: Int, holds: String,
                     create: @escaping @Sendable (SQLiteDatabase<Failure>, _ directoryId: String) throws(Failure) -> Void,
                     readId: @escaping @Sendable (SQLiteDatabase<Failure>) throws(Failure) -> String?,
                     recognises: @escaping @Sendable (_ tables: Set<String>) -> Bool,
                     stamp: @escaping @Sendable (SQLiteDatabase<Failure>, _ directoryId: String) throws(Failure) -> Void) {
            self.fileName = fileName
            self.applicationId = applicationId
            self.holds = holds
            self.create = create
            self.readId = readId
            self.recognises = recognises
            self.stamp = stamp
        }
    }

    /// How a command opens a store.
    public enum Access: Sendable {
        /// Create the directory and the store when they are not there (a payment).
        case create
        /// Read and write; the directory must exist. A store never created there is absent.
        case existing
        /// Read only; nothing is created or written (queries on a read-only or full disk).
        case readOnly
    }

    struct Manifest: Codable, Sendable {
        var format: String
        var id: String
        var createdAt: Date
        /// File name → when it was created (or adopted).
        var stores: [String: Date]
    }

    public let path: String

    public init(path: String) { self.path = path }

    package func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    /// Opens `store` under the rules above; nil when the store was never created here and
    /// `access` does not create.
    package func open<Failure>(_ store: Store<Failure>, access: Access, busyTimeout: Duration) throws(Failure) -> SQLiteDatabase<Failure>? {
        guard !path.isEmpty else { throw Failure(storage: .storage, "the data directory path is empty") }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw Failure(storage: .storage, "the data directory \(path) is a file, not a directory")
            }
        } else {
            guard access == .create else {
                throw Failure(storage: .noDataDirectory, "no data in \(path): the directory does not exist")
            }
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw Failure(storage: .storage, "cannot create the data directory \(path): \(Self.reason(error))")
            }
        }
        if access == .readOnly {
            return try openExisting(store, manifest: try Failure.mapping { () throws(StorageError) in try readManifest() }, mode: .readOnly, busyTimeout: busyTimeout)
        }
        // SQLite would open a file it cannot write read only, without a word, and fail later.
        if Glibc.access(path, W_OK) != 0 {
            throw Failure(Self.posixError("cannot write in the data directory \(path)"))
        }
        // Creating and adopting happen under the directory's lock, so two processes never both
        // create one store (or both write the manifest).
        let lock: FileLock
        do {
            lock = try FileLock.acquire(file(Self.lockName))
        } catch {
            throw Failure(storage: error.isReadOnly ? .readOnlyStorage : .storage,
                                "cannot lock the data directory \(path): \(error.reason)")
        }
        defer { lock.release() }
        var manifest = try Failure.mapping { () throws(StorageError) in try readManifest() }
        if let existing = try openExisting(store, manifest: manifest, mode: .readWrite, busyTimeout: busyTimeout) {
            if manifest?.stores[store.fileName] == nil {
                // An older tapemu's store, or one created before a crash kept it out of the manifest.
                var m = manifest ?? Manifest(format: "tapemu-data/1", id: UUID().uuidString, createdAt: Date(), stores: [:])
                if try store.readId(existing) == nil { try store.stamp(existing, m.id) }
                m.stores[store.fileName] = Date()
                try Failure.mapping { () throws(StorageError) in try writeManifest(m) }
            }
            return existing
        }
        guard access == .create else { return nil }
        if manifest == nil {
            manifest = Manifest(format: "tapemu-data/1", id: UUID().uuidString, createdAt: Date(), stores: [:])
            try Failure.mapping { () throws(StorageError) in try writeManifest(manifest!) }
        }
        var m = manifest!
        try create(store, directoryId: m.id, busyTimeout: busyTimeout)
        m.stores[store.fileName] = Date()
        try Failure.mapping { () throws(StorageError) in try writeManifest(m) }
        return try openExisting(store, manifest: m, mode: .readWrite, busyTimeout: busyTimeout)
    }

    /// The store's file when it is there and this directory's; nil when it never was.
    private func openExisting<Failure>(_ store: Store<Failure>, manifest: Manifest?, mode: SQLiteHandle.OpenMode,
                                       busyTimeout: Duration) throws(Failure) -> SQLiteDatabase<Failure>? {
        let filePath = file(store.fileName)
        let listed = manifest?.stores[store.fileName]
        let size: Int?
        do {
            size = (try FileManager.default.attributesOfItem(atPath: filePath)[.size] as? NSNumber)?.intValue
        } catch {
            size = nil
        }
        guard let size else {
            if let listed {
                throw Failure(storage: .storeMissing, """
                    \(filePath) is missing: this data directory created it on \(Self.day(listed)) and it holds \
                    \(store.holds). tapemu does not create it anew: restore it from a backup, or start over \
                    with a new --data-dir
                    """)
            }
            return nil
        }
        guard size > 0 else {
            throw Failure(storage: .storeMissing, """
                \(filePath) is empty (0 bytes)\(listed.map { ": it was created on \(Self.day($0)) and held \(store.holds)" } ?? ""). \
                tapemu does not use it: restore it from a backup, or move it aside and start over with a new --data-dir
                """)
        }
        let conn = try SQLiteDatabase<Failure>(path: filePath, busyTimeout: busyTimeout, mode: mode)
        let appId = try conn.applicationId
        let tables = try conn.tableNames()
        guard appId == store.applicationId || (appId == 0 && store.recognises(tables)) else {
            throw Failure(storage: .storeMissing, "\(filePath) is not a tapemu file of its kind (it does not hold \(store.holds)): move it aside")
        }
        let id = try store.readId(conn)
        switch (id, manifest) {
        case (let id?, let m?) where id != m.id:
            throw Failure(storage: .storeMissing, """
                \(filePath) belongs to another data directory (\(id), this one is \(m.id)): it was copied here. \
                Put it back where it came from, or use that directory
                """)
        case (let id?, nil):
            throw Failure(storage: .storeMissing, """
                \(file(Self.manifestName)) is missing, but \(filePath) belongs to data directory \(id): restore \
                the manifest from a backup (tapemu cannot tell which other stores were here)
                """)
        default:
            break
        }
        return conn
    }

    /// Builds a new store under a temporary name, then renames it into place (durably).
    private func create<Failure>(_ store: Store<Failure>, directoryId: String, busyTimeout: Duration) throws(Failure) {
        let final = file(store.fileName)
        let temporary = final + ".creating"
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(temporary + suffix) }
        do {
            let conn = try SQLiteDatabase<Failure>(path: temporary, busyTimeout: busyTimeout, mode: .readWriteCreate)
            try conn.transaction { () throws(Failure) in
                try conn.execute("PRAGMA application_id = \(store.applicationId)")
                try store.create(conn, directoryId)
            }
            try conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        _ = chmod(temporary, 0o600)
        for suffix in ["-wal", "-shm"] { unlink(temporary + suffix) }
        guard rename(temporary, final) == 0 else {
            throw Failure(Self.posixError("cannot move the new \(store.fileName) into place"))
        }
        try Failure.mapping { () throws(StorageError) in try syncDirectory() }
    }

    private func readManifest() throws(StorageError) -> Manifest? {
        let manifestPath = file(Self.manifestName)
        guard let data = FileManager.default.contents(atPath: manifestPath) else {
            if FileManager.default.fileExists(atPath: manifestPath) {
                throw StorageError(.storage, "cannot read \(manifestPath)")
            }
            return nil
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let m = try? decoder.decode(Manifest.self, from: data), m.format == "tapemu-data/1" else {
            throw StorageError(.corrupt, "\(manifestPath) is damaged (not a tapemu-data/1 manifest): restore it from a backup")
        }
        return m
    }

    /// Writes the manifest atomically: a temporary file, fsync, rename, fsync of the directory.
    private func writeManifest(_ m: Manifest) throws(StorageError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let data: Data
        do { data = try encoder.encode(m) } catch { throw StorageError(.storage, "cannot encode the manifest: \(error)") }
        let final = file(Self.manifestName)
        let temporary = final + ".tmp"
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.posixError("cannot write \(temporary)") }
        let written = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == data.count, fsync(fd) == 0 else {
            let e = Self.posixError("cannot write \(temporary)")
            Glibc.close(fd)
            unlink(temporary)
            throw e
        }
        Glibc.close(fd)
        guard rename(temporary, final) == 0 else { throw Self.posixError("cannot move \(temporary) into place") }
        try syncDirectory()
    }

    private func syncDirectory() throws(StorageError) {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Self.posixError("cannot open \(path)") }
        defer { Glibc.close(fd) }
        guard fsync(fd) == 0 else { throw Self.posixError("cannot sync \(path)") }
    }

    package static func posixError(_ doing: String, errno e: Int32 = errno) -> StorageError {
        StorageError(e == EROFS ? .readOnlyStorage : .storage, "\(doing): \(String(cString: strerror(e)))")
    }

    static func reason(_ error: any Error) -> String {
        let posix = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        return posix.map { String(cString: strerror(Int32($0.code))) } ?? error.localizedDescription
    }

    private static func day(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }
}
