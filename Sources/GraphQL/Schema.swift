public import StrictJSON

/// A schema defined in code: object types whose fields resolve from a parent value, input
/// objects, enums and the built-in scalars (`Int`, `Float`, `String`, `Boolean`, `ID`).
/// No interfaces, unions or introspection (`__schema`, `__type`); `__typename` works on every
/// object type.
public struct Schema: Sendable {
    public var queryType: String
    public private(set) var types: [String: NamedType]

    public init(queryType: String, types: [NamedType]) {
        self.queryType = queryType
        var all: [String: NamedType] = [:]
        for s in ["Int", "Float", "String", "Boolean", "ID"] { all[s] = .scalar(s) }
        for t in types { all[t.name] = t }
        self.types = all
    }

    func object(_ name: String) -> ObjectType? {
        if case .object(let o) = types[name] { return o }
        return nil
    }

    func isInputType(_ t: TypeReference) -> Bool {
        switch types[t.namedType] {
        case .scalar, .enumeration, .inputObject: return true
        case .object, nil: return false
        }
    }
}

public enum NamedType: Sendable {
    case scalar(String)
    case object(ObjectType)
    case inputObject(InputObjectType)
    case enumeration(EnumType)

    public var name: String {
        switch self {
        case .scalar(let n): return n
        case .object(let o): return o.name
        case .inputObject(let i): return i.name
        case .enumeration(let e): return e.name
        }
    }
}

/// What a resolver gives back: a leaf value (or null), an object (the source of its fields'
/// resolvers, typed by the field's declared type), or a list of these.
public enum Resolved: Sendable {
    case value(JSONValue)
    case object(any Sendable)
    case list([Resolved])

    public static let null = Resolved.value(.null)
}

/// A field's resolver: the parent's source value and the coerced arguments (an argument not
/// given and without default is absent from the dictionary). A thrown error becomes a field
/// error at this field's path; the field is null.
public typealias Resolver = @Sendable (_ source: any Sendable, _ arguments: [String: JSONValue]) throws -> Resolved

public struct FieldDefinition: Sendable {
    public var name: String
    public var type: TypeReference
    public var arguments: [InputValueDefinition]
    public var description: String
    public var resolve: Resolver

    public init(_ name: String, _ type: TypeReference, arguments: [InputValueDefinition] = [],
                description: String = "", resolve: @escaping Resolver) {
        self.name = name
        self.type = type
        self.arguments = arguments
        self.description = description
        self.resolve = resolve
    }
}

public struct InputValueDefinition: Sendable {
    public var name: String
    public var type: TypeReference
    /// The value used when the argument or field is not given (already coerced).
    public var defaultValue: JSONValue?
    public init(_ name: String, _ type: TypeReference, defaultValue: JSONValue? = nil) {
        self.name = name
        self.type = type
        self.defaultValue = defaultValue
    }
}

public struct ObjectType: Sendable {
    public var name: String
    public var fields: [FieldDefinition]
    public init(_ name: String, fields: [FieldDefinition]) {
        self.name = name
        self.fields = fields
    }
    func field(_ name: String) -> FieldDefinition? { fields.first { $0.name == name } }
}

public struct InputObjectType: Sendable {
    public var name: String
    public var fields: [InputValueDefinition]
    public init(_ name: String, fields: [InputValueDefinition]) {
        self.name = name
        self.fields = fields
    }
}

public struct EnumType: Sendable {
    public var name: String
    public var values: [String]
    public init(_ name: String, values: [String]) {
        self.name = name
        self.values = values
    }
}

/// Shorthands for type references in schema code: `.nonNull(.named("Int"))` as `!"Int"`, …
extension TypeReference: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .named(value) }
    public var required: TypeReference { .nonNull(self) }
    public var listOf: TypeReference { .list(self) }
}
