/// An error of the PostgreSQL client: where it happened tells whether the request reached
/// the server (``mayHaveReachedServer``), and a server error carries its SQLSTATE.
public struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The server cannot be reached (connecting failed). Nothing was sent.
        case connect
        /// The connection was down before the statement was sent (and reconnecting failed), or
        /// broke inside a transaction before its COMMIT: nothing was done.
        case notSent
        /// The connection broke after the statement left: the server may have run it.
        case connectionLost
        /// The server answered with an error (``sqlState``); the statement did nothing.
        case server
    }

    public var kind: Kind
    public var message: String
    /// The SQLSTATE of a server error (`23505` unique_violation, `40001` serialization_failure…).
    public var sqlState: String?
    /// The connection broke while COMMIT was under way: the transaction may be committed.
    public var committedUnknown = false

    public init(_ kind: Kind, _ message: String, sqlState: String? = nil) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
    }

    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// A serialization failure or a deadlock: the transaction was rolled back; retrying it is safe.
    public var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// Whether the server may have acted on the request (false: it certainly did not).
    public var mayHaveReachedServer: Bool { kind == .connectionLost || committedUnknown }
    /// The server is unreachable or the connection broke.
    public var isConnectionFailure: Bool { kind != .server }

    public var description: String {
        (sqlState.map { "[\($0)] " } ?? "") + message + (committedUnknown ? " (the COMMIT may have happened)" : "")
    }
}
