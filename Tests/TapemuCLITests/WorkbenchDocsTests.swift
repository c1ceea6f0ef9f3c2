import Foundation
import Testing
import TestSupport
@testable import tapemu

@Suite("The workbench in help and README", .temporaryDirectories)
struct WorkbenchDocsTests {
    @Test("tapemu help lists the new commands; each one's help documents it")
    func help() async {
        let root = await runCLI(["help"])
        for name in ["transmit", "cards show", "cards schema", "readers"] {
            #expect(root.out.contains("\n  \(name) "), "tapemu help does not list \(name)")
        }
        let transmit = await runCLI(["help", "transmit"])
        #expect(transmit.out.contains("scriptor") && transmit.out.contains("--no-auto-response"))
        #expect(await runCLI(["help", "readers"]).out.contains("--events <n>"))
        #expect(await runCLI(["help", "replay"]).out.contains("--apdu-timeout <duration>"))
        #expect(await runCLI(["help", "trace", "show"]).out.contains("--json"))
        #expect(await runCLI(["help", "gateway", "token"]).out.contains("--json"))
    }

    /// The lines of docs/CLI.md's "What you can do with it" block that start with `prefix`.
    static func readmeLines(_ prefix: String) throws -> [String] {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        let readme = try String(contentsOfFile: parts.joined(separator: "/") + "/docs/CLI.md", encoding: .utf8)
        let block = try #require(readme.components(separatedBy: "## What you can do with it").dropFirst().first?
            .components(separatedBy: "```").dropFirst().first)
        return block.split(separator: "\n").map(String.init).filter { $0.hasPrefix(prefix) }.map { line in
            // Drop the comment (hex and names hold no '#').
            String(line.split(separator: "#", maxSplits: 1)[0]).trimmingCharacters(in: .whitespaces)
        }
    }

    @Test("docs/CLI.md: the transmit and cards show lines run as their comments say")
    func readmeLines() async throws {
        let transmit = try #require(try Self.readmeLines("tapemu transmit 00").first)
        let r = await runCLI(Array(transmit.split(separator: " ").map(String.init).dropFirst()))
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("SELECT A0000000031010") && r.out.contains("9000 success"))

        let cards = try #require(try Self.readmeLines("tapemu cards show").first)
        #expect(cards == "tapemu cards show visa-qvsdc --json > mine.json && tapemu read --card mine.json")
        let exported = await runCLI(["cards", "show", "visa-qvsdc", "--json"])
        let mine = try temporaryFile("mine.json", exported.out)
        #expect(await runCLI(["read", "--card", mine]).status == 0)
    }
}
