

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

    static let reader = Option<String>("--reader", value: "<name>",
                                       help: "Use the PC/SC reader with this name (see `tapemu readers`).") {
        text, _ throws(UsageError) in
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw UsageError("--reader needs a reader name, a unique part of one, or an index (see `tapemu readers`)")
        }
        return text
    }
    static let trace = Option<String>("--trace", value: "<file>", help: "Replay the card side of a recorded .apdu trace.")
    static let card = Option<String>("--card", value: "<profile>",
                                     help: "Use a virtual card with this profile (the default source).")

    /// `--wait`: how long to wait for a card to be presented (`read`, `transmit`, `bench`, `pay`, `sale`).
    static let wait = Option<Duration>.duration("--wait", help: "How long to wait for a card (default 30s).", positive: true)

    /// `--apdu-timeout`: how long one exchange with the card may take, more than 0 (`read`,
    /// `transmit`, `replay`, `bench`).
    static let apduTimeout = Option<Duration>.duration(
        "--apdu-timeout", help: "How long one APDU may take (default 2s).", positive: true)

    /// `[--reader <name> | --trace <file> | --card <profile>]`, for a command's arguments.
    static let arguments: [any CommandArgument] = [OneOf([reader, trace, card])]

    init(source: Source = .virtualCard(profile: nil)) { self.source = source }

    /// Consumes `--reader`, `--trace` and `--card`; more than one is a usage error.
    init(arguments: inout Arguments) throws(UsageError) {
        let readerText = try arguments.takeOption(Self.reader.names, valueName: Self.reader.valueName)
        let trace = try arguments.value(Self.trace)
        let card = try arguments.value(Self.card)
        guard readerText.count <= 1 else { throw UsageError("--reader given \(readerText.count) times") }
        let given = [readerText.first.map { _ in "--reader" }, trace.map { _ in "--trace" }, card.map { _ in "--card" }]
            .compactMap { $0 }
        guard given.count <= 1 else {
            throw UsageError("\(given.joined(separator: " and ")) cannot be used together; choose one card source")
        }
        if let text = readerText.first {
            source = .reader(try Self.reader.parse(text, Self.reader.name))
        } else if let trace {
            source = .trace(path: trace)
        } else {
            source = .virtualCard(profile: card)
        }
    }
}
