/// An error of the PostgreSQL client: its ``code`` tells whether the request reached the server
/// (``mayHaveReachedServer``), and a server error carries its SQLSTATE.
///
/// The one error shape of tapemu (after swift-asn1's `ASN1Error`): a private backing, a ``Code``
/// callers cannot invent, a reason and `#fileID`/`#line`. Tests compare ``code`` only (`==` too).
/// The ``reason`` never holds a password (URLs are redacted).
public struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where it failed. Open: new codes may be added, so switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The server cannot be reached (connecting failed). Nothing was sent.
        public static let connect = Code("connect")
        /// The connection was down before the statement was sent (and reconnecting failed), or
        /// broke inside a transaction before its COMMIT: nothing was done.
        public static let notSent = Code("notSent")
        /// The connection broke after the statement left: the server may have run it.
        public static let connectionLost = Code("connectionLost")
        /// The server answered with an error (``sqlState``); the statement did nothing.
        public static let server = Code("server")
    }

    private struct Backing: Sendable {
        let code: Code
        let reason: String
        let sqlState: String?
        let committedUnknown: Bool
        let file: String
        let line: Int
    }
    private var backing: Backing

    public var code: Code { backing.code }
    public var reason: String { backing.reason }
    /// The SQLSTATE of a server error (`23505` unique_violation, `40001` serialization_failure…).
    public var sqlState: String? { backing.sqlState }
    /// The connection broke while COMMIT was under way: the transaction may be committed.
    public var committedUnknown: Bool { backing.committedUnknown }
    public var file: String { backing.file }
    public var line: Int { backing.line }

    package init(_ code: Code, _ reason: String, sqlState: String? = nil, committedUnknown: Bool = false,
                 file: String = #fileID, line: Int = #line) {
        backing = Backing(code: code, reason: reason, sqlState: sqlState, committedUnknown: committedUnknown,
                          file: file, line: line)
    }

    /// This error as another code (its SQLSTATE kept), e.g. a connection lost before COMMIT
    /// as `notSent`.
    func with(code: Code, reason: String? = nil, committedUnknown: Bool? = nil) -> PostgresError {
        PostgresError(code, reason ?? self.reason, sqlState: sqlState,
                      committedUnknown: committedUnknown ?? self.committedUnknown, file: file, line: line)
    }

    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// A serialization failure or a deadlock: the transaction was rolled back; retrying it is safe.
    public var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// Whether the server may have acted on the request (false: it certainly did not).
    public var mayHaveReachedServer: Bool { code == .connectionLost || committedUnknown }
    /// The server is unreachable or the connection broke.
    public var isConnectionFailure: Bool { code != .server }

    public var description: String {
        "\(code): " + (sqlState.map { "[\($0)] " } ?? "") + reason + (committedUnknown ? " (the COMMIT may have happened)" : "")
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
