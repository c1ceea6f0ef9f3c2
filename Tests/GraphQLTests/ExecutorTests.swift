@testable import GraphQL
import Testing

/// A small schema: `Query { people(minAge: Int, names: [String!]): [Person!]!, person(name: String!): Person, fail: Int!, boom: Int }`.
private struct Person: Sendable { var name: String; var age: Int; var friend: String? }

private let people = [Person(name: "ada", age: 36, friend: "bob"), Person(name: "bob", age: 20, friend: nil)]

private let schema = Schema(queryType: "Query", types: [
    .object(ObjectType("Query", fields: [
        FieldDefinition("people", TypeReference.named("Person").required.listOf.required, arguments: [
            InputValueDefinition("minAge", "Int", defaultValue: .int(0)),
            InputValueDefinition("filter", "PersonFilter"),
        ]) { _, args in
            let min = args["minAge"]?.int ?? 0
            let name = args["filter"]?["name"]?.string
            return .list(people.filter { $0.age >= min && (name == nil || $0.name == name) }.map { .object($0) })
        },
        FieldDefinition("person", "Person", arguments: [InputValueDefinition("name", TypeReference.named("String").required)]) { _, args in
            people.first { $0.name == args["name"]?.string }.map { .object($0) } ?? .null
        },
        FieldDefinition("fail", TypeReference.named("Int").required) { _, _ in throw GraphQLError("it failed") },
        FieldDefinition("boom", "Int") { _, _ in throw GraphQLError("boom") },
        FieldDefinition("kind", "Kind", arguments: [InputValueDefinition("k", "Kind")]) { _, args in .value(args["k"] ?? .null) },
    ])),
    .object(ObjectType("Person", fields: [
        FieldDefinition("name", TypeReference.named("String").required) { s, _ in .value(.string((s as! Person).name)) },
        FieldDefinition("age", "Int") { s, _ in .value(.int((s as! Person).age)) },
        FieldDefinition("friend", "Person") { s, _ in
            guard let f = (s as! Person).friend else { return .null }
            return people.first { $0.name == f }.map { .object($0) } ?? .null
        },
        FieldDefinition("strict", TypeReference.named("Int").required) { _, _ in .null },
    ])),
    .inputObject(InputObjectType("PersonFilter", fields: [
        InputValueDefinition("name", "String"),
        InputValueDefinition("required", TypeReference.named("Boolean").required, defaultValue: .bool(true)),
    ])),
    .enumeration(EnumType("Kind", values: ["A", "B"])),
])

private func run(_ q: String, _ vars: [(String, JSONValue)] = [], op: String? = nil) -> GraphQLResponse {
    Executor(schema: schema).execute(GraphQLRequest(query: q, variables: vars, operationName: op))
}

@Suite struct ExecutorTests {
    @Test func selectionSetAliasesTypename() {
        let r = run("{ people { name } grown: people(minAge: 30) { who: name age __typename } __typename }")
        #expect(r.errors.isEmpty)
        #expect(r.data?.serialized == #"{"people":[{"name":"ada"},{"name":"bob"}],"grown":[{"who":"ada","age":36,"__typename":"Person"}],"__typename":"Query"}"#)
    }

    @Test func fragmentsAndDirectives() {
        let r = run("""
            query ($skip: Boolean!) { person(name: "ada") { ...P friend { ... on Person { name } } age @skip(if: $skip) } }
            fragment P on Person { name }
            """, [("skip", .bool(true))])
        #expect(r.errors.isEmpty, "\(r.errors)")
        #expect(r.data?.serialized == #"{"person":{"name":"ada","friend":{"name":"bob"}}}"#)
    }

    @Test func variablesAreCoercedAndChecked() {
        let ok = run("query ($n: String!, $min: Int = 30) { person(name: $n) { name } people(minAge: $min) { name } }",
                     [("n", .string("bob"))])
        #expect(ok.errors.isEmpty)
        #expect(ok.data?.serialized == #"{"person":{"name":"bob"},"people":[{"name":"ada"}]}"#)

        let missing = run("query ($n: String!) { person(name: $n) { name } }")
        #expect(missing.data == nil)
        #expect(missing.errors.first?.message.contains("was not provided") == true)
        #expect(missing.errors.first?.locations == [SourceLocation(line: 1, column: 8)])

        let wrong = run("query ($min: Int) { people(minAge: $min) { name } }", [("min", .string("ten"))])
        #expect(wrong.data == nil)
        #expect(wrong.errors.first?.message.contains("invalid value") == true)

        let tooBig = run("query ($min: Int) { people(minAge: $min) { name } }", [("min", .int(1 << 40))])
        #expect(tooBig.data == nil)

        let nullForRequired = run("query ($n: String!) { person(name: $n) { name } }", [("n", .null)])
        #expect(nullForRequired.data == nil)

        let inputObject = run("query ($f: PersonFilter) { people(filter: $f) { name } }",
                              [("f", .object([("name", .string("bob"))]))])
        #expect(inputObject.data?.serialized == #"{"people":[{"name":"bob"}]}"#)
        let badMember = run("query ($f: PersonFilter) { people(filter: $f) { name } }",
                            [("f", .object([("nope", .string("bob"))]))])
        #expect(badMember.data == nil)
    }

    @Test(arguments: [
        ("{ nope }", "Cannot query field \"nope\" on type \"Query\"", 1, 3),
        ("{ people { name nope } }", "Cannot query field \"nope\" on type \"Person\"", 1, 17),
        ("{ people }", "must have a selection", 1, 3),
        ("{ person(name: \"a\") { name { x } } }", "must not have a selection", 1, 23),
        ("{ person { name } }", "argument \"name\" of type \"String!\" is required", 1, 3),
        ("{ person(name: 1) { name } }", "is not a valid String", 1, 16),
        ("{ people(minAge: 1.5) { name } }", "is not a valid Int", 1, 18),
        ("{ people(minAge: 99999999999) { name } }", "is not a valid Int", 1, 18),
        ("{ people(bad: 1) { name } }", "unknown argument \"bad\"", 1, 10),
        ("{ people(filter: {nam: \"x\"}) { name } }", "has no field \"nam\"", 1, 24),
        ("{ people(filter: {name: \"x\", name: \"y\"}) { name } }", "given twice", 1, 36),
        ("{ kind(k: C) }", "not a value of the enum Kind", 1, 11),
        ("{ kind(k: \"A\") }", "not a value of the enum Kind", 1, 11),
        ("query { people(minAge: $m) { name } }", "is not defined", 1, 24),
        ("query ($m: Int) { people { name } }", "never used", 1, 8),
        ("query ($m: String) { people(minAge: $m) { name } }", "used in position expecting", 1, 8),
        ("query ($n: String) { person(name: $n) { name } }", "used in position expecting", 1, 8),
        ("{ a: people { name } a: person(name: \"x\") { name } }", "conflict", 1, 3),
        ("{ ...Missing }", "unknown fragment", 1, 3),
        ("{ people { ...A } } fragment A on Person { ...B } fragment B on Person { ...A }", "spreads itself", 1, 21),
        ("{ people { name } } fragment U on Person { name }", "never used", 1, 21),
        ("{ people { ...Q } } fragment Q on Query { fail }", "cannot be spread", 1, 12),
        ("{ people @deprecated { name } }", "unknown directive", 1, 10),
        ("query A { people { name } } { people { name } }", "anonymous operation", 1, 29),
        ("mutation { people { name } }", "no mutation type", 1, 1),
    ])
    func validationErrors(_ q: String, _ message: String, _ line: Int, _ column: Int) {
        let r = run(q)
        #expect(r.data == nil, "\(q)")
        #expect(r.errors.contains { $0.message.contains(message) }, "\(q): \(r.errors)")
        #expect(r.errors.first?.locations.first == SourceLocation(line: line, column: column), "\(q): \(r.errors)")
    }

    @Test func fieldErrorsCarryPathsAndNullTheNearestNullableParent() {
        let nullable = run("{ boom person(name: \"ada\") { name } }")
        #expect(nullable.data?.serialized == #"{"boom":null,"person":{"name":"ada"}}"#)
        #expect(nullable.errors.map(\.path) == [[.key("boom")]])
        #expect(nullable.errors.first?.locations == [SourceLocation(line: 1, column: 3)])

        // A non-null root field fails: data is null.
        let root = run("{ fail }")
        #expect(root.data == .null)
        #expect(root.errors.first?.message == "it failed")

        // A non-null field inside a non-null list item: the list's nullable parent... the
        // list itself is non-null, so the whole data goes null.
        let nested = run("{ people { strict } }")
        #expect(nested.data == .null)
        #expect(nested.errors.first?.path == [.key("people"), .index(0), .key("strict")])

        // Inside a nullable object it stops there.
        let stop = run("{ person(name: \"ada\") { strict } }")
        #expect(stop.data?.serialized == #"{"person":null}"#)
    }

    @Test func operationSelection() {
        let doc = "query A { person(name: \"ada\") { name } } query B { person(name: \"bob\") { name } }"
        #expect(run(doc, op: "B").data?.serialized == #"{"person":{"name":"bob"}}"#)
        #expect(run(doc).data == nil)
        #expect(run(doc, op: "C").errors.first?.message.contains("no operation named") == true)
    }

    @Test func responseJSONShape() {
        let r = run("{ nope }")
        #expect(r.json.serialized == #"{"errors":[{"message":"Cannot query field \"nope\" on type \"Query\"","locations":[{"line":1,"column":3}]}]}"#)
        let f = run("{ boom }")
        #expect(f.json.serialized == #"{"errors":[{"message":"boom","locations":[{"line":1,"column":3}],"path":["boom"]}],"data":{"boom":null}}"#)
    }
}

@Suite struct JSONTests {
    @Test func parsesAndKeepsOrder() throws {
        let v = try JSONValue.parse(#" {"b": [1, -2.5, true, null, "x\u00e9\n"], "a": {}} "#)
        #expect(v.serialized == "{\"b\":[1,-2.5,true,null,\"xé\\n\"],\"a\":{}}")
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\x\"", "\"\u{01}\"", "tru", "[] x", "\"\\uD800\"", "{\"a\":1,\"a\":2}"])
    func refusesBadJSON(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    /// 1e999 is valid JSON (RFC 8259 sets no range): read as infinite, refused by the field
    /// that gets it (StrictJSON's decoder, GraphQL's Float coercion), never as "not JSON".
    @Test func aNumberPastDoubleIsJSON() throws {
        #expect(try JSONValue.parse("1e999") == .double(.infinity))
    }

    @Test func boundsNesting() {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(String(repeating: "[", count: 100_000)) }
    }

    @Test func escapesHTMLSensitiveCharacters() {
        #expect(JSONValue.string("</script>&").serialized == #""\u003c/script\u003e\u0026""#)
    }
}

@Suite struct ExecutionLimitTests {
    @Test func aQueryCannotAskForAnUnboundedAnswer() {
        let limited = Executor(schema: schema, limits: GraphQLLimits(maxResolvedFields: 10))
        let small = limited.execute(GraphQLRequest(query: "{ people { name } }"))
        #expect(small.errors.isEmpty)
        let q = "{ " + (0..<6).map { "a\($0): people { name age }" }.joined(separator: " ") + " }"
        let big = limited.execute(GraphQLRequest(query: q))
        #expect(big.data == .null)
        #expect(big.errors.count == 1)
        #expect(big.errors.first?.message.contains("more than 10 fields") == true)
    }
}
