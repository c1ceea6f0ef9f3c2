public import CodedErrors

/// An error of the PostgreSQL client: its ``code`` tells whether the request reached the server
/// (``mayHaveReachedServer``), and a server error carries its SQLSTATE.
///
/// The one error shape of tapemu (``CodedError``, after swift-asn1's `ASN1Error`): a ``Code``
/// callers cannot invent, a reason and `#fileID`/`#line`. Tests compare ``code`` only (`==` too).
/// The ``reason`` never holds a password (URLs are redacted).
public struct PostgresError: CodedError {
    public typealias Code = ErrorCode<PostgresError>
    public let core: ErrorCore<Code>
    /// The SQLSTATE of a server error (`23505` unique_violation, `40001` serialization_failure…).
    public let sqlState: String?
    /// The connection broke while COMMIT was under way: the transaction may be committed.
    public let committedUnknown: Bool

    package init(_ code: Code, _ reason: String, sqlState: String? = nil, committedUnknown: Bool = false,
                 file: String = #fileID, line: Int = #line) {
        core = ErrorCore(code, reason, file: file, line: line)
        self.sqlState = sqlState
        self.committedUnknown = committedUnknown
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
}

extension ErrorCode<PostgresError> {
    /// The server cannot be reached (connecting failed). Nothing was sent.
    public static var connect: Self { Self("connect") }
    /// The connection was down before the statement was sent (and reconnecting failed), or
    /// broke inside a transaction before its COMMIT: nothing was done.
    public static var notSent: Self { Self("notSent") }
    /// The connection broke after the statement left: the server may have run it.
    public static var connectionLost: Self { Self("connectionLost") }
    /// The server answered with an error (``sqlState``); the statement did nothing.
    public static var server: Self { Self("server") }
}
