import Testing
import VirtualCard

/// Card profiles go through the one strict JSON reader (issue 33, item 4).
@Suite struct ProfileStrictJSONTests {
    @Test("a key named twice in a profile is refused naming it, at the top and deep inside")
    func duplicateKey() throws {
        let text = CardProfiles.named("visa-qvsdc")!.jsonText
        // The same "name" again right after the opening brace, and "pan" twice in an application.
        let top = "{\"name\": \"other\"," + text.dropFirst()
        let pan = text.replacingOccurrences(of: "\"pan\" : ", with: "\"pan\" : \"4761739001010010\", \"pan\" : ", options: [], range: text.range(of: "\"pan\" : "))
        #expect(pan != text, "the profile text has no \"pan\" : to double")
        for (doubled, key) in [(top, "name"), (pan, "pan")] {
            do {
                _ = try CardProfile.decode(jsonText: doubled)
                Issue.record("a profile naming \(key) twice was read")
            } catch {
                #expect(error.code == .malformedJSON)
                #expect(error.reason.contains("\"\(key)\" appears more than once"), "\(error.reason)")
            }
        }
        #expect(try CardProfile.decode(jsonText: text) == CardProfiles.named("visa-qvsdc")!)
    }
}
