import Foundation
import Synchronization
import Testing
@testable import tapemu
import TestSupport

@Suite("Options declared once: usage, help, parsing and checks from one descriptor", .temporaryDirectories)
struct CommandArgumentTests {
    static let count = Option<Int>.integer("-n", "--count", value: "<reads>", help: "How many.", required: true, in: 1...10)
    static let mode = Option<Bool>.choice("--mode", value: "on|off", help: "The mode.", [("on", true), ("off", false)],
                                          error: { "--mode is on or off, not '\($0)'" })
    static let verbose = Flag("--verbose", "-v", help: "Say more.")
    static let files = Positional("<file>", help: "The inputs.", required: false, repeats: true)

    @Test("the usage line and the help rows come from the declarations")
    func usageAndHelp() {
        let c = CommandConfiguration(commandName: "demo", abstract: "A demo.",
                                     arguments: [Self.count, OneOf([Self.mode, Self.verbose]), Self.files])
        #expect(c.usageLine == "tapemu demo -n <reads> [--mode on|off | --verbose] [<file>...]")
        #expect(c.options.map(\.names) == ["-n, --count <reads>", "--mode on|off", "-v, --verbose", "<file>"])
        #expect(c.options.map(\.help) == ["How many.", "The mode.", "Say more.", "The inputs."])
    }

    @Test("options that only go with another are shown inside its brackets, as validate() wants them")
    func dependentsInUsage() {
        let record = Option<String>("--record", value: "<file>", help: "Record.")
        let noRedact = Flag("--no-redact", help: "Keep the PAN.")
        let c = CommandConfiguration(commandName: "demo", abstract: "A demo.", arguments: [WithDependents(record, [noRedact])])
        #expect(c.usageLine == "tapemu demo [--record <file> [--no-redact]]")
        #expect(c.options.map(\.names) == ["--record <file>", "--no-redact"])
        #expect(ReadCommand.configuration.usageLine.contains("[--record <file> [--no-redact]]"))
        #expect(ReadersCommand.configuration.usageLine == "tapemu readers [--watch [--reader <name>] [--events <n>]] [--json]")
    }

    @Test("values are parsed into their type, and a bad one is the declared usage error")
    func parsing() throws {
        var a = Arguments(["--count=7", "--mode", "off", "-v", "x", "y"])
        #expect(try a.required(Self.count) == 7)
        #expect(try a.value(Self.mode) == false)
        let verbose = a.isSet(Self.verbose)
        #expect(verbose)
        let rest = a.remainingPositionals()
        #expect(rest == ["x", "y"])
        try a.finish()

        func reason(_ args: [String], _ read: (inout Arguments) throws(UsageError) -> Void) -> String? {
            var a = Arguments(args)
            do { try read(&a); return nil } catch { return error.reason }
        }
        #expect(reason([]) { a throws(UsageError) in _ = try a.required(Self.count) } == "missing -n <reads>")
        #expect(reason(["-n", "11"]) { a throws(UsageError) in _ = try a.required(Self.count) }
                == "-n must be between 1 and 10, not 11")
        // The error names the option as it was typed.
        #expect(reason(["--count", "0"]) { a throws(UsageError) in _ = try a.required(Self.count) }
                == "--count must be between 1 and 10, not 0")
        #expect(reason(["--count=x"]) { a throws(UsageError) in _ = try a.required(Self.count) }
                == "--count takes a whole number, not 'x'")
        #expect(reason(["-n", "1", "--count", "2"]) { a throws(UsageError) in _ = try a.required(Self.count) }
                == "-n given 2 times")
        #expect(reason(["--mode", "maybe"]) { a throws(UsageError) in _ = try a.value(Self.mode) }
                == "--mode is on or off, not 'maybe'")
    }

    @Test("--apdu-timeout is declared once: every command that takes it refuses 0 with the same words", arguments: [
        ["read"], ["transmit", "00A4040000"], ["replay", "x.apdu"], ["bench", "-n", "1"],
    ])
    func apduTimeoutDeclaredOnce(command: [String]) async {
        let r = await runCLI(command + ["--apdu-timeout", "0s"])
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("tapemu: --apdu-timeout must be more than 0\n"), "\(command): \(r.err)")
        let ok = await runCLI(command + ["--apdu-timeout", "-1s"])
        #expect(ok.status == 64 && ok.err.hasPrefix("tapemu: --apdu-timeout takes a duration"), "\(command): \(ok.err)")
    }

    @Test("--wait is declared once: every command that waits for a card reads it the same way", arguments: [
        ["read"], ["transmit", "00A4040000"], ["bench", "-n", "1"], ["pay", "--amount", "1", "--order-id", "w"],
        ["sale", "--amount", "1", "--order-id", "w"],
    ])
    func waitDeclaredOnce(command: [String]) async throws {
        let r = await runCLI(command + ["--wait", "5x"])
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("tapemu: --wait takes a duration like 250ms, 30s or 2m, not '5x'\n"), "\(command): \(r.err)")
        // No card can be presented in no time: a zero wait is a usage error, not a timeout.
        let zero = await runCLI(command + ["--wait", "0s"])
        #expect(zero.status == 64 && zero.err.hasPrefix("tapemu: --wait must be more than 0\n"), "\(command): \(zero.err)")
        let help = TapemuCLI.commandHelp(try #require(TapemuCLI.lookup(command, in: CommandRegistry.commands)).0.configuration)
        #expect(help.contains("--wait <duration>"))
    }

    @Test("--gateway-timeout 0 is a usage error: no gateway answers in no time", arguments: [
        ["pay", "--amount", "1", "--order-id", "w"], ["sale", "--amount", "1", "--order-id", "w"],
    ])
    func zeroGatewayTimeout(command: [String]) async {
        let r = await runCLI(command + ["--gateway-timeout", "0ms"])
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("tapemu: --gateway-timeout must be more than 0\n"), "\(command): \(r.err)")
    }

    @Test("a misspelt option is told with the declared one it is near")
    func didYouMean() {
        var a = Arguments(["--mdoe", "on"])
        _ = try? a.value(Self.mode)
        do {
            try a.finish()
            Issue.record("--mdoe was accepted")
        } catch {
            #expect(error.reason.contains("did you mean '--mode'"))
        }
    }

    @Test("a test's temporary directories are gone when it ends")
    func temporaryDirectoriesAreRemoved() async throws {
        let test = try #require(Test.current)
        let made = Mutex<String?>(nil)
        try await TemporaryDirectories().provideScope(for: test, testCase: nil) {
            let dir = try temporaryDirectory()
            #expect(FileManager.default.fileExists(atPath: dir))
            made.withLock { $0 = dir }
        }
        let dir = try #require(made.withLock { $0 })
        #expect(!FileManager.default.fileExists(atPath: dir))
    }
}
