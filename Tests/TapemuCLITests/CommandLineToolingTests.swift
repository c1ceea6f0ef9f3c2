import Foundation
import Testing
@testable import tapemu
import TestSupport

/// `tapemu` in process with `environment` as the process's environment.
func runCLI(_ args: [String], environment: [String: String]) async -> (status: Int32, out: String, err: String) {
    let captured = CapturedConsole()
    let status = await TapemuCLI.main(["tapemu"] + args, console: captured.console, environment: environment)
    return (status, captured.stdout, captured.stderr)
}

/// Runs a program to its end with `environment` added; its status and stdout + stderr.
func runTool(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, out: String) {
    let r = try runToEnd(path, arguments, environment: environment, mergingStandardError: true)
    return (r.status, r.stdout)
}

/// Issue 36, item 2: TAPEMU_GATEWAY, TAPEMU_DATA_DIR (and TAPEMU_API_KEY where the merchant
/// key option exists) stand in for their options; the command line wins; a bad value is a usage
/// error naming the variable; `help` lists them.
@Suite("tapemu: options from the environment", .temporaryDirectories)
struct EnvironmentOptionTests {
    @Test("TAPEMU_DATA_DIR is the --data-dir when none is given; --data-dir wins over it")
    func dataDirectory() async throws {
        let fromEnv = try temporaryDirectory() + "/env", fromOption = try temporaryDirectory() + "/option"
        let env = ["TAPEMU_DATA_DIR": fromEnv]
        let pay = await runCLI(["pay", "--amount", "1000", "--order-id", "env-1"], environment: env)
        #expect(pay.status == 0, "\(pay.err)")
        #expect(FileManager.default.fileExists(atPath: fromEnv))
        let charges = await runCLI(["charges", "--order-id", "env-1", "--json"], environment: env)
        #expect(charges.status == 0 && charges.out.contains("env-1"), "\(charges.err)")
        let wins = await runCLI(["pay", "--amount", "1000", "--order-id", "env-2", "--data-dir", fromOption], environment: env)
        #expect(wins.status == 0, "\(wins.err)")
        #expect(FileManager.default.fileExists(atPath: fromOption))
        let notInEnvDir = await runCLI(["charges", "--order-id", "env-2", "--json"], environment: env)
        #expect(!notInEnvDir.out.contains("\"id\""), "env-2 went to --data-dir, not TAPEMU_DATA_DIR: \(notInEnvDir.out)")
        // An empty variable counts as unset (the default directory, not an error).
        #expect(await runCLI(["pending", "--help"], environment: ["TAPEMU_DATA_DIR": ""]).status == 0)
    }

    @Test("a bad TAPEMU_GATEWAY is a usage error naming the variable; --gateway wins over it")
    func gateway() async throws {
        let dir = try temporaryDirectory()
        let bad = await runCLI(["charges", "--order-id", "x", "--data-dir", dir], environment: ["TAPEMU_GATEWAY": "ftp://example"])
        #expect(bad.status == 64)
        #expect(bad.err.hasPrefix("tapemu: TAPEMU_GATEWAY: "), "\(bad.err)")
        #expect(bad.err.contains("--gateway on the command line wins"))
        // The option given: the variable is not even read (a refused connection, not a usage error).
        let wins = await runCLI(["charges", "--order-id", "x", "--data-dir", dir, "--gateway", "http://127.0.0.1:9",
                                 "--api-key", "tpk_test_x"],
                                environment: ["TAPEMU_GATEWAY": "ftp://example"])
        #expect(wins.status != 64, "\(wins.err)")
        #expect(!wins.err.contains("TAPEMU_GATEWAY"))
        // The variable alone is used: the same refused connection as with the option.
        let used = await runCLI(["charges", "--order-id", "x", "--data-dir", dir], environment: ["TAPEMU_GATEWAY": "http://127.0.0.1:9", "TAPEMU_API_KEY": "tpk_test_x"])
        #expect(used.status == wins.status, "\(used.err)")
        #expect(used.err.contains("127.0.0.1:9"), "\(used.err)")
    }

    @Test("TAPEMU_API_KEY is webhook verify's --api-key; --secret on the command line wins over it")
    func apiKey() async throws {
        let body = try temporaryFile("body.json", "{}")
        let now = "1700000000"
        let header = "t=\(now),v1=" + String(repeating: "0", count: 64)
        let args = ["webhook", "verify", "--header", header, "--body-file", body, "--now", now]
        let none = await runCLI(args, environment: [:])
        #expect(none.status == 64 && none.err.contains("--api-key is required"), "\(none.err)")
        // The key is read from the environment: the signature is checked (and does not match).
        let fromEnv = await runCLI(args, environment: ["TAPEMU_API_KEY": "tpk_test_x"])
        #expect(fromEnv.status == 1, "\(fromEnv.err)")
        #expect((fromEnv.out + fromEnv.err).contains("noMatchingSignature"), "\(fromEnv.out)\(fromEnv.err)")
        let secret = await runCLI(args + ["--secret", "s"], environment: ["TAPEMU_API_KEY": "tpk_test_x"])
        #expect(secret.status == 1, "\(secret.err)")
        #expect(!secret.err.contains("not both"))
        let both = await runCLI(args + ["--secret", "s", "--api-key", "k"], environment: [:])
        #expect(both.status == 64)
    }

    @Test("help lists each variable, and each option's help names its variable")
    func help() async {
        let root = await runCLI(["--help"])
        #expect(root.out.contains("ENVIRONMENT"))
        for variable in ["TAPEMU_API_KEY", "TAPEMU_DATA_DIR", "TAPEMU_GATEWAY"] { #expect(root.out.contains(variable)) }
        let pay = await runCLI(["help", "pay"])
        #expect(pay.out.contains("[env: TAPEMU_GATEWAY]") && pay.out.contains("[env: TAPEMU_DATA_DIR]"))
    }
}

/// Issue 36, item 3: completion scripts and the man page come from the commands' argument
/// tables; each lists every command and every option.
@Suite("tapemu completion and help --man", .temporaryDirectories)
struct CompletionAndManPageTests {
    static let commands = CommandRegistry.commands.map { $0.configuration }

    static func options(_ c: CommandConfiguration) -> [String] {
        c.arguments.flatMap(\.spellings)
    }

    /// Every option a command reads is in its table: a command that reads an option it does
    /// not declare (so help, completion and the man page would miss it) fails here.
    @Test("every option a command asks for is declared in its argument table")
    func declared() {
        for command in CommandRegistry.commands {
            var arguments = Arguments([])
            _ = try? command.init(arguments: &arguments)
            let declared = Set(Self.options(command.configuration))
            // `--test-…` options exist only in builds with test hooks (TestHooks.swift), never in help.
            let undeclared = Set(arguments.askedFor.filter { !$0.hasPrefix("--test-") }).subtracting(declared)
            #expect(undeclared.isEmpty, "\(command.configuration.commandName) reads \(undeclared.sorted()) without declaring it")
        }
    }

    @Test("bash completes every command and every option of each", arguments: commands.map(\.commandName))
    func bash(_ name: String) async throws {
        let c = try #require(Self.commands.first { $0.commandName == name })
        let script = try temporaryFile("tapemu.bash", (await runCLI(["completion", "bash"])).out)
        func complete(_ words: [String]) throws -> Set<String> {
            let line = (["tapemu"] + words).map { ShellCompletion.quoted($0) }.joined(separator: " ")
            let r = try runTool("/bin/bash", ["-c", "source \(script); COMP_WORDS=(\(line)); COMP_CWORD=\(words.count); _tapemu; printf '%s\\n' \"${COMPREPLY[@]}\""])
            #expect(r.status == 0, "\(r.out)")
            return Set(r.out.split(separator: "\n").map(String.init))
        }
        // Each word of the command, completed from its prefix.
        for (i, word) in c.words.enumerated() {
            #expect(try complete(Array(c.words.prefix(i)) + [String(word.prefix(2))]).contains(word), "\(name): \(word)")
        }
        let offered = try complete(c.words + ["-"])
        for option in Self.options(c) { #expect(offered.contains(option), "\(name): \(option) not completed") }
        // After an option that takes a file, file names.
        if let fileOption = c.arguments.first(where: { ShellCompletion.takesPath($0.takesValue) && !$0.spellings.isEmpty }) {
            let dir = try temporaryDirectory()
            FileManager.default.createFile(atPath: dir + "/trace-file.apdu", contents: Data())
            #expect(try complete(c.words + [fileOption.spellings[0], dir + "/trace-f"]).contains(dir + "/trace-file.apdu"))
        }
    }

    @Test("fish completes every command and every option of each", arguments: commands.map(\.commandName))
    func fish(_ name: String) async throws {
        let c = try #require(Self.commands.first { $0.commandName == name })
        let script = try temporaryFile("tapemu.fish", (await runCLI(["completion", "fish"])).out)
        let line = (["tapemu"] + c.words).joined(separator: " ")
        let r = try runTool("/usr/bin/fish", ["--no-config", "-c", "source \(script); complete -C '\(line) -'; complete -C '\(line) --'"])
        #expect(r.status == 0, "\(r.out)")
        let offered = Set(r.out.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") })
        for option in Self.options(c) { #expect(offered.contains(option), "\(name): \(option) not completed: \(offered.sorted())") }
        let parent = (["tapemu"] + c.words.dropLast()).joined(separator: " ")
        let sub = try runTool("/usr/bin/fish", ["--no-config", "-c", "source \(script); complete -C '\(parent) '"])
        #expect(sub.out.split(separator: "\n").contains { $0.hasPrefix(c.words.last! + "\t") }, "\(name): \(sub.out)")
    }

    @Test("zsh: the script parses and names every command and option")
    func zsh() async throws {
        let text = (await runCLI(["completion", "zsh"])).out
        #expect(text.hasPrefix("#compdef tapemu"))
        let script = try temporaryFile("_tapemu", text)
        let r = try runTool("/usr/bin/zsh", ["-n", script])
        #expect(r.status == 0, "\(r.out)")
        for c in Self.commands {
            #expect(text.contains("'\(c.commandName)')"), "\(c.commandName)")
            for option in Self.options(c) { #expect(text.contains("'\(option):"), "\(c.commandName): \(option)") }
        }
    }

    @Test("an unknown shell is a usage error")
    func unknownShell() async {
        let r = await runCLI(["completion", "tcsh"])
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("tapemu: unknown shell 'tcsh' (bash, zsh or fish)"))
    }

    @Test("help --man is roff that man -l renders, with every command, option and variable")
    func manPage() async throws {
        let page = await runCLI(["help", "--man"])
        #expect(page.status == 0)
        #expect(page.out.hasPrefix(".TH TAPEMU 1 "))
        let file = try temporaryFile("tapemu.1", page.out)
        let r = try runTool("/usr/bin/man", ["-l", file], environment: ["MANWIDTH": "300", "LC_ALL": "C", "MANPAGER": "cat", "PAGER": "cat"])
        #expect(r.status == 0, "\(r.out)")
        #expect(!r.out.contains("warning"), "\(r.out)")
        for c in Self.commands {
            #expect(r.out.contains("tapemu \(c.commandName)"), "\(c.commandName) missing from the man page")
            for option in Self.options(c) { #expect(r.out.contains(option), "\(c.commandName): \(option) missing from the man page") }
        }
        for v in TapemuCLI.environmentVariables(CommandRegistry.commands) { #expect(r.out.contains(v.variable)) }
        #expect(r.out.contains("EXIT STATUS"))
    }
}

/// Issue 36, item 8: the small ones.
@Suite("tapemu: the small ones of issue 36", .temporaryDirectories)
struct SmallFixesTests {
    @Test("a profile that is a device or a FIFO is refused by its type, with what it is",
          arguments: [["cards", "show"], ["read", "--card"]])
    func notARegularFile(_ command: [String]) async throws {
        let zero = await runCLI(command + ["/dev/zero"])
        #expect(zero.status == 74)
        #expect(zero.err.contains("cannot read the profile file /dev/zero: it is a character device, not a regular file"), "\(zero.err)")
        let fifo = try temporaryDirectory() + "/profile.json"
        #expect(mkfifo(fifo, 0o600) == 0)
        // Refused before any read: opening a FIFO with no writer would block for ever.
        let r = await runCLI(command + [fifo])
        #expect(r.status == 74)
        #expect(r.err.contains("it is a FIFO, not a regular file"), "\(r.err)")
    }

    @Test("pay says why it waits for a location fix, and for how long (seed 000: 15 s)")
    func locationWait() async throws {
        let r = await runCLI(["pay", "--amount", "1000", "--order-id", "loc-1", "--data-dir", try temporaryDirectory()])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("tapemu: waiting for a location fix (Tap to Pay needs the device's location before the first payment; at most 15 s, then locationTimeout)"), "\(r.err)")
    }

    @Test("a PDOL asking for 255 bytes (DF01 FF) is decoded, not refused as a BER length")
    func dolLength() async {
        let r = await runCLI(["tlv", "decode", "9F3803DF01FF"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("255 bytes of data"), "\(r.out)")
        #expect(r.out.contains("DF01 unknown tag [255]"), "\(r.out)")
    }
}

/// Issue 36, item 5: without pcsc-tools' list the ATR is shown alone, and readers says so.
@Suite("tapemu readers: ATR names without a list")
struct ATRNamesWithoutListTests {
    @Test("no list: no name, and the line says where tapemu looked")
    func noList() {
        #expect(ReadersCommand.knownAs([0x3B, 0x80, 0x80, 0x01, 0x01], nil) == nil)
        let line = ReadersCommand.namesSource(nil)
        #expect(line.hasPrefix("ATR names: no smartcard_list.txt (looked in "))
        #expect(line.contains("/usr/share/pcsc/smartcard_list.txt") && line.hasSuffix("the ATR alone is shown"))
    }
}
