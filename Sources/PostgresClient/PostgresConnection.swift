// Every call into libpq lives in this module; nothing else imports CLibPQ.
import CLibPQ
#if canImport(Glibc)
import Glibc
#endif

/// A value bound to a query parameter (sent in text format; PostgreSQL casts it to the
/// column's type) or nil for NULL.
public enum PostgresValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case null
    case text(String)
    case integer(Int64)

    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(_ s: String?) { self = s.map { .text($0) } ?? .null }
    public init(_ i: Int?) { self = i.map { .integer(Int64($0)) } ?? .null }
    public init(_ i: Int64?) { self = i.map { .integer($0) } ?? .null }

    var wire: String? {
        switch self {
        case .null: return nil
        case .text(let s): return s
        case .integer(let i): return String(i)
        }
    }
}

/// The rows of a result, every field as PostgreSQL's text form (nil for NULL).
public struct PostgresRow: Sendable, Hashable {
    public var fields: [String?]
    public init(fields: [String?]) { self.fields = fields }
    public subscript(_ i: Int) -> String? { i < fields.count ? fields[i] : nil }
    public func int(_ i: Int) -> Int? { self[i].flatMap { Int($0) } }
    public func int64(_ i: Int) -> Int64? { self[i].flatMap { Int64($0) } }
}

public struct PostgresResult: Sendable {
    public var rows: [PostgresRow]
    /// Rows changed by an INSERT, UPDATE or DELETE (0 for other statements).
    public var affectedRows: Int
}

/// One connection to PostgreSQL. Not thread-safe: one thread uses it at a time (a
/// ``PostgresPool`` hands each to one caller). Blocking: never call it from Swift's cooperative
/// pool (``PostgresPool/executor`` runs work on threads of its own).
///
/// After the connection broke, the next query reconnects first (outside a transaction); if the
/// server is still away, that query throws ``PostgresError/Code/notSent``.
public final class PostgresConnection {
    private var conn: OpaquePointer?
    private let url: String
    /// Inside BEGIN … COMMIT/ROLLBACK (a broken connection is not silently replaced there).
    public private(set) var inTransaction = false

    /// Connects to `url` (`postgres://user[:password]@host[:port]/db[?params]` or a libpq
    /// `key=value` string). Throws ``PostgresError/Code/connect`` when the server is away.
    public init(url: String) throws(PostgresError) {
        self.url = url
        try connect()
    }

    deinit { if let conn { PQfinish(conn) } }

    private func connect() throws(PostgresError) {
        if let conn { PQfinish(conn); self.conn = nil }
        // Defaults first: the URL's own parameters, expanded in place of dbname, override them.
        let keys = ["connect_timeout", "application_name", "dbname"]
        let values = ["5", "tapemu", url]
        let c: OpaquePointer? = withCStrings(keys) { k in
            withCStrings(values) { v in PQconnectdbParams(k, v, 1) }
        }
        guard let c else { throw PostgresError(.connect, "libpq could not allocate a connection") }
        guard PQstatus(c) == CONNECTION_OK else {
            let message = Self.text(PQerrorMessage(c))
            PQfinish(c)
            throw PostgresError(.connect, "cannot connect to PostgreSQL at \(PostgresURL.redacted(url)): \(message)")
        }
        // The server's notices ("… already exists, skipping") are not ours to print.
        _ = PQsetNoticeProcessor(c, { _, _ in }, nil)
        conn = c
    }

    /// Whether the connection is up (as far as libpq knows without a round trip).
    public var isConnected: Bool { conn.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// Runs one statement with `$1…$n` parameters (text format). Never interpolate values into
    /// `sql`: pass them here.
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        if !isConnected {
            guard !inTransaction else {
                throw PostgresError(.notSent, "the connection to PostgreSQL broke inside a transaction (it was rolled back)")
            }
            do {
                try connect()
            } catch {
                throw error.with(code: .notSent)
            }
        }
        guard let conn else { throw PostgresError(.notSent, "no connection to PostgreSQL") }
        let wire = parameters.map(\.wire)
        let result: OpaquePointer? = withOptionalCStrings(wire) { values in
            PQexecParams(conn, sql, Int32(wire.count), nil, values, nil, nil, 0)
        }
        defer { if let result { PQclear(result) } }
        let broken = PQstatus(conn) != CONNECTION_OK
        guard let result else {
            throw PostgresError(broken ? .connectionLost : .server, Self.text(PQerrorMessage(conn)))
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            let rowCount = Int(PQntuples(result)), columns = Int(PQnfields(result))
            var rows: [PostgresRow] = []
            rows.reserveCapacity(rowCount)
            for r in 0..<Int32(rowCount) {
                var fields: [String?] = []
                fields.reserveCapacity(columns)
                for c in 0..<Int32(columns) {
                    fields.append(PQgetisnull(result, r, c) != 0 ? nil : String(cString: PQgetvalue(result, r, c)))
                }
                rows.append(PostgresRow(fields: fields))
            }
            let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
            return PostgresResult(rows: rows, affectedRows: affected)
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = Self.text(PQresultErrorMessage(result))
            if broken || state == "57P01" || state == "57P02" || state == "57P03" {
                throw PostgresError(.connectionLost, message, sqlState: state)
            }
            throw PostgresError(.server, message, sqlState: state)
        }
    }

    /// Runs `body` in one transaction (`BEGIN` … `COMMIT`; `ROLLBACK` when it throws).
    ///
    /// What a failure means for the writes of `body`:
    /// - ``PostgresError/committedUnknown`` false: nothing was committed (a refusal, a
    ///   constraint, or the connection broke before `COMMIT` was sent).
    /// - true: the connection broke while `COMMIT` was under way: the server may have committed.
    ///
    /// A connection found broken at `BEGIN` (an idle connection the server dropped) is made
    /// again and the transaction started once more: nothing of it had been sent.
    public func transaction<T>(isolation: String? = nil,
                               _ body: () throws(PostgresError) -> T) throws(PostgresError) -> T {
        precondition(!inTransaction, "PostgresConnection.transaction is not reentrant")
        let begin = isolation.map { "BEGIN ISOLATION LEVEL \($0)" } ?? "BEGIN"
        do {
            try query(begin)
        } catch let error where error.code == .connectionLost {
            _ = error
            try connect()
            try query(begin)
        }
        inTransaction = true
        let value: T
        do {
            value = try body()
        } catch {
            inTransaction = false
            if isConnected { _ = try? query("ROLLBACK") }
            // Whatever broke before COMMIT, the transaction is not committed.
            guard error.code == .connectionLost else { throw error }
            throw error.with(code: .notSent, reason: error.reason + " (before COMMIT: nothing was committed)")
        }
        inTransaction = false
        do {
            try query("COMMIT")
        } catch {
            throw error.code == .connectionLost ? error.with(code: .connectionLost, committedUnknown: true) : error
        }
        return value
    }

    private static func text(_ p: UnsafePointer<CChar>?) -> String {
        guard let p else { return "" }
        // libpq's message may span lines, each after the first indented with a tab: one line.
        return String(cString: p).split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .joined(separator: "; ")
    }
}

extension String {
    fileprivate func replacingOccurrences(of a: String, with b: String) -> String {
        split(separator: Character(a), omittingEmptySubsequences: false).joined(separator: b)
    }
}

/// A URL's text with its password (if any) hidden, for messages.
public enum PostgresURL {
    public static func redacted(_ url: String) -> String {
        guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@") else {
            return url.contains("password") ? "(a connection string)" : url
        }
        let userInfo = url[scheme.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }

    /// Whether `text` names a PostgreSQL database (`postgres://` or `postgresql://`).
    public static func isPostgres(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }
}

private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    var pointers = copies.map { UnsafePointer<CChar>($0) } + [nil]
    return pointers.withUnsafeMutableBufferPointer { body(UnsafePointer($0.baseAddress!)) }
}

private func withOptionalCStrings<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
    let copies = strings.map { $0.map { strdup($0) } ?? nil }
    defer { copies.forEach { free($0) } }
    var pointers = copies.map { $0.map { UnsafePointer<CChar>($0) } }
    if pointers.isEmpty { return body(nil) }
    return pointers.withUnsafeMutableBufferPointer { body(UnsafePointer($0.baseAddress!)) }
}
