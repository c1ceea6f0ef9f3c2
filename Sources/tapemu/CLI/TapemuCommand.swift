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

    /// The merchant's identifiers this command was given (order ids, an attempt id): every
    /// message shows them as given, digits and all, so an error's id can be copied back
    /// (README, "Sensitive data"); everything else in a message is masked by the one policy.
    var identifiers: [String] { get }
}

extension TapemuCommand {
    func validate() throws(UsageError) {}
    var identifiers: [String] { [] }
}
