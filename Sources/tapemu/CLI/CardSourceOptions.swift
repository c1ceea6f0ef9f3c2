/// Where a command gets its card: shared by `read`, `pay`, `bench` and friends.
///
/// `--reader NAME` (a PC/SC reader), `--trace FILE` (replay a recorded trace) or
/// `--card PROFILE` (a virtual card, the default when none is given). At most one.
struct CardSourceOptions: Sendable, Hashable {
    enum Source: Sendable, Hashable {
        /// A PC/SC reader by name.
        case reader(String)
        /// The card side of a recorded trace file.
        case trace(path: String)
        /// A virtual card; nil means the default profile.
        case virtualCard(profile: String?)
    }

    var source: Source

    /// Help lines for these options, to append to a command's options.
    static let help: [OptionHelp] = [
        OptionHelp("--reader <name>", "Use the PC/SC reader with this name (see `tapemu readers`)."),
        OptionHelp("--trace <file>", "Replay the card side of a recorded .apdu trace."),
        OptionHelp("--card <profile>", "Use a virtual card with this profile (the default source)."),
    ]

    /// The usage fragment, e.g. for `CommandConfiguration.usage`.
    static let usage = "[--reader <name> | --trace <file> | --card <profile>]"

    init(source: Source = .virtualCard(profile: nil)) { self.source = source }

    /// Consumes `--reader`, `--trace` and `--card`; more than one is a usage error.
    init(arguments: inout Arguments) throws(UsageError) {
        let reader = try arguments.option("--reader", valueName: "<name>")
        let trace = try arguments.option("--trace", valueName: "<file>")
        let card = try arguments.option("--card", valueName: "<profile>")
        let given = [reader.map { _ in "--reader" }, trace.map { _ in "--trace" }, card.map { _ in "--card" }]
            .compactMap { $0 }
        guard given.count <= 1 else {
            throw UsageError("\(given.joined(separator: " and ")) cannot be used together; choose one card source")
        }
        if let reader {
            guard !reader.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw UsageError("--reader needs a reader name, a unique part of one, or an index (see `tapemu readers`)")
            }
            source = .reader(reader)
        } else if let trace {
            source = .trace(path: trace)
        } else {
            source = .virtualCard(profile: card)
        }
    }
}

/// Output options shared by every command that can print JSON.
struct OutputOptions: Sendable, Hashable {
    /// `--json`: one JSON document on stdout instead of human output.
    var json: Bool

    static let help = [OptionHelp("--json", "Print one JSON document on stdout instead of text.")]

    init(json: Bool = false) { self.json = json }

    init(arguments: inout Arguments) {
        json = arguments.flag("--json")
    }
}
