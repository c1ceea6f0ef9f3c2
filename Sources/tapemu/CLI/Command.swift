/// One `tapemu` subcommand, shaped like swift-argument-parser's `AsyncParsableCommand`.
///
/// A command is a value built from its arguments: `init(arguments:)` consumes them (options and
/// flags first, positionals last, so an option's value is never taken for a positional), then
/// ``validate()`` checks how they combine, then ``run(_:)`` does the work and returns the exit
/// status. Usage problems are thrown as ``UsageError`` (exit 64 with the usage); anything else
/// run throws is printed as one line on stderr (see ``CommandFailure`` for chosen exit codes).
///
/// To add a command: write a type conforming to this protocol and add it to
/// ``CommandRegistry/commands``.
protocol TapemuCommand: Sendable {
    /// Name, abstract, usage and help text.
    static var configuration: CommandConfiguration { get }

    /// Consumes this command's arguments. Call ``Arguments/finish()`` at the end so unknown
    /// options and stray arguments are reported.
    init(arguments: inout Arguments) throws(UsageError)

    /// Checks the parsed arguments as a whole (mutually exclusive options, ranges).
    func validate() throws(UsageError)

    /// Does the work. Returns the process exit status (0 for success).
    func run(_ console: Console) async throws -> Int32
}

extension TapemuCommand {
    func validate() throws(UsageError) {}
}

/// What `--help` says about a command.
struct CommandConfiguration: Sendable {
    /// The words after `tapemu`, e.g. `"tlv decode"`. Commands sharing a first word form a group.
    var commandName: String
    /// One line for the command list.
    var abstract: String
    /// The arguments after the command name, e.g. `"[--strict] <hex>|- [--json]"`.
    let usage: String
    /// Paragraphs shown by `--help` after the abstract.
    var discussion: String
    /// Options and arguments, one line each, for `--help`.
    let options: [OptionHelp]
    /// Exit statuses other than 0 and 64, for `--help`.
    var exitCodes: [(code: Int32, meaning: String)]

    /// The usage line and the option help both come from `arguments`, each declared once
    /// (``CommandArgument``), in usage order.
    init(commandName: String, abstract: String, arguments: [any CommandArgument] = [], discussion: String = "",
         exitCodes: [(code: Int32, meaning: String)] = []) {
        self.commandName = commandName
        self.abstract = abstract
        self.usage = arguments.map(\.usage).joined(separator: " ")
        self.discussion = discussion
        self.options = arguments.flatMap(\.helpRows)
        self.exitCodes = exitCodes
    }

    /// The command name as words.
    var words: [String] { commandName.split(separator: " ").map(String.init) }

    /// `tapemu tlv decode [--json] …`
    var usageLine: String { "tapemu \(commandName) \(usage)".trimmingTrailingSpaces }
}

extension String {
    var trimmingTrailingSpaces: String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
