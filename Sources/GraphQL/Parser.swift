/// A recursive-descent parser of executable documents (GraphQL spec, October 2021, §2:
/// Document, OperationDefinition with the query shorthand, VariableDefinitions with defaults,
/// SelectionSet, Field with alias and arguments, FragmentSpread, InlineFragment,
/// FragmentDefinition, Directives, Value, Type). Type-system definitions are refused.
///
/// Depth (selection sets, list and object values, list types) is bounded by
/// ``GraphQLLimits/maxDepth``, so hostile nesting ends in an error, never a stack overflow.
public struct Parser {
    private var lexer: Lexer
    private var token: Token
    private var depth = 0
    private let limits: GraphQLLimits

    /// Parses `source` (UTF-8 query text).
    public static func parse(_ source: String, limits: GraphQLLimits = .default) throws(GraphQLError) -> Document {
        try parse(Array(source.utf8), limits: limits)
    }

    public static func parse(_ source: [UInt8], limits: GraphQLLimits = .default) throws(GraphQLError) -> Document {
        var p = try Parser(source, limits: limits)
        return try p.document()
    }

    private init(_ source: [UInt8], limits: GraphQLLimits) throws(GraphQLError) {
        lexer = try Lexer(source, limits: limits)
        token = try lexer.next()
        self.limits = limits
    }

    // MARK: Tokens

    private mutating func advance() throws(GraphQLError) -> Token {
        let t = token
        token = try lexer.next()
        return t
    }

    private func unexpected(_ expected: String) -> GraphQLError {
        GraphQLError("Syntax Error: expected \(expected), found \(token.describe)", at: token.location)
    }

    private mutating func expect(_ kind: Token.Kind, _ what: String) throws(GraphQLError) -> Token {
        guard token.kind == kind else { throw unexpected(what) }
        return try advance()
    }

    private mutating func skip(_ kind: Token.Kind) throws(GraphQLError) -> Bool {
        guard token.kind == kind else { return false }
        _ = try advance()
        return true
    }

    private mutating func name(_ what: String = "a name") throws(GraphQLError) -> Token {
        try expect(.name, what)
    }

    private mutating func nest(_ at: SourceLocation) throws(GraphQLError) {
        depth += 1
        guard depth <= limits.maxDepth else {
            throw GraphQLError("the document nests deeper than \(limits.maxDepth) levels", at: at)
        }
    }

    // MARK: Definitions

    private mutating func document() throws(GraphQLError) -> Document {
        var operations: [OperationDefinition] = []
        var fragments: [FragmentDefinition] = []
        guard token.kind != .end else { throw GraphQLError("Syntax Error: the document is empty", at: token.location) }
        while token.kind != .end {
            switch token.kind {
            case .braceL:
                let at = token.location
                operations.append(OperationDefinition(type: .query, name: nil, variables: [], directives: [],
                                                      selectionSet: try selectionSet(), location: at))
            case .name:
                switch token.value {
                case "query", "mutation", "subscription": operations.append(try operation())
                case "fragment": fragments.append(try fragment())
                case "schema", "scalar", "type", "interface", "union", "enum", "input", "directive", "extend":
                    throw GraphQLError("Syntax Error: type-system definitions (\"\(token.value)\") are not executable",
                                       at: token.location)
                default: throw unexpected("an operation or a fragment")
                }
            default:
                throw unexpected("an operation or a fragment")
            }
        }
        return Document(operations: operations, fragments: fragments)
    }

    private mutating func operation() throws(GraphQLError) -> OperationDefinition {
        let keyword = try advance()
        guard let type = OperationType(rawValue: keyword.value) else { throw unexpected("an operation type") }
        var name: String?
        if token.kind == .name { name = try advance().value }
        var variables: [VariableDefinition] = []
        if try skip(.parenL) {
            repeat {
                let at = token.location
                _ = try expect(.dollar, "\"$\" and a variable name")
                let n = try self.name("a variable name").value
                _ = try expect(.colon, "\":\"")
                let t = try typeReference()
                var defaultValue: Value?
                if try skip(.equals) { defaultValue = try value(constant: true) }
                _ = try directives()
                variables.append(VariableDefinition(name: n, type: t, defaultValue: defaultValue, location: at))
            } while token.kind != .parenR
            _ = try advance()
        }
        let dirs = try directives()
        return OperationDefinition(type: type, name: name, variables: variables, directives: dirs,
                                   selectionSet: try selectionSet(), location: keyword.location)
    }

    private mutating func fragment() throws(GraphQLError) -> FragmentDefinition {
        let keyword = try advance()
        let n = try name("a fragment name")
        guard n.value != "on" else { throw GraphQLError("Syntax Error: a fragment cannot be named \"on\"", at: n.location) }
        let on = try name("\"on\"")
        guard on.value == "on" else { throw GraphQLError("Syntax Error: expected \"on\", found \(on.describe)", at: on.location) }
        let typeName = try name("a type name").value
        let dirs = try directives()
        return FragmentDefinition(name: n.value, typeCondition: typeName, directives: dirs,
                                  selectionSet: try selectionSet(), location: keyword.location)
    }

    private mutating func typeReference() throws(GraphQLError) -> TypeReference {
        var t: TypeReference
        if token.kind == .bracketL {
            let at = try advance().location
            try nest(at)
            t = .list(try typeReference())
            depth -= 1
            _ = try expect(.bracketR, "\"]\"")
        } else {
            t = .named(try name("a type").value)
        }
        if try skip(.bang) { t = .nonNull(t) }
        return t
    }

    private mutating func directives() throws(GraphQLError) -> [Directive] {
        var out: [Directive] = []
        while token.kind == .at {
            let at = try advance().location
            let n = try name("a directive name").value
            out.append(Directive(name: n, arguments: try arguments(), location: at))
        }
        return out
    }

    // MARK: Selections

    private mutating func selectionSet() throws(GraphQLError) -> [Selection] {
        let open = try expect(.braceL, "\"{\"")
        try nest(open.location)
        var out: [Selection] = []
        repeat {
            out.append(try selection())
        } while token.kind != .braceR
        _ = try advance()
        depth -= 1
        return out
    }

    private mutating func selection() throws(GraphQLError) -> Selection {
        if token.kind == .spread {
            let at = try advance().location
            if token.kind == .name && token.value != "on" {
                let n = try advance().value
                return .fragmentSpread(FragmentSpread(name: n, directives: try directives(), location: at))
            }
            var condition: String?
            if token.kind == .name {   // "on"
                _ = try advance()
                condition = try name("a type name").value
            }
            let dirs = try directives()
            return .inlineFragment(InlineFragment(typeCondition: condition, directives: dirs,
                                                  selectionSet: try selectionSet(), location: at))
        }
        let first = try name("a field")
        var alias: String?
        var fieldName = first.value
        if try skip(.colon) {
            alias = first.value
            fieldName = try name("a field name").value
        }
        let args = try arguments()
        let dirs = try directives()
        let sub: [Selection]? = token.kind == .braceL ? try selectionSet() : nil
        return .field(Field(alias: alias, name: fieldName, arguments: args, directives: dirs, selectionSet: sub,
                            location: first.location))
    }

    private mutating func arguments() throws(GraphQLError) -> [Argument] {
        guard try skip(.parenL) else { return [] }
        var out: [Argument] = []
        repeat {
            let n = try name("an argument name")
            _ = try expect(.colon, "\":\"")
            out.append(Argument(name: n.value, value: try value(constant: false), location: n.location))
        } while token.kind != .parenR
        _ = try advance()
        return out
    }

    // MARK: Values

    private mutating func value(constant: Bool) throws(GraphQLError) -> Value {
        let at = token.location
        switch token.kind {
        case .dollar:
            guard !constant else { throw GraphQLError("Syntax Error: a variable in a constant value", at: at) }
            _ = try advance()
            return Value(kind: .variable(try name("a variable name").value), location: at)
        case .int: return Value(kind: .int(try advance().value), location: at)
        case .float: return Value(kind: .float(try advance().value), location: at)
        case .string, .blockString: return Value(kind: .string(try advance().value), location: at)
        case .name:
            let n = try advance().value
            switch n {
            case "true": return Value(kind: .boolean(true), location: at)
            case "false": return Value(kind: .boolean(false), location: at)
            case "null": return Value(kind: .null, location: at)
            default: return Value(kind: .enumValue(n), location: at)
            }
        case .bracketL:
            _ = try advance()
            try nest(at)
            var items: [Value] = []
            while token.kind != .bracketR {
                guard token.kind != .end else { throw unexpected("\"]\"") }
                items.append(try value(constant: constant))
            }
            _ = try advance()
            depth -= 1
            return Value(kind: .list(items), location: at)
        case .braceL:
            _ = try advance()
            try nest(at)
            var fields: [(name: String, value: Value)] = []
            while token.kind != .braceR {
                let n = try name("a field name or \"}\"")
                _ = try expect(.colon, "\":\"")
                fields.append((n.value, try value(constant: constant)))
            }
            _ = try advance()
            depth -= 1
            return Value(kind: .object(fields), location: at)
        default:
            throw unexpected("a value")
        }
    }
}
