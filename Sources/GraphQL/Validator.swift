public import StrictJSON

/// The validation rules of GraphQL spec §5 that apply to this subset (no abstract types, no
/// subscriptions to run): unique operation and fragment names, a lone anonymous operation,
/// known fields on their type (§5.3.1), leaf and composite selections (§5.3.3), field merging
/// of one response key (§5.3.2, at each level), known and unique arguments with required ones
/// given and literal values of their type (§5.4, §5.6), fragments known, on object types, used,
/// without cycles and spreadable (§5.5), directives `@skip`/`@include` only (§5.7), variables
/// unique, of input types, defined, used, and allowed where used (§5.8).
struct Validator {
    let schema: Schema
    let document: Document
    var errors: [GraphQLError] = []
    private let fragments: [String: FragmentDefinition]
    /// Variable usages by fragment, and fragments each fragment spreads.
    private var fragmentUsages: [String: [Usage]] = [:]
    private var fragmentSpreads: [String: Set<String>] = [:]

    struct Usage {
        var name: String
        var type: TypeReference
        var location: SourceLocation
        var hasLocationDefault: Bool
    }

    init(schema: Schema, document: Document) {
        self.schema = schema
        self.document = document
        fragments = Dictionary(document.fragments.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    mutating func validate() {
        let ops = document.operations
        if ops.count > 1, let anon = ops.first(where: { $0.name == nil }) {
            errors.append(GraphQLError("an anonymous operation must be the only operation in the document", at: anon.location))
        }
        var seen: [String: SourceLocation] = [:]
        for op in ops {
            guard let n = op.name else { continue }
            if let first = seen[n] {
                errors.append(GraphQLError("there can be only one operation named \"\(n)\"", locations: [first, op.location]))
            } else { seen[n] = op.location }
        }
        var seenFragments: [String: SourceLocation] = [:]
        for f in document.fragments {
            if let first = seenFragments[f.name] {
                errors.append(GraphQLError("there can be only one fragment named \"\(f.name)\"", locations: [first, f.location]))
                continue
            }
            seenFragments[f.name] = f.location
            guard let type = schema.object(f.typeCondition) else {
                errors.append(GraphQLError("fragment \"\(f.name)\" is on \"\(f.typeCondition)\", which is not an object type of this schema",
                                           at: f.location))
                continue
            }
            var usages: [Usage] = []
            var spreads: Set<String> = []
            checkDirectives(f.directives)
            selectionSet(f.selectionSet, type: type, usages: &usages, spreads: &spreads)
            fragmentUsages[f.name] = usages
            fragmentSpreads[f.name] = spreads
        }
        checkCycles()

        var used: Set<String> = []
        for op in ops {
            let rootName: String? = op.type == .query ? schema.queryType : nil
            guard let rootName, let root = schema.object(rootName) else {
                errors.append(GraphQLError("this schema has no \(op.type.rawValue) type", at: op.location))
                continue
            }
            var usages: [Usage] = []
            var spreads: Set<String> = []
            checkDirectives(op.directives)
            selectionSet(op.selectionSet, type: root, usages: &usages, spreads: &spreads)
            // Fragments reached from this operation, transitively.
            var reached: Set<String> = []
            var stack = Array(spreads)
            while let s = stack.popLast() {
                guard reached.insert(s).inserted else { continue }
                stack.append(contentsOf: fragmentSpreads[s] ?? [])
                usages.append(contentsOf: fragmentUsages[s] ?? [])
            }
            used.formUnion(reached)
            variables(op, usages)
        }
        for f in document.fragments where !used.contains(f.name) && seenFragments[f.name] == f.location {
            errors.append(GraphQLError("fragment \"\(f.name)\" is never used", at: f.location))
        }
    }

    // MARK: Selections

    private mutating func selectionSet(_ selections: [Selection], type: ObjectType,
                                       usages: inout [Usage], spreads: inout Set<String>) {
        checkMerging(selections, type: type)
        for s in selections {
            switch s {
            case .field(let f):
                checkDirectives(f.directives, usages: &usages)
                if f.name == "__typename" {
                    if !f.arguments.isEmpty {
                        errors.append(GraphQLError("__typename takes no arguments", at: f.location))
                    }
                    if f.selectionSet != nil {
                        errors.append(GraphQLError("field \"__typename\" of type \"String!\" must not have a selection", at: f.location))
                    }
                    continue
                }
                guard let def = type.field(f.name) else {
                    errors.append(GraphQLError("Cannot query field \"\(f.name)\" on type \"\(type.name)\"", at: f.location))
                    continue
                }
                arguments(f.arguments, def.arguments, owner: "field \"\(type.name).\(f.name)\"", at: f.location,
                          usages: &usages)
                let named = def.type.namedType
                if let object = schema.object(named) {
                    guard let sub = f.selectionSet else {
                        errors.append(GraphQLError("field \"\(f.name)\" of type \"\(def.type)\" must have a selection of subfields",
                                                   at: f.location))
                        continue
                    }
                    selectionSet(sub, type: object, usages: &usages, spreads: &spreads)
                } else if f.selectionSet != nil {
                    errors.append(GraphQLError("field \"\(f.name)\" must not have a selection since type \"\(def.type)\" has no subfields",
                                               at: f.location))
                }
            case .fragmentSpread(let spread):
                checkDirectives(spread.directives, usages: &usages)
                guard let fragment = fragments[spread.name] else {
                    errors.append(GraphQLError("unknown fragment \"\(spread.name)\"", at: spread.location))
                    continue
                }
                spreads.insert(spread.name)
                if fragment.typeCondition != type.name && schema.object(fragment.typeCondition) != nil {
                    errors.append(GraphQLError("fragment \"\(spread.name)\" on \"\(fragment.typeCondition)\" cannot be spread within \"\(type.name)\"",
                                               at: spread.location))
                }
            case .inlineFragment(let inline):
                checkDirectives(inline.directives, usages: &usages)
                if let c = inline.typeCondition, c != type.name {
                    errors.append(GraphQLError("an inline fragment on \"\(c)\" cannot be spread within \"\(type.name)\"",
                                               at: inline.location))
                    continue
                }
                selectionSet(inline.selectionSet, type: type, usages: &usages, spreads: &spreads)
            }
        }
    }

    /// One response key, one field: the same name and the same arguments (§5.3.2), checked
    /// among the fields this level collects (through fragments).
    private mutating func checkMerging(_ selections: [Selection], type: ObjectType) {
        var firsts: [String: Field] = [:]
        var visited: Set<String> = []
        func walk(_ selections: [Selection], _ out: inout [Field]) {
            for s in selections {
                switch s {
                case .field(let f): out.append(f)
                case .fragmentSpread(let sp):
                    guard visited.insert(sp.name).inserted, let fr = fragments[sp.name], fr.typeCondition == type.name else { continue }
                    walk(fr.selectionSet, &out)
                case .inlineFragment(let i): walk(i.selectionSet, &out)
                }
            }
        }
        var fields: [Field] = []
        walk(selections, &fields)
        for f in fields {
            guard let first = firsts[f.responseKey] else { firsts[f.responseKey] = f; continue }
            let sameArgs = first.arguments.count == f.arguments.count && first.arguments.allSatisfy { a in
                f.arguments.contains { $0.name == a.name && $0.value.kind == a.value.kind }
            }
            if first.name != f.name || !sameArgs {
                errors.append(GraphQLError(
                    "fields \"\(f.responseKey)\" conflict: \(first.name != f.name ? "\"\(first.name)\" and \"\(f.name)\" are different fields" : "they have different arguments"); use different aliases",
                    locations: [first.location, f.location]))
            }
        }
    }

    private mutating func arguments(_ given: [Argument], _ defs: [InputValueDefinition], owner: String,
                                    at location: SourceLocation, usages: inout [Usage]) {
        var seen: Set<String> = []
        for a in given {
            guard seen.insert(a.name).inserted else {
                errors.append(GraphQLError("there can be only one argument named \"\(a.name)\"", at: a.location))
                continue
            }
            guard let def = defs.first(where: { $0.name == a.name }) else {
                errors.append(GraphQLError("unknown argument \"\(a.name)\" on \(owner)", at: a.location))
                continue
            }
            checkValue(a.value, def.type, hasLocationDefault: def.defaultValue != nil, usages: &usages)
        }
        for def in defs where def.type.isNonNull && def.defaultValue == nil && !seen.contains(def.name) {
            errors.append(GraphQLError("argument \"\(def.name)\" of type \"\(def.type)\" is required on \(owner)", at: location))
        }
    }

    /// A literal is of its type (variables stand for any value here) and records its variables.
    private mutating func checkValue(_ v: Value, _ t: TypeReference, hasLocationDefault: Bool, usages: inout [Usage]) {
        collectUsages(v, t, hasLocationDefault: hasLocationDefault, into: &usages)
        var placeholders: [String: JSONValue] = [:]
        collectNames(v, into: &placeholders)
        do { _ = try Coercion(schema: schema).literal(v, t, variables: placeholders) } catch { errors.append(error) }
    }

    private func collectNames(_ v: Value, into out: inout [String: JSONValue]) {
        switch v.kind {
        case .variable(let n): out[n] = .string("")
        case .list(let items): for i in items { collectNames(i, into: &out) }
        case .object(let members): for m in members { collectNames(m.value, into: &out) }
        default: break
        }
    }

    private func collectUsages(_ v: Value, _ t: TypeReference, hasLocationDefault: Bool, into out: inout [Usage]) {
        switch v.kind {
        case .variable(let n):
            out.append(Usage(name: n, type: t, location: v.location, hasLocationDefault: hasLocationDefault))
        case .list(let items):
            guard case .list(let item) = t.nullable else { return }
            for i in items { collectUsages(i, item, hasLocationDefault: false, into: &out) }
        case .object(let members):
            guard case .inputObject(let io) = schema.types[t.namedType] else { return }
            for m in members {
                guard let f = io.fields.first(where: { $0.name == m.name }) else { continue }
                collectUsages(m.value, f.type, hasLocationDefault: f.defaultValue != nil, into: &out)
            }
        default: break
        }
    }

    private mutating func checkDirectives(_ directives: [Directive]) {
        var ignored: [Usage] = []
        checkDirectives(directives, usages: &ignored)
    }

    private mutating func checkDirectives(_ directives: [Directive], usages: inout [Usage]) {
        for d in directives {
            guard d.name == "skip" || d.name == "include" else {
                errors.append(GraphQLError("unknown directive \"@\(d.name)\"", at: d.location))
                continue
            }
            arguments(d.arguments, [InputValueDefinition("if", .nonNull("Boolean"))], owner: "directive \"@\(d.name)\"",
                      at: d.location, usages: &usages)
        }
    }

    // MARK: Fragments and variables

    private mutating func checkCycles() {
        var state: [String: Int] = [:]   // 1 visiting, 2 done
        func visit(_ name: String, _ errors: inout [GraphQLError]) {
            state[name] = 1
            for next in (fragmentSpreads[name] ?? []).sorted() {
                switch state[next] {
                case 1:
                    errors.append(GraphQLError("fragment \"\(next)\" spreads itself (through \"\(name)\")",
                                               at: fragments[next]?.location))
                case 2: continue
                default: visit(next, &errors)
                }
            }
            state[name] = 2
        }
        for f in document.fragments where state[f.name] == nil { visit(f.name, &errors) }
    }

    private mutating func variables(_ op: OperationDefinition, _ usages: [Usage]) {
        var defs: [String: VariableDefinition] = [:]
        for d in op.variables {
            guard defs[d.name] == nil else {
                errors.append(GraphQLError("there can be only one variable named \"$\(d.name)\"", at: d.location))
                continue
            }
            defs[d.name] = d
            guard schema.types[d.type.namedType] != nil else {
                errors.append(GraphQLError("unknown type \"\(d.type.namedType)\" of variable \"$\(d.name)\"", at: d.location))
                continue
            }
            guard schema.isInputType(d.type) else {
                errors.append(GraphQLError("variable \"$\(d.name)\" cannot be of the non-input type \"\(d.type)\"", at: d.location))
                continue
            }
            if let dv = d.defaultValue {
                do { _ = try Coercion(schema: schema).literal(dv, d.type, variables: [:]) } catch { errors.append(error) }
            }
        }
        let opName = op.name.map { "operation \"\($0)\"" } ?? "the operation"
        for u in usages {
            guard let d = defs[u.name] else {
                errors.append(GraphQLError("variable \"$\(u.name)\" is not defined by \(opName)", locations: [u.location, op.location]))
                continue
            }
            guard schema.isInputType(d.type) else { continue }
            if !allowed(d, u) {
                errors.append(GraphQLError("variable \"$\(u.name)\" of type \"\(d.type)\" used in position expecting type \"\(u.type)\"",
                                           locations: [d.location, u.location]))
            }
        }
        for d in op.variables where !usages.contains(where: { $0.name == d.name }) {
            errors.append(GraphQLError("variable \"$\(d.name)\" is never used in \(opName)", at: d.location))
        }
    }

    /// IsVariableUsageAllowed (§5.8.5).
    private func allowed(_ d: VariableDefinition, _ u: Usage) -> Bool {
        if u.type.isNonNull && !d.type.isNonNull {
            let hasDefault = d.defaultValue.map { $0.kind != .null } ?? false
            guard hasDefault || u.hasLocationDefault else { return false }
            return compatible(d.type, u.type.nullable)
        }
        return compatible(d.type, u.type)
    }

    private func compatible(_ v: TypeReference, _ l: TypeReference) -> Bool {
        switch (v, l) {
        case (.nonNull(let vi), .nonNull(let li)): return compatible(vi, li)
        case (_, .nonNull): return false
        case (.nonNull(let vi), _): return compatible(vi, l)
        case (.list(let vi), .list(let li)): return compatible(vi, li)
        case (.list, _), (_, .list): return false
        case (.named(let a), .named(let b)): return a == b
        }
    }
}
