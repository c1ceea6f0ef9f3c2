import BERTLV
import PaymentRules
import Foundation
import Synchronization

/// The `tapemu` entry point: finds the command, parses its arguments, runs it, and turns
/// errors into one line on stderr and an exit status.
enum TapemuCLI {
    static let version = "0.1.0"

    static let overview = "tapemu — the Tap-to-Pay payment stack, emulated on Linux."

    /// The process's entry: ``main(_:console:commands:)`` on the standard streams. When stdout
    /// could not be written (closed, a full disk) a success becomes exit 74; any other status
    /// is kept, as it carries the outcome (a payment's 2, 3 or 4 must not turn into a retry).
    static func processMain(_ argv: [String]) async -> Int32 {
        let status = await main(argv, console: .standard)
        guard let failure = Console.standardOutputFailed else { return status }
        Console.standard.printError("tapemu: cannot write to stdout: \(Console.ReadError.describing(failure))")
        return status == ExitCode.success ? ExitCode.ioError : status
    }

    /// Runs the command line `argv` (argv[0] is the program name) and returns the exit status.
    /// `environment` gives the options that fall back on a variable (`TAPEMU_GATEWAY`, …) their
    /// value when the command line does not.
    static func main(_ argv: [String], console: Console = .standard,
                     commands: [any TapemuCommand.Type] = CommandRegistry.commands,
                     environment: [String: String] = ProcessInfo.processInfo.environment) async -> Int32 {
        let args = Array(argv.dropFirst())
        guard let first = args.first else {
            console.printError("tapemu: missing command")
            console.printError(rootHelp(commands))
            return ExitCode.usage
        }
        switch first {
        case "-h", "--help":
            console.write(rootHelp(commands))
            return ExitCode.success
        case "--version":
            console.print("tapemu \(version)")
            return ExitCode.success
        case "help":
            return help(Array(args.dropFirst()), console: console, commands: commands)
        default:
            break
        }

        guard let (command, used) = lookup(args, in: commands) else {
            return unknownCommand(args, console: console, commands: commands)
        }
        let rest = Array(args.dropFirst(used))
        // Everything after `--` is an argument, `--help` too (`tapemu tlv decode -- --help`).
        let options = rest.prefix { $0 != "--" }
        if options.contains("--help") || options.contains("-h") {
            console.write(commandHelp(command.configuration))
            return ExitCode.success
        }
        // With --json, stdout holds one JSON document whatever happens: a command that fails
        // before printing its own gets {"error": {"exitCode", "message"}}.
        let json = options.contains("--json")
        let wroteOut = Mutex(false)
        let tracked = console.observingOutput { wroteOut.withLock { $0 = true } }
        // The order ids typed (`--order-id`, as given everywhere); the parsed command adds its own.
        let identifiers = Mutex(MerchantIdentifiers.typed(rest))
        func failed(_ code: Int32, _ message: String) -> Int32 {
            // A failure can quote what it could not read (a trace line, a header, a profile's
            // value): a card number typed there is masked by the one policy, as in usage errors.
            // The merchant's identifiers stay as given.
            let message = SensitiveData.maskedText(message, keeping: identifiers.withLock { $0 })
            console.printError("tapemu: \(message)")
            if json, !wroteOut.withLock({ $0 }) { printErrorDocument(code, message, console: console) }
            return code
        }
        var arguments = Arguments(rest, environment: environment)
        do {
            let parsed = try command.init(arguments: &arguments)
            identifiers.withLock { $0 += parsed.identifiers }
            try parsed.validate()
            return try await parsed.run(json ? tracked : console)
        } catch let error as UsageError {
            // A usage error names what was typed: a card number pasted in the wrong place is
            // masked by the one policy, on stderr and in the JSON document.
            let reason = SensitiveData.maskedText(arguments.mistypedOption(documented: command.configuration.optionNames)
                ?? mistypedSubcommand(rest, of: command, in: commands) ?? error.reason, keeping: identifiers.withLock { $0 })
            console.printError("tapemu: \(reason)")
            console.printError("Usage: \(command.configuration.usageLine)")
            console.printError("See 'tapemu help \(command.configuration.commandName)'.")
            if json, !wroteOut.withLock({ $0 }) { printErrorDocument(ExitCode.usage, reason, console: console) }
            return ExitCode.usage
        } catch let failure as CommandFailure {
            return failed(failure.exitCode == 0 ? ExitCode.failure : failure.exitCode, failure.message)
        } catch {
            return failed(ExitCode.software, oneLine(String(describing: error)))
        }
    }

    /// The command whose name words are the longest prefix of `args`, and how many words it used.
    static func lookup(_ args: [String], in commands: [any TapemuCommand.Type]) -> ((any TapemuCommand.Type), Int)? {
        var best: ((any TapemuCommand.Type), Int)?
        for c in commands {
            let words = c.configuration.words
            guard words.count <= args.count, Array(args.prefix(words.count)) == words else { continue }
            if words.count > (best?.1 ?? 0) { best = (c, words.count) }
        }
        return best
    }

    private static func unknownCommand(_ args: [String], console: Console,
                                       commands: [any TapemuCommand.Type]) -> Int32 {
        // With --json, stdout holds one JSON document here too: a script that mistyped a
        // subcommand gets {"error": …}, not nothing.
        let json = args.prefix { $0 != "--" }.contains("--json")
        func refuse(_ reason: String, then more: String) -> Int32 {
            let reason = SensitiveData.maskedText(reason)
            console.printError("tapemu: \(reason)")
            console.printError(more)
            if json { printErrorDocument(ExitCode.usage, reason, console: console) }
            return ExitCode.usage
        }
        let group = commands.filter { $0.configuration.words.first == args[0] }
        if !group.isEmpty {
            // `tapemu tlv`, `tapemu tlv --help`, `tapemu tlv frobnicate`
            if args.count == 1 || args[1] == "--help" || args[1] == "-h" {
                if args.count > 1 {
                    console.write(groupHelp(args[0], group))
                    return ExitCode.success
                }
                return refuse("'\(args[0])' needs a subcommand", then: groupHelp(args[0], group))
            }
            let names = group.compactMap { $0.configuration.words.dropFirst().first }
            let hint = Suggestion.phrase(for: args[1], among: names, group: [args[0]]).map { "; \($0)" } ?? ""
            let reason = Arguments.isOptionLike(args[1]) ? "'\(args[0])' needs a subcommand"
                : "unknown command '\(args[0]) \(args[1])'\(hint)"
            return refuse(reason, then: groupHelp(args[0], group))
        }
        let names = commands.compactMap { $0.configuration.words.first } + ["help"]
        let hint = Suggestion.phrase(for: args[0], among: names).map { "; \($0)" } ?? ""
        return refuse("unknown command '\(args[0])'\(hint)", then: "See 'tapemu --help' for the list of commands.")
    }

    /// `{"error": {"exitCode", "message"}}` on stdout: what `--json` prints for a failure before
    /// any result.
    static func printErrorDocument(_ code: Int32, _ message: String, console: Console) {
        let doc = JSONValue.object(["error": .object(["exitCode": .int(Int(code)), "message": .string(message)])])
        if let text = try? JSONOutput.render(doc) { console.print(text) }
    }

    /// `tapemu cards shw`: `cards` took `shw` as an argument; when it is close to a subcommand
    /// of `cards`, the reason to give instead.
    private static func mistypedSubcommand(_ rest: [String], of command: any TapemuCommand.Type,
                                           in commands: [any TapemuCommand.Type]) -> String? {
        let words = command.configuration.words
        guard let typed = rest.first, !Arguments.isOptionLike(typed) else { return nil }
        let subcommands = commands.compactMap { c -> String? in
            let w = c.configuration.words
            return w.count == words.count + 1 && Array(w.prefix(words.count)) == words ? w.last : nil
        }
        guard let phrase = Suggestion.phrase(for: typed, among: subcommands, group: words) else { return nil }
        return "unknown command '\((words + [typed]).joined(separator: " "))'; \(phrase)"
    }

    private static func help(_ words: [String], console: Console, commands: [any TapemuCommand.Type]) -> Int32 {
        if words.isEmpty {
            console.write(rootHelp(commands))
            return ExitCode.success
        }
        if words == ["--man"] {
            console.write(ManPage.render(commands))
            return ExitCode.success
        }
        if words == ["exit-codes"] {
            console.write(exitCodesHelp())
            return ExitCode.success
        }
        if let (command, used) = lookup(words, in: commands), used == words.count {
            console.write(commandHelp(command.configuration))
            return ExitCode.success
        }
        let group = commands.filter { $0.configuration.words.first == words[0] }
        if words.count == 1, !group.isEmpty {
            console.write(groupHelp(words[0], group))
            return ExitCode.success
        }
        let names = commands.map { $0.configuration.commandName }
        let hint = Suggestion.phrase(for: words.joined(separator: " "), among: names).map { "; \($0)" } ?? ""
        console.printError(SensitiveData.maskedText("tapemu: no help for unknown command '\(words.joined(separator: " "))'\(hint)"))
        console.printError("See 'tapemu --help' for the list of commands.")
        return ExitCode.usage
    }

    // MARK: - Help text

    static func rootHelp(_ commands: [any TapemuCommand.Type]) -> String {
        var s = "OVERVIEW: \(overview)\n\n"
        s += "USAGE: tapemu <command> [<options>]\n\n"
        s += "COMMANDS:\n"
        s += table(commands.map { ($0.configuration.commandName, $0.configuration.abstract) }
                   + [("help <command>", "Show help for a command."), ("help --man", "Print the manual page (roff: `tapemu help --man | man -l -`).")])
        s += "\nOPTIONS:\n"
        s += table([("-h, --help", "Show this help."), ("--version", "Print the version.")])
        let variables = environmentVariables(commands)
        if !variables.isEmpty {
            s += "\nENVIRONMENT (an option on the command line wins):\n"
            s += table(variables.map { ($0.variable, "\($0.option) of \($0.commands.joined(separator: ", "))") })
        }
        s += "\nSee 'tapemu help <command>' for a command's options, 'tapemu help exit-codes' for the exit statuses.\n"
        return s
    }

    /// Every environment variable an option falls back on, with the option and the commands
    /// that have it, from the descriptors.
    static func environmentVariables(_ commands: [any TapemuCommand.Type])
        -> [(variable: String, option: String, commands: [String])] {
        var out: [(variable: String, option: String, commands: [String])] = []
        for c in commands {
            for a in c.configuration.arguments {
                guard let v = a.environmentVariable, let option = a.spellings.last else { continue }
                if let i = out.firstIndex(where: { $0.variable == v }) {
                    out[i].commands.append(c.configuration.commandName)
                } else {
                    out.append((v, option, [c.configuration.commandName]))
                }
            }
        }
        return out.sorted { $0.variable < $1.variable }
    }

    /// `tapemu help exit-codes`: the one table every command follows.
    static func exitCodesHelp() -> String {
        var s = "EXIT STATUS (every command; each command's help lists the ones it uses):\n"
        s += table(ExitCode.table.map { (String($0.code), $0.meaning) })
        s += "\nWith --json, a command that fails before printing its result prints {\"error\": {\"exitCode\", \"message\"}} on stdout.\n"
        return s
    }

    static func groupHelp(_ group: String, _ commands: [any TapemuCommand.Type]) -> String {
        var s = "USAGE: tapemu \(group) <subcommand>\n\nSUBCOMMANDS:\n"
        s += table(commands.map { ($0.configuration.commandName, $0.configuration.abstract) })
        s += "\nSee 'tapemu help \(group) <subcommand>' for a subcommand's options.\n"
        return s
    }

    static func commandHelp(_ c: CommandConfiguration) -> String {
        var s = "OVERVIEW: \(c.abstract)\n\n"
        s += "USAGE: \(c.usageLine)\n"
        if !c.discussion.isEmpty { s += "\n\(c.discussion)\n" }
        s += "\nOPTIONS:\n"
        s += table(c.options.map { ($0.names, $0.help) } + [("-h, --help", "Show help for this command.")])
        s += "\nEXIT STATUS:\n"
        let codes = [(ExitCode.success, "success"),
                     (ExitCode.usage, "usage error (the reason and the usage are printed on stderr)")]
            + c.exitCodes.map { ($0.code, $0.meaning) }
        s += table(codes.sorted { $0.0 < $1.0 }.map { ("\($0.0)", $0.1) })
        return s
    }

    /// Two columns, the second aligned.
    static func table(_ rows: [(String, String)]) -> String {
        let width = min(max(rows.map(\.0.count).max() ?? 0, 8), 28)
        var s = ""
        for (left, right) in rows {
            if left.count > width {
                s += "  \(left)\n  \(String(repeating: " ", count: width))  \(right)\n"
            } else {
                s += "  \(left)\(String(repeating: " ", count: width - left.count))  \(right)\n"
            }
        }
        return s
    }

    /// Errors are one line on stderr.
    static func oneLine(_ s: String) -> String {
        s.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
