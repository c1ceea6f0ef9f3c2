/// The syntax tree of an executable document (GraphQL spec, October 2021, §2). Every node keeps
/// the ``SourceLocation`` of its first token, for errors.

public struct Document: Sendable, Hashable {
    public var operations: [OperationDefinition]
    public var fragments: [FragmentDefinition]
}

public enum OperationType: String, Sendable, Hashable {
    case query, mutation, subscription
}

public struct OperationDefinition: Sendable, Hashable {
    public var type: OperationType
    public var name: String?
    public var variables: [VariableDefinition]
    public var directives: [Directive]
    public var selectionSet: [Selection]
    public var location: SourceLocation
}

public struct VariableDefinition: Sendable, Hashable {
    public var name: String
    public var type: TypeReference
    public var defaultValue: Value?
    public var location: SourceLocation
}

/// `Name`, `[T]`, `T!`.
public indirect enum TypeReference: Sendable, Hashable, CustomStringConvertible {
    case named(String)
    case list(TypeReference)
    case nonNull(TypeReference)

    public var description: String {
        switch self {
        case .named(let n): return n
        case .list(let t): return "[\(t)]"
        case .nonNull(let t): return "\(t)!"
        }
    }

    public var isNonNull: Bool { if case .nonNull = self { return true } else { return false } }

    /// The type without its outer `!`.
    public var nullable: TypeReference { if case .nonNull(let t) = self { return t } else { return self } }

    /// The named type at the bottom.
    public var namedType: String {
        switch self {
        case .named(let n): return n
        case .list(let t), .nonNull(let t): return t.namedType
        }
    }
}

public struct Directive: Sendable, Hashable {
    public var name: String
    public var arguments: [Argument]
    public var location: SourceLocation
}

public enum Selection: Sendable, Hashable {
    case field(Field)
    case fragmentSpread(FragmentSpread)
    case inlineFragment(InlineFragment)
}

public struct Field: Sendable, Hashable {
    public var alias: String?
    public var name: String
    public var arguments: [Argument]
    public var directives: [Directive]
    public var selectionSet: [Selection]?
    public var location: SourceLocation
    /// The key of the field in the response: the alias, else the name.
    public var responseKey: String { alias ?? name }
}

public struct FragmentSpread: Sendable, Hashable {
    public var name: String
    public var directives: [Directive]
    public var location: SourceLocation
}

public struct InlineFragment: Sendable, Hashable {
    public var typeCondition: String?
    public var directives: [Directive]
    public var selectionSet: [Selection]
    public var location: SourceLocation
}

public struct FragmentDefinition: Sendable, Hashable {
    public var name: String
    public var typeCondition: String
    public var directives: [Directive]
    public var selectionSet: [Selection]
    public var location: SourceLocation
}

public struct Argument: Sendable, Hashable {
    public var name: String
    public var value: Value
    public var location: SourceLocation
}

/// A value literal in the document (§2.9), with its position.
public struct Value: Sendable, Hashable {
    public indirect enum Kind: Sendable, Hashable {
        case variable(String)
        /// The digits as written (range-checked when coerced).
        case int(String)
        case float(String)
        case string(String)
        case boolean(Bool)
        case null
        case enumValue(String)
        case list([Value])
        case object([(name: String, value: Value)])

        public static func == (a: Kind, b: Kind) -> Bool {
            switch (a, b) {
            case (.variable(let x), .variable(let y)), (.int(let x), .int(let y)), (.float(let x), .float(let y)),
                 (.string(let x), .string(let y)), (.enumValue(let x), .enumValue(let y)): return x == y
            case (.boolean(let x), .boolean(let y)): return x == y
            case (.null, .null): return true
            case (.list(let x), .list(let y)): return x == y
            case (.object(let x), .object(let y)):
                return x.count == y.count && zip(x, y).allSatisfy { $0.name == $1.name && $0.value == $1.value }
            default: return false
            }
        }

        public func hash(into h: inout Hasher) {
            switch self {
            case .variable(let s), .int(let s), .float(let s), .string(let s), .enumValue(let s): h.combine(s)
            case .boolean(let b): h.combine(b)
            case .null: h.combine(0)
            case .list(let l): h.combine(l)
            case .object(let o): for f in o { h.combine(f.name); h.combine(f.value) }
            }
        }
    }
    public var kind: Kind
    public var location: SourceLocation
}
