import Foundation
import ISO7816
import Testing
@testable import VirtualCard

/// The profile file format as documented: the JSON Schema says what the decoder reads, and
/// every error names the field by its JSON path.
@Suite("Card profile schema and JSON paths")
struct CardProfileSchemaTests {
    static func schema() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(CardProfile.jsonSchema.utf8)) as? [String: Any])
    }

    static func definition(_ name: String?) throws -> [String: Any] {
        let schema = try schema()
        guard let name else { return schema }
        return try #require((schema["$defs"] as? [String: Any])?[name] as? [String: Any], "no $defs/\(name)")
    }

    static func fields<K: CodingKey & CaseIterable>(_ keys: K.Type) -> Set<String> { Set(K.allCases.map(\.stringValue)) }

    @Test("every object of the schema has exactly the decoder's fields, and rejects others")
    func fieldsMatchTheDecoder() throws {
        let pairs: [(String?, Set<String>)] = [
            (nil, Self.fields(CardProfile.CodingKeys.self)),
            ("application", Self.fields(CardApplication.CodingKeys.self)),
            ("record", Self.fields(CardRecord.CodingKeys.self)),
            ("dataObject", Self.fields(CardDataObject.CodingKeys.self)),
            ("behaviour", Self.fields(CardBehaviour.CodingKeys.self)),
            ("scriptedResponse", Self.fields(ScriptedResponse.CodingKeys.self)),
        ]
        for (name, keys) in pairs {
            let d = try Self.definition(name)
            let properties = try #require(d["properties"] as? [String: Any])
            #expect(Set(properties.keys) == keys, "\(name ?? "profile")")
            #expect(d["additionalProperties"] as? Bool == false, "\(name ?? "profile")")
        }
    }

    @Test("the schema's required fields are the ones the decoder cannot do without")
    func requiredFields() throws {
        let required = try #require(try Self.definition(nil)["required"] as? [String])
        for field in required {
            #expect(throws: VirtualCardError.self, "\(field)") {
                try CardProfile.decode(jsonText: CardProfileTests.variant { $0[field] = nil })
            }
        }
        let appRequired = try #require(try Self.definition("application")["required"] as? [String])
        for field in appRequired {
            #expect(throws: VirtualCardError.self, "\(field)") {
                try CardProfile.decode(jsonText: CardProfileTests.app { $0[field] = nil })
            }
        }
        // An application with only its required fields loads.
        let bare = CardProfileTests.app { app in
            for key in app.keys where !appRequired.contains(key) { app[key] = nil }
        }
        #expect(try CardProfile.decode(jsonText: bare).applications[0].records.isEmpty)
    }

    @Test("the schema's hex pattern accepts what the loader reads as hex, and nothing else",
          arguments: ["", "00", "00A40400", "00 A4:04\t00", " 0a0b ", "0", "0G", "00 A", "A 0", "0x00"])
    func hexPattern(text: String) throws {
        let pattern = try #require(try Self.definition("hex")["pattern"] as? String)
        let regex = try NSRegularExpression(pattern: pattern)
        let matches = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
        #expect(matches == ((try? Hex.decode(text)) != nil), "'\(text)'")
    }

    static let inconsistencies: [(String, String, String)] = [
        ("AID too short", CardProfileTests.app { $0["aid"] = "A000" }, "applications[0].aid: "),
        ("AIP of 3 bytes", CardProfileTests.app { $0["aip"] = "000000" }, "applications[0].aip: "),
        ("PDOL does not parse", CardProfileTests.app { $0["pdol"] = "9F" }, "applications[0].pdol: "),
        ("AFL names a missing record", CardProfileTests.app { $0["afl"] = "08010200" },
         "applications[0].afl: AFL entry 1 (08010200) names SFI 1 record 2, which the card does not have"),
        ("PAN fails Luhn", CardProfileTests.app { $0["pan"] = "4111111111111112" }, "applications[0].pan: "),
        ("key too short", CardProfileTests.variant { $0["issuerMasterKey"] = "0123456789ABCDEF" }, "issuerMasterKey: "),
        ("duplicate record", CardProfileTests.app {
            $0["records"] = [["sfi": 1, "record": 1, "objects": []], ["sfi": 1, "record": 1, "objects": []]]
        }, "applications[0].records[1]: SFI 1 record 1 appears twice"),
        ("5A differs, nested", CardProfileTests.app {
            $0["records"] = [["sfi": 1, "record": 1, "objects": [
                ["tag": "5F20", "text": "ME"],
                ["tag": "BF0C", "objects": [["tag": "5A", "hex": "4761739001010010"]]],
            ]]]
        }, "applications[0].records[0].objects[1].objects[0].hex: the PAN in 5A differs"),
        ("57 differs in GPO objects", CardProfileTests.app {
            $0["gpoObjects"] = [["tag": "57", "hex": "4761739001010010D28122011000012345"]]
        }, "applications[0].gpoObjects[0].hex: the PAN in track 2 (57) differs"),
        ("mute at exchange 0", CardProfileTests.variant { $0["behaviour"] = ["muteAtExchange": 0] }, "behaviour.muteAtExchange: "),
        ("not hex in a record", CardProfileTests.app {
            $0["records"] = [["sfi": 1, "record": 1, "objects": [["tag": "5F20", "text": "ME"], ["tag": "5A", "hex": "41ZZ"]]]]
        }, "applications[0].records[0].objects[1].hex: not hex"),
        ("misspelt field", CardProfileTests.app { $0["lable"] = "X" }, "applications[0].lable: unknown field 'lable'"),
    ]

    @Test("every error names the field by its JSON path", arguments: inconsistencies.indices)
    func jsonPaths(index: Int) {
        let (label, json, path) = Self.inconsistencies[index]
        do {
            _ = try CardProfile.decode(jsonText: json, source: "mine.json")
            Issue.record("\(label): loaded")
        } catch {
            #expect(error.reason.hasPrefix("mine.json: \(path)"), "\(label): \(error.reason)")
            #expect(!error.reason.contains("4111111111111111") && !error.reason.contains("4761739001010010"))
        }
    }

    @Test("validate() on a profile built in code names the path too")
    func validateInCode() {
        var p = CardProfiles.named("visa-qvsdc")!
        p.applications[0].aip = [0]
        #expect(throws: VirtualCardError.self) { try p.validate() }
        do { try p.validate() } catch {
            #expect(error.code == .inconsistentProfile)
            #expect(error.reason == "profile 'visa-qvsdc': applications[0].aip: the AIP has 2 bytes")
        }
    }
}
