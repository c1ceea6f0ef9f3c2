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
    /// The declared arguments, each a single option, flag or positional (``CommandArgument/leaves``):
    /// the one table help, completion and the man page are made from.
    let arguments: [any CommandArgument]

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
        self.arguments = arguments.flatMap(\.leaves)
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
