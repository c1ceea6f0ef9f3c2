@testable import GraphQL
import Testing

@Suite struct ParserTests {
    @Test func seedQueryParses() throws {
        let doc = try Parser.parse(#"query { charges(filter: {orderId: {eq: "order-1042"}}) { items { id status amount } } }"#)
        #expect(doc.operations.count == 1)
        let op = doc.operations[0]
        #expect(op.type == .query && op.name == nil)
        guard case .field(let charges) = op.selectionSet[0] else { Issue.record("not a field"); return }
        #expect(charges.name == "charges")
        #expect(charges.location == SourceLocation(line: 1, column: 9))
        #expect(charges.arguments[0].name == "filter")
        guard case .object(let members) = charges.arguments[0].value.kind,
              case .object(let inner) = members[0].value.kind else { Issue.record("not an object"); return }
        #expect(members[0].name == "orderId")
        #expect(inner[0].name == "eq" && inner[0].value.kind == .string("order-1042"))
        guard case .field(let items) = charges.selectionSet?[0] else { Issue.record("no items"); return }
        #expect(items.selectionSet?.count == 3)
    }

    @Test func operationsVariablesAliasesFragments() throws {
        let doc = try Parser.parse("""
            query Find($order: ID! = "x", $sizes: [Int!]) @include(if: true) {
              first: charges(filter: {orderId: {eq: $order}}, size: 2) { ...F }
              ... on Query { __typename }
            }
            fragment F on ChargesConnection { total }
            """)
        let op = doc.operations[0]
        #expect(op.name == "Find")
        #expect(op.variables.map(\.name) == ["order", "sizes"])
        #expect(op.variables[0].type == .nonNull(.named("ID")))
        #expect(op.variables[0].defaultValue?.kind == .string("x"))
        #expect(op.variables[1].type == .list(.nonNull(.named("Int"))))
        #expect(op.directives.first?.name == "include")
        guard case .field(let f) = op.selectionSet[0] else { Issue.record("not a field"); return }
        #expect(f.alias == "first" && f.name == "charges" && f.responseKey == "first")
        #expect(f.location == SourceLocation(line: 2, column: 3))
        guard case .fragmentSpread(let s) = f.selectionSet?[0] else { Issue.record("no spread"); return }
        #expect(s.name == "F")
        guard case .inlineFragment(let inline) = op.selectionSet[1] else { Issue.record("no inline"); return }
        #expect(inline.typeCondition == "Query")
        #expect(doc.fragments.map(\.name) == ["F"])
        #expect(doc.fragments[0].typeCondition == "ChargesConnection")
    }

    @Test(arguments: [
        (#""a\"b\\c\/d\n\t""#, "a\"b\\c/d\n\t"),
        (#""\u00e9\u{1F600}""#, "é😀"),
        (#""\uD83D\uDE00""#, "😀"),
        (#""ünïcode""#, "ünïcode"),
        ("\"\"\"\n    hello\n      world\n    \"\"\"", "hello\n  world"),
        ("\"\"\"a \\\"\"\" b\"\"\"", "a \"\"\" b"),
    ])
    func strings(_ literal: String, _ expected: String) throws {
        let doc = try Parser.parse("{ f(a: \(literal)) }")
        guard case .field(let f) = doc.operations[0].selectionSet[0] else { Issue.record("not a field"); return }
        #expect(f.arguments[0].value.kind == .string(expected))
    }

    @Test func numbersBooleansNullEnumsLists() throws {
        let doc = try Parser.parse("{ f(a: -12, b: 1.5e3, c: true, d: null, e: SUCCEEDED, g: [1 2, [3]], h: 0) }")
        guard case .field(let f) = doc.operations[0].selectionSet[0] else { Issue.record("not a field"); return }
        let kinds = f.arguments.map(\.value.kind)
        #expect(kinds[0] == .int("-12"))
        #expect(kinds[1] == .float("1.5e3"))
        #expect(kinds[2] == .boolean(true))
        #expect(kinds[3] == .null)
        #expect(kinds[4] == .enumValue("SUCCEEDED"))
        guard case .list(let l) = kinds[5] else { Issue.record("not a list"); return }
        #expect(l.count == 3)
        #expect(kinds[6] == .int("0"))
    }

    @Test func commentsCommasAndLocations() throws {
        let doc = try Parser.parse("# a comment\n{\n  a,, b # trailing\n\r\n  c\n}")
        let fields = doc.operations[0].selectionSet.compactMap { s -> Field? in
            if case .field(let f) = s { return f } else { return nil }
        }
        #expect(fields.map(\.location) == [SourceLocation(line: 3, column: 3), SourceLocation(line: 3, column: 7),
                                           SourceLocation(line: 5, column: 3)])
    }

    @Test(arguments: [
        ("{ a(x: 01) }", 1, 8),
        ("{ a(x: 1.) }", 1, 8),
        ("{ a(x: 1e) }", 1, 8),
        ("{ a(x: 12abc) }", 1, 8),
        ("{ a(x: \"open) }", 1, 8),
        ("{ a(x: \"line\nbreak\") }", 1, 8),
        ("{ a(x: \"\\q\") }", 1, 9),
        ("{ a(x: \"\\uD800\") }", 1, 9),
        ("{ a(x: \"\"\"never closed) }", 1, 8),
        ("{ a ? }", 1, 5),
        ("{ a(x: ..) }", 1, 8),
        ("{\n  a(x: 1\n}", 3, 1),
        ("{ }", 1, 3),
        ("", 1, 1),
        ("type Query { a: Int }", 1, 1),
        ("query ($x Int) { a }", 1, 11),
        ("{ a(x: $v) } query", 1, 19),
        ("fragment on on T { a }", 1, 10),
        ("{ ...on }", 1, 9),
    ])
    func syntaxErrorsHaveLocations(_ source: String, _ line: Int, _ column: Int) {
        do {
            _ = try Parser.parse(source)
            Issue.record("\(source) parsed")
        } catch {
            #expect(error.locations == [SourceLocation(line: line, column: column)], "\(source): \(error)")
        }
    }

    @Test func constantDefaultsRefuseVariables() {
        #expect(throws: GraphQLError.self) { try Parser.parse("query ($a: Int = $b) { f }") }
    }

    @Test func invalidUTF8IsAnError() {
        #expect(throws: GraphQLError.self) { try Parser.parse([0x7B, 0x20, 0x61, 0x28, 0x78, 0x3A, 0x22, 0xFF, 0x22, 0x29, 0x7D]) }
    }

    @Test func hostileInputIsBounded() {
        let limits = GraphQLLimits(maxDocumentBytes: 10_000, maxTokens: 500, maxDepth: 8)
        // Nesting.
        let deep = String(repeating: "{ a ", count: 9) + String(repeating: "}", count: 9)
        #expect(throws: GraphQLError.self) { try Parser.parse(deep, limits: limits) }
        let shallow = String(repeating: "{ a ", count: 8) + String(repeating: "}", count: 8)
        #expect(throws: Never.self) { try Parser.parse(shallow, limits: limits) }
        let deepList = "{ a(x: " + String(repeating: "[", count: 9) + String(repeating: "]", count: 9) + ") }"
        #expect(throws: GraphQLError.self) { try Parser.parse(deepList, limits: limits) }
        let deepType = "query ($x: " + String(repeating: "[", count: 9) + "Int" + String(repeating: "]", count: 9) + ") { a }"
        #expect(throws: GraphQLError.self) { try Parser.parse(deepType, limits: limits) }
        // Tokens.
        let many = "{ " + String(repeating: "a ", count: 600) + "}"
        #expect(throws: GraphQLError.self) { try Parser.parse(many, limits: limits) }
        // Size.
        let big = "{ a }" + String(repeating: " ", count: 10_000)
        #expect(throws: GraphQLError.self) { try Parser.parse(big, limits: limits) }
        // The default limits hold a very deep document without overflowing the stack.
        let huge = String(repeating: "[", count: 50_000)
        #expect(throws: GraphQLError.self) { try Parser.parse("{ a(x: \(huge)) }") }
    }

    @Test func everyPrefixOfAQueryEndsInADocumentOrAnError() {
        let q = #"query Q($o: ID = "a\u00e9") { c: charges(filter: {orderId: {eq: $o}}, size: 1.5e1) { items { id ...F } } } fragment F on Charge { status }"#
        let bytes = Array(q.utf8)
        for n in 0...bytes.count {
            do { _ = try Parser.parse(Array(bytes[..<n])) } catch { #expect(!error.message.isEmpty) }
        }
    }
}
