public import StrictJSON

/// An error in GraphQL's response shape (spec §7.1.2): a message, the locations in the
/// document it is about, and for a field error the path of the field in the response.
public struct GraphQLError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var locations: [SourceLocation]
    /// Response keys and list indices from the root to the field, when the error is a field's.
    public var path: [PathElement]?

    public enum PathElement: Sendable, Hashable, CustomStringConvertible {
        case key(String)
        case index(Int)
        public var description: String {
            switch self {
            case .key(let k): return k
            case .index(let i): return String(i)
            }
        }
    }

    public init(_ message: String, at location: SourceLocation? = nil, path: [PathElement]? = nil) {
        self.message = message
        self.locations = location.map { [$0] } ?? []
        self.path = path
    }

    public init(_ message: String, locations: [SourceLocation], path: [PathElement]? = nil) {
        self.message = message
        self.locations = locations
        self.path = path
    }

    public var description: String {
        let at = locations.map(\.description).joined(separator: ", ")
        return message + (at.isEmpty ? "" : " (at \(at))")
    }

    /// `{"message": …, "locations": [{"line": …, "column": …}], "path": […]}`.
    public var json: JSONValue {
        var members: [(String, JSONValue)] = [("message", .string(message))]
        if !locations.isEmpty {
            members.append(("locations", .array(locations.map {
                .object([("line", .int($0.line)), ("column", .int($0.column))])
            })))
        }
        if let path {
            members.append(("path", .array(path.map {
                switch $0 {
                case .key(let k): return .string(k)
                case .index(let i): return .int(i)
                }
            })))
        }
        return .object(members)
    }
}
