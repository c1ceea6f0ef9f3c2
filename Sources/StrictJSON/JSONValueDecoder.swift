/// Decodes a `Decodable` from a ``JSONValue`` — the strict edge every JSON body and profile of
/// tapemu is read through (`StrictJSONReader.decode(_:from:maxDepth:)`), in place of Foundation's `JSONDecoder`,
/// which keeps one copy of a repeated key without a word and reads `12.0` or `1e3` into an `Int`.
///
/// Rules beyond RFC 8259 (which ``JSONValue/parse(_:maxDepth:)`` reads):
/// - an integer field takes only a JSON integer written without a fraction or an exponent
///   (`12`, not `12.0`, `12.5` or `1e3`), within the field type's range;
/// - a floating-point field takes any finite number (`1e400` is out of range);
/// - a string field takes only a string, a Bool only `true`/`false` (no coercion);
/// - unknown members are ignored (the types decide what they read), missing ones are
///   `keyNotFound`, `null` is nil for an optional.
///
/// Errors are `DecodingError`s with the coding path, so callers name the field.
public struct JSONValueDecoder: Sendable {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try T(from: ValueDecoder(value: value, codingPath: []))
    }
}

/// Why a body, profile or webhook could not be read: not JSON (with the offset; a repeated
/// name says which), or JSON that is not the expected shape (a `DecodingError`).
public enum StrictJSONError: Error, Sendable, CustomStringConvertible {
    case syntax(JSONParseError)
    case shape(DecodingError)

    public var description: String {
        switch self {
        case .syntax(let e): return e.description
        case .shape(let e): return StrictJSONReader.describe(e)
        }
    }
}

public enum StrictJSONReader {
    /// Reads `bytes` strictly (``JSONValue/parse(_:maxDepth:)``) and decodes `T` from them
    /// (``JSONValueDecoder``).
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: some Collection<UInt8>,
                                            maxDepth: Int = 64) throws(StrictJSONError) -> T {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes, maxDepth: maxDepth) } catch { throw .syntax(error) }
        do { return try JSONValueDecoder().decode(T.self, from: value) } catch let e as DecodingError {
            throw .shape(e)
        } catch {
            throw .shape(.dataCorrupted(.init(codingPath: [], debugDescription: "\(error)")))
        }
    }

    /// Reads `bytes` strictly without decoding a type: a webhook body that must be JSON.
    public static func check(_ bytes: some Collection<UInt8>, maxDepth: Int = 64) throws(JSONParseError) {
        _ = try JSONValue.parse(bytes, maxDepth: maxDepth)
    }

    /// The dotted path of a coding path: `card.amount`, `items.2.id`.
    public static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }

    /// One line for a decoding error, naming the field.
    public static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let c):
            let parent = path(c.codingPath)
            return "the field \(parent.isEmpty ? "" : parent + ".")\(key.stringValue) is missing"
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .dataCorrupted(let c):
            let p = path(c.codingPath)
            return p.isEmpty ? c.debugDescription : "the field \(p) \(c.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

// MARK: - The decoder

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw DecodingError.typeMismatch([String: Any].self, .init(
                codingPath: codingPath, debugDescription: codingPath.isEmpty ? "the body must be a JSON object" : "must be an object"))
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else {
            throw DecodingError.typeMismatch([Any].self, .init(codingPath: codingPath, debugDescription: "must be an array"))
        }
        return UnkeyedContainer(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleContainer(value: value, codingPath: codingPath)
    }
}

private struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { String(intValue ?? 0) }
    init(_ i: Int) { intValue = i }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

/// The scalar rules, shared by the three containers.
private enum Scalar {
    static func describe(_ v: JSONValue) -> String {
        switch v {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    static func bool(_ v: JSONValue, _ path: [any CodingKey]) throws -> Bool {
        guard case .bool(let b) = v else { throw mismatch(Bool.self, v, path, "must be true or false") }
        return b
    }

    static func string(_ v: JSONValue, _ path: [any CodingKey]) throws -> String {
        guard case .string(let s) = v else { throw mismatch(String.self, v, path, "must be a string") }
        return s
    }

    static func double(_ v: JSONValue, _ path: [any CodingKey]) throws -> Double {
        switch v {
        case .int(let i): return Double(i)
        case .double(let d):
            guard d.isFinite else {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "is a number out of range"))
            }
            return d
        default: throw mismatch(Double.self, v, path, "must be a number")
        }
    }

    /// Only a JSON integer literal: `.double` is what the reader makes of a fraction, an
    /// exponent or an integer past `Int`.
    static func integer<T: FixedWidthInteger>(_ v: JSONValue, _ path: [any CodingKey], as: T.Type) throws -> T {
        switch v {
        case .int(let i):
            guard let n = T(exactly: i) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "is out of range (\(T.min)…\(T.max))"))
            }
            return n
        case .double(let d) where d.isInfinite || (d == d.rounded() && abs(d) >= 9_223_372_036_854_775_808.0):
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "is out of range (\(T.min)…\(T.max))"))
        case .double:
            throw DecodingError.typeMismatch(T.self, .init(
                codingPath: path, debugDescription: "must be a JSON integer, without a fraction or an exponent"))
        default:
            throw mismatch(T.self, v, path, "must be an integer")
        }
    }

    static func mismatch(_ type: Any.Type, _ v: JSONValue, _ path: [any CodingKey], _ rule: String) -> DecodingError {
        if case .null = v {
            return .valueNotFound(type, .init(codingPath: path, debugDescription: "\(rule), not null"))
        }
        return .typeMismatch(type, .init(codingPath: path, debugDescription: "\(rule), not \(describe(v))"))
    }

    static func decode<T: Decodable>(_ type: T.Type, _ v: JSONValue, _ path: [any CodingKey]) throws -> T {
        // The scalar types directly, so their rules apply wherever they sit.
        switch type {
        case is Bool.Type: return try bool(v, path) as! T
        case is String.Type: return try string(v, path) as! T
        case is Double.Type: return try double(v, path) as! T
        case is Float.Type: return Float(try double(v, path)) as! T
        case is Int.Type: return try integer(v, path, as: Int.self) as! T
        case is Int8.Type: return try integer(v, path, as: Int8.self) as! T
        case is Int16.Type: return try integer(v, path, as: Int16.self) as! T
        case is Int32.Type: return try integer(v, path, as: Int32.self) as! T
        case is Int64.Type: return try integer(v, path, as: Int64.self) as! T
        case is UInt.Type: return try integer(v, path, as: UInt.self) as! T
        case is UInt8.Type: return try integer(v, path, as: UInt8.self) as! T
        case is UInt16.Type: return try integer(v, path, as: UInt16.self) as! T
        case is UInt32.Type: return try integer(v, path, as: UInt32.self) as! T
        case is UInt64.Type: return try integer(v, path, as: UInt64.self) as! T
        default: return try T(from: ValueDecoder(value: v, codingPath: path))
        }
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    init(members: [(String, JSONValue)], codingPath: [any CodingKey]) {
        // The reader refused repeated names: each name is here once.
        self.members = Dictionary(members, uniquingKeysWith: { first, _ in first })
        self.codingPath = codingPath
    }

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }
    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func value(_ key: Key) throws -> JSONValue {
        guard let v = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "is missing"))
        }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if case .null = try value(key) { return true }
        return false
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try Scalar.decode(T.self, try value(key), codingPath + [key])
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let v = members[key.stringValue] else { return nil }
        if case .null = v { return nil }
        return try Scalar.decode(T.self, v, codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: .object(members.map { ($0.key, $0.value) }), codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(items: [JSONValue], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private mutating func next(_ type: Any.Type) throws -> (JSONValue, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [IndexKey(currentIndex)],
                                                          debugDescription: "is past the end of the array"))
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return false }
        if case .null = items[currentIndex] { currentIndex += 1; return true }
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (v, path) = try next(T.self)
        return try Scalar.decode(T.self, v, path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey> {
        let (v, path) = try next([String: Any].self)
        return try ValueDecoder(value: v, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, path) = try next([Any].self)
        return try ValueDecoder(value: v, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (v, path) = try next(Any.self)
        return ValueDecoder(value: v, codingPath: path)
    }
}

private struct SingleContainer: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool {
        if case .null = value { return true }
        return false
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try Scalar.decode(T.self, value, codingPath) }
    func decode(_ type: Bool.Type) throws -> Bool { try Scalar.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try Scalar.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try Scalar.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try Scalar.double(value, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try Scalar.integer(value, codingPath, as: Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Scalar.integer(value, codingPath, as: Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Scalar.integer(value, codingPath, as: Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Scalar.integer(value, codingPath, as: Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Scalar.integer(value, codingPath, as: Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try Scalar.integer(value, codingPath, as: UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Scalar.integer(value, codingPath, as: UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Scalar.integer(value, codingPath, as: UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Scalar.integer(value, codingPath, as: UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Scalar.integer(value, codingPath, as: UInt64.self) }
}
