import Foundation
import Testing
import TestSupport
import VirtualCard
@testable import tapemu

/// `Tests/Fixtures/` of this package.
let fixtures: String = {
    var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(2)   // TapemuCLITests/<this file>.swift
    return parts.joined(separator: "/") + "/Fixtures"
}()

@Suite("Card profiles as a documented format: cards show, cards schema, errors at JSON paths", .temporaryDirectories)
struct CardProfileCommandTests {
    @Test("cards show: the profile for people, the PAN masked")
    func showText() async throws {
        let r = await runCLI(["cards", "show", "mastercard-mchip"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.hasPrefix("mastercard-mchip  "))
        #expect(r.out.contains("Application 1  A0000000041010"))
        #expect(r.out.contains("CDOL1"))
        #expect(r.out.contains("Record     SFI 2 record 1: 5A "))
        for pan in fullPANs { #expect(!r.out.contains(pan)) }
    }

    @Test("cards show --json of every built-in profile loads back as the same profile, and reads the same",
          arguments: CardProfiles.all.map(\.name))
    func exportRoundTrips(name: String) async throws {
        let r = await runCLI(["cards", "show", name, "--json"])
        #expect(r.status == 0, "\(r.err)")
        let builtIn = try #require(CardProfiles.named(name))
        #expect(try CardProfile.decode(jsonText: r.out) == builtIn)
        // Through --card FILE.json, as a user would.
        let file = try temporaryFile("\(name).json", r.out)
        let fromFile = await runCLI(["read", "--card", file, "--json"])
        let original = await runCLI(["read", "--card", name, "--json"])
        #expect(fromFile.status == original.status)
        if original.status == 0 {
            // The same application and card data (the cryptograms differ: each read has its own
            // unpredictable number).
            let a = try jsonObject(fromFile.out), b = try jsonObject(original.out)
            for key in ["application", "card"] {
                #expect(NSDictionary(dictionary: a[key] as? [String: Any] ?? [:])
                    == NSDictionary(dictionary: b[key] as? [String: Any] ?? [:]), "\(key)")
            }
        }
    }

    @Test("cards schema prints the JSON Schema; a fixture made from an export loads with --card")
    func schema() async throws {
        let r = await runCLI(["cards", "schema"])
        #expect(r.status == 0)
        let schema = try jsonObject(r.out)
        #expect(schema["$schema"] as? String == "https://json-schema.org/draft/2020-12/schema")
        let defs = try #require(schema["$defs"] as? [String: Any])
        #expect(Set(defs.keys).isSuperset(of: ["application", "record", "dataObject", "behaviour"]))
        let slow = await runCLI(["cards", "show", fixtures + "/slow-gpo.json"])
        #expect(slow.status == 0, "\(slow.err)")
        #expect(slow.out.contains("card time by instruction: A8 2.5 seconds"))
    }

    static let badProfiles: [(edit: String, path: String)] = [
        ("records[2].objects[1].hex=ZZ", "applications[0].records[2].objects[1].hex: not hex"),
        ("records[1].objects[0].hex=5555555555554444", "applications[0].records[1].objects[0].hex: the PAN in 5A differs"),
        ("afl=08010300", "applications[0].afl: AFL entry 1 (08010300) names SFI 1 record 2"),
        ("aid=A000", "applications[0].aid: an AID has 5 to 16 bytes"),
        ("lable=X", "applications[0].lable: unknown field 'lable'"),
        ("pdol=9F", "applications[0].pdol: PDOL"),
    ]

    @Test("a profile error names the field by its JSON path, exit 65", arguments: badProfiles.indices)
    func errorPaths(index: Int) async throws {
        let (edit, expected) = Self.badProfiles[index]
        var profile = try JSONSerialization.jsonObject(with: Data(CardProfiles.named("mastercard-mchip")!.jsonText.utf8)) as! [String: Any]
        var apps = profile["applications"] as! [[String: Any]]
        let (path, value) = (String(edit.split(separator: "=")[0]), String(edit.split(separator: "=")[1]))
        if path.hasPrefix("records[") {
            // records[i].objects[j].hex
            let numbers = path.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            var records = apps[0]["records"] as! [[String: Any]]
            var objects = records[numbers[0]]["objects"] as! [[String: Any]]
            objects[numbers[1]]["hex"] = value
            records[numbers[0]]["objects"] = objects
            apps[0]["records"] = records
        } else {
            apps[0][path] = value
        }
        profile["applications"] = apps
        let file = try temporaryFile("bad.json", String(decoding: try JSONSerialization.data(withJSONObject: profile), as: UTF8.self))
        let r = await runCLI(["read", "--card", file])
        #expect(r.status == 65)
        #expect(r.err.contains("\(file): \(expected)"), "\(r.err)")
        #expect(r.err.split(separator: "\n").count == 1)
        for pan in fullPANs + ["5555555555554444"] { #expect(!r.err.contains(pan)) }
    }
}
