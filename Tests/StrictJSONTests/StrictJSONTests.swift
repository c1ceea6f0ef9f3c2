import StrictJSON
import Testing

/// The one strict JSON reader at its edge: one case per rule (issue 33, item 4).
@Suite struct StrictJSONTests {
    struct Body: Decodable, Equatable {
        var amount: Int
        var note: String?
        var rate: Double?
    }

    static func decode(_ text: String) -> Result<Body, StrictJSONError> {
        do throws(StrictJSONError) {
            return .success(try StrictJSONReader.decode(Body.self, from: Array(text.utf8)))
        } catch {
            return .failure(error)
        }
    }

    @Test(arguments: [
        (#"{"amount":1000,"amount":999999}"#, "amount"),
        (#"{"amount":1,"note":{"a":1,"a":2}}"#, "a"),
        (#"{"amount":1,"note":"x","note":"x"}"#, "note"),
        // Equal after escapes: the same name.
        (#"{"amount":1,"\u0061mount":2}"#, "amount"),
    ])
    func aRepeatedNameIsRefusedNamingIt(text: String, key: String) throws {
        guard case .failure(.syntax(let e)) = Self.decode(text) else {
            Issue.record("\(text) was read")
            return
        }
        #expect(e.duplicateKey == key)
        #expect(e.message.contains("\"\(key)\""))
    }

    @Test func namesThatDifferAreNotRepeated() {
        #expect(throws: Never.self) { try JSONValue.parse(#"{"amount":1,"Amount":2,"amount ":3}"#) }
    }

    @Test(arguments: ["12.0", "12.5", "1e3", "1E3", "-0.0", "1.0e0"])
    func anIntegerFieldTakesOnlyAnIntegerLiteral(number: String) {
        guard case .failure(.shape(.typeMismatch(_, let c))) = Self.decode(#"{"amount":\#(number)}"#) else {
            Issue.record("amount \(number) was not refused as a type mismatch")
            return
        }
        #expect(StrictJSONReader.path(c.codingPath) == "amount")
    }

    @Test(arguments: ["1e400", "-1e400", "9223372036854775808", "18446744073709551616", "1e19"])
    func anIntegerPastItsRangeIsOutOfRangeNotInvalidJSON(number: String) {
        guard case .failure(.shape(.dataCorrupted(let c))) = Self.decode(#"{"amount":\#(number)}"#) else {
            Issue.record("amount \(number) was not refused as out of range")
            return
        }
        #expect(StrictJSONReader.path(c.codingPath) == "amount")
        #expect(c.debugDescription.contains("out of range"))
    }

    @Test(arguments: ["12.50", "1e400", "9223372036854775808", "-0", "0.1e-400", "1E+2"])
    func validNumbersAreJSON(number: String) {
        // Whatever a field makes of it, a valid number is never a syntax error.
        #expect(throws: Never.self) { try JSONValue.parse(number) }
        #expect(throws: Never.self) { try JSONValue.parse("[\(number)]") }
    }

    @Test func aFloatingFieldTakesFractionsButNotInfinity() throws {
        #expect(try Self.decode(#"{"amount":1,"rate":12.50}"#).get() == Body(amount: 1, note: nil, rate: 12.5))
        guard case .failure(.shape(.dataCorrupted)) = Self.decode(#"{"amount":1,"rate":1e400}"#) else {
            Issue.record("rate 1e400 was read")
            return
        }
    }

    @Test func integersAtTheEdgesOfTheirRange() throws {
        #expect(try Self.decode(#"{"amount":9223372036854775807}"#).get().amount == Int.max)
        #expect(try Self.decode(#"{"amount":-9223372036854775808}"#).get().amount == Int.min)
        struct Small: Decodable { var v: UInt8 }
        #expect(throws: StrictJSONError.self) { try StrictJSONReader.decode(Small.self, from: Array(#"{"v":256}"#.utf8)) }
        #expect(try StrictJSONReader.decode(Small.self, from: Array(#"{"v":255}"#.utf8)).v == 255)
    }

    @Test(arguments: [#"{"amount":"12"}"#, #"{"amount":true}"#, #"{"amount":null}"#, #"{"amount":[12]}"#])
    func noCoercion(text: String) {
        guard case .failure(.shape) = Self.decode(text) else {
            Issue.record("\(text) was read")
            return
        }
    }

    @Test func aStringFieldTakesNoNumber() {
        guard case .failure(.shape(.typeMismatch(_, let c))) = Self.decode(#"{"amount":1,"note":5}"#) else {
            Issue.record("note 5 was read as a string")
            return
        }
        #expect(StrictJSONReader.path(c.codingPath) == "note")
    }

    @Test func missingFieldsAndTheWrongTopLevel() {
        guard case .failure(.shape(.keyNotFound(let key, _))) = Self.decode(#"{"note":"x"}"#) else {
            Issue.record("a body without amount was read")
            return
        }
        #expect(key.stringValue == "amount")
        guard case .failure(.shape(let e)) = Self.decode("[]") else {
            Issue.record("[] was read")
            return
        }
        #expect(StrictJSONReader.describe(e) == "the body must be a JSON object")
    }

    @Test(arguments: ["", "{", #"{"amount":1,}"#, #"{"amount":01}"#, #"{"amount":1} x"#, "{'amount':1}"])
    func notJSONIsASyntaxError(text: String) {
        guard case .failure(.syntax(let e)) = Self.decode(text) else {
            Issue.record("\(text) was not a syntax error")
            return
        }
        #expect(e.duplicateKey == nil)
    }

    @Test func aValidBodyIsRead() throws {
        #expect(try Self.decode(#" {"amount":1250,"note":"n","extra":[1,2,{"x":null}]} "#).get() == Body(amount: 1250, note: "n", rate: nil))
    }
}
