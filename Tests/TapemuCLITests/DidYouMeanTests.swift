import Testing
import TestSupport
@testable import tapemu

@Suite("Did you mean: mistyped commands and options", .temporaryDirectories)
struct DidYouMeanTests {
    static let cases: [(args: [String], message: String)] = [
        (["rad"], "unknown command 'rad'; did you mean 'read'?"),
        (["READ"], "unknown command 'READ'; did you mean 'read'?"),
        (["trasnmit"], "unknown command 'trasnmit'; did you mean 'transmit'?"),
        (["pay", "--ammount", "1250", "--order-id", "x"], "unknown option --ammount; did you mean '--amount'?"),
        (["read", "--jsn"], "unknown option --jsn; did you mean '--json'?"),
        (["read", "--card=amex", "--apdu-timout=1s"], "unknown option --apdu-timout; did you mean '--apdu-timeout'?"),
        (["cards", "shw", "amex"], "unknown command 'cards shw'; did you mean 'cards show'?"),
        (["tlv", "decod", "00"], "unknown command 'tlv decod'; did you mean 'tlv decode'?"),
        (["help", "rad"], "no help for unknown command 'rad'; did you mean 'read'?"),
        (["transmit", "--no-auto-respons", "00A40400"], "did you mean '--no-auto-response'?"),
    ]

    @Test("a near miss is named, exit 64", arguments: cases.indices)
    func nearMiss(index: Int) async {
        let (args, message) = Self.cases[index]
        let r = await runCLI(args)
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("tapemu: ") && r.err.split(separator: "\n")[0].hasSuffix(message), "\(args): \(r.err)")
    }

    @Test("nothing close: no suggestion")
    func farOff() async {
        let r = await runCLI(["xyzzy"])
        #expect(r.status == 64 && r.err.hasPrefix("tapemu: unknown command 'xyzzy'\n"))
        let o = await runCLI(["read", "--frobnicate"])
        #expect(o.status == 64 && o.err.hasPrefix("tapemu: unknown option --frobnicate\n"), "\(o.err)")
    }

    @Test("edit distance: insertions, deletions, substitutions, neighbour swaps")
    func distance() {
        #expect(Suggestion.distance("rad", "read") == 1)
        #expect(Suggestion.distance("raed", "read") == 1)
        #expect(Suggestion.distance("--ammount", "--amount") == 1)
        #expect(Suggestion.distance("", "abc") == 3)
        #expect(Suggestion.distance("kitten", "sitting") == 3)
        #expect(Suggestion.closest(to: "pya", among: ["pay", "replay", "read"]) == ["pay"])
        #expect(Suggestion.closest(to: "--amo", among: ["--amount", "--json"]) == ["--amount"])
        #expect(Suggestion.closest(to: "zz", among: ["pay", "read"]).isEmpty)
    }

    @Test("every command and option still parses as documented: no suggestion for a correct line")
    func correctLinesUntouched() async {
        let r = await runCLI(["read", "--card", "amex", "--apdu-timeout", "1s", "--json"])
        #expect(r.status == 0, "\(r.err)")
    }
}

@Suite("Did you mean, with --json: the error document says what stderr says", .temporaryDirectories)
struct DidYouMeanJSONTests {
    @Test("a mistyped option behind a missing one: the document's message is stderr's reason, not the missing option")
    func jsonMessageMatchesStderr() async throws {
        let r = await runCLI(["pay", "--ammount", "1250", "--order-id", "x", "--json"])
        #expect(r.status == 64)
        let reason = "unknown option --ammount; did you mean '--amount'?"
        #expect(r.err.hasPrefix("tapemu: \(reason)\n"), "\(r.err)")
        let error = try #require(try jsonObject(r.out)["error"] as? [String: Any])
        #expect(error["message"] as? String == reason)
        #expect(error["exitCode"] as? Int == 64)
    }
}

@Suite("Flags and --help as the command line gives them", .temporaryDirectories)
struct FlagSpellingTests {
    @Test("a known flag given a value is told so, not called unknown")
    func flagWithValue() async {
        let r = await runCLI(["tlv", "decode", "5A0101", "--json=yes"])
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("tapemu: --json takes no value, not '--json=yes'\n"), "\(r.err)")
        let n = await runCLI(["read", "--card", "amex", "--record", "x.apdu", "--no-redact=1"])
        #expect(n.status == 64 && n.err.hasPrefix("tapemu: --no-redact takes no value"), "\(n.err)")
    }

    @Test("after --, --help and -h are arguments, not a request for help")
    func helpAfterDashDash() async {
        let r = await runCLI(["tlv", "decode", "--", "--help"])
        #expect(r.status == 65, "\(r.err)")
        #expect(!r.out.contains("OVERVIEW"))
        #expect(r.err.hasPrefix("tapemu: not valid hex"), "\(r.err)")
        let h = await runCLI(["tlv", "decode", "--help"])
        #expect(h.status == 0 && h.out.hasPrefix("OVERVIEW"))
    }
}
