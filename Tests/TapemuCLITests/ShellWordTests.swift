import Foundation
import Testing
import TestSupport
@testable import tapemu

/// The commands tapemu tells a person to run next name the order as the shell will read it back:
/// `tapemu: do not retry; check with: tapemu charges --order-id …` for an order id with a space
/// named another order (or two words) when pasted.
@Suite("Order ids in the commands printed for the next step", .temporaryDirectories)
struct ShellWordTests {
    @Test("the shell reads each quoted word back as the value", arguments: [
        "order-1042", "o 1", "it's", "a$b", "`x`", "semi;colon", "tab\there", "ünïcode", "'", "\"q\"", "-dash", "*",
    ])
    func roundTrip(_ value: String) async throws {
        let word = ShellWord.quoted(value)
        let r = try await run("/bin/sh", ["-c", "printf '%s' " + word])
        #expect(r == value, "\(word)")
    }

    @Test("a plain order id is printed as it is")
    func plain() {
        #expect(ShellWord.quoted("order-1042") == "order-1042")
    }

    @Test("pay's outcome-unknown hint names an order id with a space and a quote as one word")
    func payHint() async throws {
        let dir = try temporaryDirectory()
        let order = "o 1'x"
        let r = await runCLI(["pay", "--amount", "1250", "--order-id", order, "--data-dir", dir, "--gateway-fault", "lost-answer"])
        #expect(r.status == 4, "\(r.err)")
        #expect(r.err.contains("check with: tapemu charges --order-id 'o 1'\\''x'"), "\(r.err)")
    }

    private func run(_ path: String, _ arguments: [String]) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
