public import StrictJSON

/// Validates and executes a request against a ``Schema`` (GraphQL spec, October 2021, §5
/// Validation for the rules that apply to this subset, §6 Execution).
///
/// - Request errors (syntax, validation, variable coercion) answer `{"errors": […]}` without
///   `data` (§7.1).
/// - Field errors (a resolver threw) null the field, or its nearest nullable parent, and add an
///   error with the field's path; `data` is still answered.
/// - Only `query` operations run; `mutation` and `subscription` are request errors.
public struct GraphQLRequest: Sendable {
    public var query: String
    public var variables: [(String, JSONValue)]
    public var operationName: String?
    public init(query: String, variables: [(String, JSONValue)] = [], operationName: String? = nil) {
        self.query = query
        self.variables = variables
        self.operationName = operationName
    }
}

/// The answer: `data` (absent on a request error) and `errors`.
public struct GraphQLResponse: Sendable, Hashable {
    /// nil when the request failed before execution; `.null` when a non-null root field failed.
    public var data: JSONValue?
    public var errors: [GraphQLError]

    /// `{"data": …}` / `{"errors": […], "data": …}` as JSON (errors first, as the spec advises).
    public var json: JSONValue {
        var members: [(String, JSONValue)] = []
        if !errors.isEmpty { members.append(("errors", .array(errors.map(\.json)))) }
        if let data { members.append(("data", data)) }
        return .object(members)
    }
}

public struct Executor: Sendable {
    public let schema: Schema
    public let limits: GraphQLLimits

    public init(schema: Schema, limits: GraphQLLimits = .default) {
        self.schema = schema
        self.limits = limits
    }

    /// Parses, validates and runs `request`. `root` is the source value of the query type.
    public func execute(_ request: GraphQLRequest, root: any Sendable = ()) -> GraphQLResponse {
        let document: Document
        do { document = try Parser.parse(request.query, limits: limits) } catch {
            return GraphQLResponse(data: nil, errors: [error])
        }
        return execute(document, variables: request.variables, operationName: request.operationName, root: root)
    }

    public func execute(_ document: Document, variables: [(String, JSONValue)], operationName: String?,
                        root: any Sendable = ()) -> GraphQLResponse {
        var validator = Validator(schema: schema, document: document)
        validator.validate()
        guard validator.errors.isEmpty else { return GraphQLResponse(data: nil, errors: validator.errors) }

        let operation: OperationDefinition
        do { operation = try select(document, operationName) } catch {
            return GraphQLResponse(data: nil, errors: [error])
        }
        guard operation.type == .query else {
            return GraphQLResponse(data: nil, errors: [GraphQLError(
                "\(operation.type.rawValue) operations are not supported; this schema has queries only",
                at: operation.location)])
        }
        let coerced: [String: JSONValue]
        do { coerced = try coerceVariables(operation, variables) } catch {
            return GraphQLResponse(data: nil, errors: [error])
        }
        guard let queryType = schema.object(schema.queryType) else {
            return GraphQLResponse(data: nil, errors: [GraphQLError("the schema has no query type")])
        }
        var run = Run(schema: schema, fragments: Dictionary(document.fragments.map { ($0.name, $0) },
                                                            uniquingKeysWith: { a, _ in a }),
                      variables: coerced, maxResolvedFields: limits.maxResolvedFields)
        let data = run.selectionSet(operation.selectionSet, type: queryType, source: root, path: [])
        return GraphQLResponse(data: data ?? .null, errors: run.errors)
    }

    /// GetOperation (§6.1): by name, or the only one.
    private func select(_ document: Document, _ name: String?) throws(GraphQLError) -> OperationDefinition {
        if let name {
            guard let op = document.operations.first(where: { $0.name == name }) else {
                throw GraphQLError("no operation named \"\(name)\" in the document")
            }
            return op
        }
        guard document.operations.count == 1 else {
            throw GraphQLError(document.operations.isEmpty ? "the document has no operation"
                               : "the document has \(document.operations.count) operations: operationName must name one")
        }
        return document.operations[0]
    }

    /// CoerceVariableValues (§6.1.2).
    private func coerceVariables(_ op: OperationDefinition,
                                 _ given: [(String, JSONValue)]) throws(GraphQLError) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        let provided = Dictionary(given, uniquingKeysWith: { _, b in b })
        for def in op.variables {
            if let value = provided[def.name] {
                do {
                    out[def.name] = try Coercion(schema: schema).input(value, def.type)
                } catch {
                    throw GraphQLError("Variable \"$\(def.name)\" got an invalid value: \(error.message)", at: def.location)
                }
            } else if let d = def.defaultValue {
                // Checked against the type by validation; coerced here as a literal.
                out[def.name] = try Coercion(schema: schema).literal(d, def.type, variables: [:])
            } else if def.type.isNonNull {
                throw GraphQLError("Variable \"$\(def.name)\" of required type \"\(def.type)\" was not provided",
                                   at: def.location)
            }
        }
        return out
    }
}

/// Input coercion (§3.5, §3.9, §3.10): literals and JSON variable values to an input type.
struct Coercion {
    let schema: Schema

    /// A JSON value given for a variable.
    func input(_ v: JSONValue, _ t: TypeReference) throws(GraphQLError) -> JSONValue {
        switch t {
        case .nonNull(let inner):
            guard v != .null else { throw GraphQLError("null for the non-null type \"\(t)\"") }
            return try input(v, inner)
        case .list(let item):
            if v == .null { return .null }
            if case .array(let a) = v {
                var out: [JSONValue] = []
                for e in a { out.append(try input(e, item)) }
                return .array(out)
            }
            return .array([try input(v, item)])
        case .named(let n):
            if v == .null { return .null }
            switch schema.types[n] {
            case .scalar(let s):
                if let r = scalar(s, v) { return r }
                throw GraphQLError("\(v.serialized.prefix(64)) is not a valid \(s)")
            case .enumeration(let e):
                guard let s = v.string, e.values.contains(s) else {
                    throw GraphQLError("\(v.serialized.prefix(64)) is not a value of the enum \(e.name)")
                }
                return .string(s)
            case .inputObject(let io):
                guard case .object(let members) = v else { throw GraphQLError("\(io.name) must be an object") }
                var out: [(String, JSONValue)] = []
                for (k, _) in members where !io.fields.contains(where: { $0.name == k }) {
                    throw GraphQLError("\(io.name) has no field \"\(k)\"")
                }
                for f in io.fields {
                    if let given = members.first(where: { $0.0 == f.name })?.1 {
                        out.append((f.name, try input(given, f.type)))
                    } else if let d = f.defaultValue {
                        out.append((f.name, d))
                    } else if f.type.isNonNull {
                        throw GraphQLError("\(io.name).\(f.name) of type \"\(f.type)\" is required")
                    }
                }
                return .object(out)
            case .object, nil:
                throw GraphQLError("\"\(n)\" is not an input type")
            }
        }
    }

    private func scalar(_ s: String, _ v: JSONValue) -> JSONValue? {
        switch (s, v) {
        case ("Int", .int(let i)): return Int32(exactly: i) != nil ? v : nil
        case ("Int", .double(let d)): return Int32(exactly: d).map { .int(Int($0)) }
        case ("Float", .int(let i)): return .double(Double(i))
        case ("Float", .double): return v
        case ("String", .string): return v
        case ("Boolean", .bool): return v
        case ("ID", .string): return v
        case ("ID", .int(let i)): return .string(String(i))
        default: return nil
        }
    }

    /// A literal in the document. `variables` holds the coerced variable values; a variable not
    /// given is absent (the caller drops the field or argument).
    func literal(_ v: Value, _ t: TypeReference, variables: [String: JSONValue]) throws(GraphQLError) -> JSONValue {
        if case .variable(let name) = v.kind {
            let value = variables[name] ?? .null
            if t.isNonNull && value == .null {
                throw GraphQLError("variable \"$\(name)\" is null where \"\(t)\" is required", at: v.location)
            }
            return value
        }
        switch t {
        case .nonNull(let inner):
            if case .null = v.kind { throw GraphQLError("null for the non-null type \"\(t)\"", at: v.location) }
            return try literal(v, inner, variables: variables)
        case .list(let item):
            switch v.kind {
            case .null: return .null
            case .list(let items):
                var out: [JSONValue] = []
                for e in items { out.append(try literal(e, item, variables: variables)) }
                return .array(out)
            default: return .array([try literal(v, item, variables: variables)])
            }
        case .named(let n):
            if case .null = v.kind { return .null }
            switch schema.types[n] {
            case .scalar(let s):
                if let r = scalarLiteral(s, v.kind) { return r }
                throw GraphQLError("\(Self.show(v.kind)) is not a valid \(s)", at: v.location)
            case .enumeration(let e):
                guard case .enumValue(let s) = v.kind, e.values.contains(s) else {
                    throw GraphQLError("\(Self.show(v.kind)) is not a value of the enum \(e.name) (\(e.values.joined(separator: ", ")))",
                                       at: v.location)
                }
                return .string(s)
            case .inputObject(let io):
                guard case .object(let members) = v.kind else {
                    throw GraphQLError("\(io.name) must be an input object { … }", at: v.location)
                }
                var seen: Set<String> = []
                for m in members {
                    guard seen.insert(m.name).inserted else {
                        throw GraphQLError("the field \"\(m.name)\" of \(io.name) is given twice", at: m.value.location)
                    }
                    guard io.fields.contains(where: { $0.name == m.name }) else {
                        throw GraphQLError("\(io.name) has no field \"\(m.name)\" (it has \(io.fields.map(\.name).joined(separator: ", ")))",
                                           at: m.value.location)
                    }
                }
                var out: [(String, JSONValue)] = []
                for f in io.fields {
                    if let m = members.first(where: { $0.name == f.name }) {
                        if case .variable(let vn) = m.value.kind, variables[vn] == nil {
                            if let d = f.defaultValue { out.append((f.name, d)) }
                            else if f.type.isNonNull {
                                throw GraphQLError("\(io.name).\(f.name) of type \"\(f.type)\" is required", at: m.value.location)
                            }
                            continue
                        }
                        out.append((f.name, try literal(m.value, f.type, variables: variables)))
                    } else if let d = f.defaultValue {
                        out.append((f.name, d))
                    } else if f.type.isNonNull {
                        throw GraphQLError("\(io.name).\(f.name) of type \"\(f.type)\" is required", at: v.location)
                    }
                }
                return .object(out)
            case .object, nil:
                throw GraphQLError("\"\(n)\" is not an input type", at: v.location)
            }
        }
    }

    private func scalarLiteral(_ s: String, _ k: Value.Kind) -> JSONValue? {
        switch (s, k) {
        case ("Int", .int(let digits)): return Int32(digits).map { .int(Int($0)) }
        case ("Float", .int(let digits)), ("Float", .float(let digits)):
            return Double(digits).flatMap { $0.isFinite ? .double($0) : nil }
        case ("String", .string(let v)): return .string(v)
        case ("Boolean", .boolean(let b)): return .bool(b)
        case ("ID", .string(let v)): return .string(v)
        case ("ID", .int(let digits)): return .string(digits)
        default: return nil
        }
    }

    static func show(_ k: Value.Kind) -> String {
        switch k {
        case .variable(let n): return "$" + n
        case .int(let d), .float(let d): return d
        case .string(let s):
            var out = ""
            JSONValue.quote(String(s.prefix(64)), into: &out)
            return out
        case .boolean(let b): return b ? "true" : "false"
        case .null: return "null"
        case .enumValue(let e): return e
        case .list: return "a list"
        case .object: return "an input object"
        }
    }
}

/// One execution: the coerced variables, and the field errors met so far.
struct Run {
    let schema: Schema
    let fragments: [String: FragmentDefinition]
    let variables: [String: JSONValue]
    let maxResolvedFields: Int
    var errors: [GraphQLError] = []
    var resolvedFields = 0

    /// CollectFields (§6.3.2): the fields of a selection set by response key, in order, through
    /// fragments (whose type condition is the object type itself: there are no abstract types)
    /// and honouring @skip / @include.
    func collect(_ selections: [Selection], type: ObjectType, into groups: inout [(String, [Field])],
                 visited: inout Set<String>) {
        for s in selections {
            switch s {
            case .field(let f):
                guard included(f.directives) else { continue }
                if let k = groups.firstIndex(where: { $0.0 == f.responseKey }) { groups[k].1.append(f) }
                else { groups.append((f.responseKey, [f])) }
            case .fragmentSpread(let spread):
                guard included(spread.directives), visited.insert(spread.name).inserted,
                      let fragment = fragments[spread.name], fragment.typeCondition == type.name else { continue }
                collect(fragment.selectionSet, type: type, into: &groups, visited: &visited)
            case .inlineFragment(let inline):
                guard included(inline.directives), inline.typeCondition == nil || inline.typeCondition == type.name else { continue }
                collect(inline.selectionSet, type: type, into: &groups, visited: &visited)
            }
        }
    }

    private func included(_ directives: [Directive]) -> Bool {
        for d in directives where d.name == "skip" || d.name == "include" {
            guard let arg = d.arguments.first(where: { $0.name == "if" }),
                  let v = try? Coercion(schema: schema).literal(arg.value, .nonNull("Boolean"), variables: variables)
            else { continue }
            if d.name == "skip" && v == .bool(true) { return false }
            if d.name == "include" && v == .bool(false) { return false }
        }
        return true
    }

    /// ExecuteSelectionSet: nil when a non-null field failed (the parent becomes null).
    mutating func selectionSet(_ selections: [Selection], type: ObjectType, source: any Sendable,
                               path: [GraphQLError.PathElement]) -> JSONValue? {
        var groups: [(String, [Field])] = []
        var visited: Set<String> = []
        collect(selections, type: type, into: &groups, visited: &visited)
        var out: [(String, JSONValue)] = []
        for (key, fields) in groups {
            let field = fields[0]
            let fieldPath = path + [.key(key)]
            resolvedFields += 1
            if resolvedFields > maxResolvedFields {
                // Once: the whole answer is null, with one error.
                if resolvedFields == maxResolvedFields + 1 {
                    errors.append(GraphQLError("the answer would have more than \(maxResolvedFields) fields; ask for less (size, fewer aliases)",
                                               at: field.location, path: fieldPath))
                }
                return nil
            }
            if field.name == "__typename" {
                out.append((key, .string(type.name)))
                continue
            }
            guard let def = type.field(field.name) else { continue }   // validation refused it
            let resolved: Resolved
            do {
                let args = try arguments(field, def)
                resolved = try def.resolve(source, args)
            } catch {
                let message = (error as? GraphQLError)?.message ?? "\(error)"
                errors.append(GraphQLError(message, at: field.location, path: fieldPath))
                if def.type.isNonNull { return nil }
                out.append((key, .null))
                continue
            }
            let subselections = fields.flatMap { $0.selectionSet ?? [] }
            guard let value = complete(def.type, resolved, subselections, field: field, path: fieldPath) else {
                if def.type.isNonNull { return nil }
                out.append((key, .null))
                continue
            }
            out.append((key, value))
        }
        return .object(out)
    }

    /// CoerceArgumentValues (§6.4.1).
    private func arguments(_ field: Field, _ def: FieldDefinition) throws(GraphQLError) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for a in def.arguments {
            if let given = field.arguments.first(where: { $0.name == a.name }) {
                if case .variable(let vn) = given.value.kind, variables[vn] == nil {
                    if let d = a.defaultValue { out[a.name] = d }
                    else if a.type.isNonNull {
                        throw GraphQLError("argument \"\(a.name)\" of type \"\(a.type)\" is required but $\(vn) was not given")
                    }
                    continue
                }
                out[a.name] = try Coercion(schema: schema).literal(given.value, a.type, variables: variables)
            } else if let d = a.defaultValue {
                out[a.name] = d
            } else if a.type.isNonNull {
                throw GraphQLError("argument \"\(a.name)\" of type \"\(a.type)\" is required")
            }
        }
        return out
    }

    /// CompleteValue (§6.4.3): nil for a null where the type is non-null (an error is recorded).
    private mutating func complete(_ type: TypeReference, _ resolved: Resolved, _ selections: [Selection],
                                   field: Field, path: [GraphQLError.PathElement]) -> JSONValue? {
        switch type {
        case .nonNull(let inner):
            guard let v = complete(inner, resolved, selections, field: field, path: path) else { return nil }
            if v == .null {
                errors.append(GraphQLError("non-null field \(field.name) resolved to null", at: field.location, path: path))
                return nil
            }
            return v
        case .list(let item):
            if case .value(.null) = resolved { return .null }
            guard case .list(let elements) = resolved else {
                errors.append(GraphQLError("\(field.name) did not resolve to a list", at: field.location, path: path))
                return .null
            }
            var out: [JSONValue] = []
            for (k, e) in elements.enumerated() {
                // nil: the item failed; a nullable item absorbs it, a non-null one fails the list.
                guard let v = complete(item, e, selections, field: field, path: path + [.index(k)]) else {
                    if item.isNonNull { return nil }
                    out.append(.null)
                    continue
                }
                out.append(v)
            }
            return .array(out)
        case .named(let n):
            switch (schema.types[n], resolved) {
            case (_, .value(.null)): return .null
            case (.object(let o), .object(let source)):
                return selectionSet(selections, type: o, source: source, path: path)
            case (.scalar, .value(let v)), (.enumeration, .value(let v)): return v
            default:
                errors.append(GraphQLError("\(field.name) resolved to a value that is not a \(n)", at: field.location, path: path))
                return .null
            }
        }
    }
}
