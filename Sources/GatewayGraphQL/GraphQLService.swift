public import GraphQL
public import PaymentGateway

/// GraphQL over HTTP for the `charges` schema, free of any server library: a request's
/// method, query items and body in, a status and a JSON answer out. ``GatewayWeb``'s handler
/// serves it at `/graphql`; the fuzz harness calls it directly.
///
/// - `POST` with a JSON body `{"query": String, "variables": Object?, "operationName": String?}`.
/// - `GET` with the same as query items (`?query=…&variables=<JSON>&operationName=…`).
/// - A body that is not such an object is `400` with `{"errors": [{"message": …}]}`; a
///   well-formed request is `200` whatever GraphQL says (its errors are in the answer), as
///   GraphQL over HTTP advises for `application/json`.
public struct GraphQLService: Sendable {
    public let executor: Executor
    /// The largest body read (bytes); the server's own limit may be smaller.
    public let maxBodyBytes: Int

    public init(source: any ChargeDataSource, limits: GraphQLLimits = .default, maxBodyBytes: Int = 256 * 1024) {
        executor = Executor(schema: ChargesSchema.make(source), limits: limits)
        self.maxBodyBytes = maxBodyBytes
    }

    public struct Answer: Sendable, Hashable {
        public var status: Int
        public var body: JSONValue
        /// For a 405: the methods allowed.
        public var allow: String?
    }

    public func respond(method: String, query items: [(name: String, value: String)], body: [UInt8]) -> Answer {
        let request: GraphQLRequest
        switch method {
        case "POST":
            guard body.count <= maxBodyBytes else { return Self.bad(413, "the body is over \(maxBodyBytes) bytes") }
            do { request = try Self.decode(body: body) } catch { return Self.bad(400, error.message) }
        case "GET":
            guard let q = items.first(where: { $0.name == "query" })?.value else {
                return Self.bad(400, "a GET needs a query item ?query=…")
            }
            var variables: [(String, JSONValue)] = []
            if let v = items.first(where: { $0.name == "variables" })?.value, !v.isEmpty {
                guard case .object(let members)? = try? JSONValue.parse(v) else {
                    return Self.bad(400, "variables must be a JSON object")
                }
                variables = members
            }
            request = GraphQLRequest(query: q, variables: variables,
                                     operationName: items.first(where: { $0.name == "operationName" })?.value)
            // A GET never runs a mutation (GraphQL over HTTP); this schema has none anyway.
        default:
            return Answer(status: 405, body: .object([("errors", .array([GraphQLError("use GET or POST").json]))]),
                          allow: "GET, POST")
        }
        return Answer(status: 200, body: executor.execute(request).json, allow: nil)
    }

    private static func bad(_ status: Int, _ message: String) -> Answer {
        Answer(status: status, body: .object([("errors", .array([GraphQLError(message).json]))]), allow: nil)
    }

    /// The JSON body of a POST.
    public static func decode(body: [UInt8]) throws(GraphQLError) -> GraphQLRequest {
        let json: JSONValue
        do { json = try JSONValue.parse(body) } catch { throw GraphQLError("the body is not JSON: \(error)") }
        guard case .object = json else { throw GraphQLError("the body must be a JSON object") }
        guard let query = json["query"]?.string else { throw GraphQLError("the body has no \"query\" string") }
        var variables: [(String, JSONValue)] = []
        switch json["variables"] {
        case nil, .null?: break
        case .object(let members)?: variables = members
        default: throw GraphQLError("\"variables\" must be an object")
        }
        var operationName: String?
        switch json["operationName"] {
        case nil, .null?: break
        case .string(let s)?: operationName = s
        default: throw GraphQLError("\"operationName\" must be a string")
        }
        return GraphQLRequest(query: query, variables: variables, operationName: operationName)
    }
}
