/// A command's options, flags and positionals, each declared once — shaped like
/// swift-argument-parser's `@Option` / `@Flag` / `@Argument` (which tapemu cannot depend on).
///
/// One declaration gives the usage fragment, the `--help` line, the parsing (with the value's
/// type, not a string checked later) and the value's check, with the usage error a bad value
/// gets. A command lists its arguments once, in usage order, in its
/// ``CommandConfiguration/init(commandName:abstract:arguments:discussion:exitCodes:)``; its
/// `init(arguments:)` reads each with ``Arguments/value(_:)``, ``Arguments/required(_:)``,
/// ``Arguments/isSet(_:)`` or ``Arguments/value(_:)-positional``.
///
/// Adopting it for a new option — e.g. `--gateway URL` on `pay` — is three lines:
///
/// ```swift
/// // 1. Declare it (where the command's or its option group's other options are):
/// static let gatewayURL = Option<URL>("--gateway", value: "<url>",
///                                     help: "Use the gateway service at URL instead of the embedded one.") {
///     text, name throws(UsageError) in
///     guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
///         throw UsageError("\(name) takes an http or https URL, not '\(text)'")
///     }
///     return url
/// }
/// // 2. List it in the command's (or the group's) `arguments`: usage and help follow.
/// // 3. Read it in `init(arguments:)`:
/// gatewayURL = try arguments.value(Self.gatewayURL)          // URL?, checked
/// ```
///
/// Options shared by several commands live in a group (``PaymentOptions``,
/// ``CardSourceOptions``, ``GatewayOptions``, ``OutputOptions``): a struct with the descriptors
/// as static members, an `arguments` list and an `init(arguments:)` that reads them.
protocol CommandArgument: Sendable {
    /// The usage fragment without the brackets of an optional argument: `--wait <duration>`.
    var bareUsage: String { get }
    /// Whether the command line must have it (no brackets in the usage).
    var isRequired: Bool { get }
    /// The lines of `--help` for it.
    var helpRows: [OptionHelp] { get }
    /// The single options, flags and positionals it is made of (itself, unless it groups
    /// others): what completion and the man page list.
    var leaves: [any CommandArgument] { get }
    /// Its spellings (`-o`, `--output`); none for a positional.
    var spellings: [String] { get }
    /// The value it takes (`<file>`), nil for a flag.
    var takesValue: String? { get }
    /// The environment variable that gives its value when the command line does not.
    var environmentVariable: String? { get }
}

extension CommandArgument {
    var leaves: [any CommandArgument] { [self] }
    var environmentVariable: String? { nil }
}

extension CommandArgument {
    /// The usage fragment: `--amount <cents>`, `[--wait <duration>]`.
    var usage: String { isRequired ? bareUsage : "[\(bareUsage)]" }
}

/// One line of a command's option help: `--json` — what it does.
struct OptionHelp: Sendable {
    var names: String
    var help: String
    init(_ names: String, _ help: String) {
        self.names = names
        self.help = help
    }
}

/// An option with a value, `--name VALUE` or `--name=VALUE`, parsed into `Value`.
struct Option<Value: Sendable>: CommandArgument {
    /// Every spelling; the first is the one usage and errors name.
    let names: [String]
    /// `<cents>`, `accept|decline`.
    let valueName: String
    let help: String
    let isRequired: Bool
    /// Turns the text into the value, or throws the usage error for it; the second argument
    /// is the option's name as given.
    let parse: @Sendable (_ text: String, _ name: String) throws(UsageError) -> Value
    /// The environment variable read when the option is not given (``environment(_:)``).
    private(set) var environmentVariable: String? = nil

    init(_ names: String..., value valueName: String, help: String, required: Bool = false,
         parse: @escaping @Sendable (_ text: String, _ name: String) throws(UsageError) -> Value) {
        self.init(names: names, valueName: valueName, help: help, required: required, parse: parse)
    }

    var name: String { names[0] }
    var bareUsage: String { "\(name) \(valueName)" }
    var helpRows: [OptionHelp] {
        [OptionHelp(Self.spellings(names) + " " + valueName, help + (environmentVariable.map { " [env: \($0)]" } ?? ""))]
    }
    var spellings: [String] { names }
    var takesValue: String? { Optional(valueName) }

    /// The same option, its value taken from the environment variable `variable` when the
    /// command line does not give it (the command line wins; an empty variable counts as unset).
    func environment(_ variable: String) -> Self {
        var copy = self
        copy.environmentVariable = variable
        return copy
    }

    /// `-o, --output`: short spellings first.
    static func spellings(_ names: [String]) -> String {
        (names.filter { !$0.hasPrefix("--") } + names.filter { $0.hasPrefix("--") }).joined(separator: ", ")
    }
}

extension Option where Value == String {
    /// A text option taken as given.
    init(_ names: String..., value valueName: String, help: String, required: Bool = false) {
        self.init(names: names, valueName: valueName, help: help, required: required) { text, _ in text }
    }
}

extension Option where Value == String {
    /// A text option that may not be empty: `--name ''` is the usage error "`<name> <ifEmpty>`"
    /// (`--api-key needs the merchant API key`).
    static func nonEmpty(_ names: String..., value valueName: String, help: String, required: Bool = false,
                         ifEmpty: String) -> Self {
        Self(names: names, valueName: valueName, help: help, required: required) { text, name throws(UsageError) in
            guard !text.isEmpty else { throw UsageError("\(name) \(ifEmpty)") }
            return text
        }
    }
}

extension Option where Value == Int {
    /// A decimal integer within `range` (``Parse/integer(_:option:in:)``'s errors).
    static func integer(_ names: String..., value valueName: String, help: String, required: Bool = false,
                        in range: ClosedRange<Int> = Int.min...Int.max) -> Self {
        Self(names: names, valueName: valueName, help: help, required: required) { text, name throws(UsageError) in
            try Parse.integer(text, option: name, in: range)
        }
    }
}

extension Option where Value == Duration {
    /// A duration with a unit (``Parse/duration(_:option:)``'s errors).
    static func duration(_ names: String..., value valueName: String = "<duration>", help: String,
                         positive: Bool = false) -> Self {
        Self(names: names, valueName: valueName, help: help, required: false) { text, name throws(UsageError) in
            let d = try Parse.duration(text, option: name)
            if positive, d <= .zero { throw UsageError("\(name) must be more than 0") }
            return d
        }
    }
}

extension Option {
    /// The memberwise form, for the factories above.
    init(names: [String], valueName: String, help: String, required: Bool,
         parse: @escaping @Sendable (_ text: String, _ name: String) throws(UsageError) -> Value) {
        self.names = names
        self.valueName = valueName
        self.help = help
        self.isRequired = required
        self.parse = parse
    }

    /// The same option with the help a command gives it (its parsing and checks unchanged).
    func withHelp(_ help: String) -> Self {
        var copy = Self(names: names, valueName: valueName, help: help, required: isRequired, parse: parse)
        copy.environmentVariable = environmentVariable
        return copy
    }

    /// One of a fixed set of words, each standing for a value; anything else is `error(text)`.
    static func choice(_ names: String..., value valueName: String, help: String, _ choices: [(String, Value)],
                       error: @escaping @Sendable (String) -> String) -> Self
        where Value: Sendable
    {
        let table = choices.map { (word: $0.0, value: $0.1) }
        return Self(names: names, valueName: valueName, help: help, required: false) { text, _ throws(UsageError) in
            guard let hit = table.first(where: { $0.word == text }) else { throw UsageError(error(text)) }
            return hit.value
        }
    }
}

/// A flag, `--name`, present or not.
struct Flag: CommandArgument {
    let names: [String]
    let help: String

    init(_ names: String..., help: String) {
        self.names = names
        self.help = help
    }

    var name: String { names[0] }
    var isRequired: Bool { false }
    var bareUsage: String { name }
    var helpRows: [OptionHelp] { [OptionHelp(Option<String>.spellings(names), help)] }
    var spellings: [String] { names }
    var takesValue: String? { nil }
}

/// A positional argument, `<hex>|-`.
struct Positional: CommandArgument {
    /// How usage and help show it: `<hex>|-`.
    let valueName: String
    let help: String
    let isRequired: Bool
    /// What the usage error says is missing: `<hex> (or '-' for stdin)`.
    let missing: String
    /// Whether it may be given several times (`<file>...`).
    let repeats: Bool

    init(_ valueName: String, help: String, required: Bool = true, missing: String? = nil, repeats: Bool = false) {
        self.valueName = valueName
        self.help = help
        self.isRequired = required
        self.missing = missing ?? valueName
        self.repeats = repeats
    }

    var bareUsage: String { repeats ? "\(valueName)..." : valueName }
    var helpRows: [OptionHelp] { [OptionHelp(valueName, help)] }
    var spellings: [String] { [] }
    var takesValue: String? { Optional(valueName) }
}

/// At most one of several arguments: `[--reader <name> | --trace <file> | --card <profile>]`.
/// With `required`, exactly one: `--order-id <id> | --pending` (the command's `validate()` says
/// which combinations are wrong).
struct OneOf: CommandArgument {
    let members: [any CommandArgument]
    let isRequired: Bool
    init(_ members: [any CommandArgument], required: Bool = false) {
        self.members = members
        self.isRequired = required
    }
    var bareUsage: String { members.map(\.bareUsage).joined(separator: " | ") }
    var helpRows: [OptionHelp] { members.flatMap(\.helpRows) }
    var leaves: [any CommandArgument] { members.flatMap(\.leaves) }
    var spellings: [String] { [] }
    var takesValue: String? { nil }
}

/// An argument with options that only go with it: `[--record <file> [--no-redact]]`,
/// `[--watch [--reader <name>] [--events <n>]]` (the command's `validate()` rejects them alone).
struct WithDependents: CommandArgument {
    let base: any CommandArgument
    let dependents: [any CommandArgument]
    init(_ base: any CommandArgument, _ dependents: [any CommandArgument]) {
        self.base = base
        self.dependents = dependents
    }
    var isRequired: Bool { base.isRequired }
    var bareUsage: String { ([base.bareUsage] + dependents.map(\.usage)).joined(separator: " ") }
    var helpRows: [OptionHelp] { base.helpRows + dependents.flatMap(\.helpRows) }
    var leaves: [any CommandArgument] { base.leaves + dependents.flatMap(\.leaves) }
    var spellings: [String] { [] }
    var takesValue: String? { nil }
}

// MARK: - Reading them

extension Arguments {
    /// The option's value, parsed; nil when it is absent. Given twice is a usage error.
    /// With `environment` false, only the command line counts (an option that yields to
    /// another one given on the command line: `webhook verify --secret` over TAPEMU_API_KEY).
    mutating func value<V>(_ option: Option<V>, environment: Bool = true) throws(UsageError) -> V? {
        let given = try takeSpelledOption(option.names, valueName: option.valueName)
        guard given.count <= 1 else { throw UsageError("\(option.name) given \(given.count) times") }
        guard let (name, text) = given.first else { return environment ? try environmentValue(option) : nil }
        return try option.parse(text, name)
    }

    /// The value of `option`'s environment variable, parsed with the variable's name in its
    /// errors; nil when it has none or the variable is unset or empty.
    private func environmentValue<V>(_ option: Option<V>) throws(UsageError) -> V? {
        guard let variable = option.environmentVariable, let text = environment[variable], !text.isEmpty else { return nil }
        do {
            return try option.parse(text, variable)
        } catch {
            let reason = error.reason.contains(variable) ? error.reason : "\(variable): \(error.reason)"
            throw UsageError("\(reason) (from the environment; \(option.name) on the command line wins)")
        }
    }

    /// The option's value, or `defaultValue` when it is absent.
    mutating func value<V>(_ option: Option<V>, default defaultValue: V) throws(UsageError) -> V {
        try value(option) ?? defaultValue
    }

    /// The value of an option the command cannot do without: `missing --amount <cents>` when absent.
    mutating func required<V>(_ option: Option<V>) throws(UsageError) -> V {
        guard let v = try value(option) else { throw UsageError("missing \(option.bareUsage)") }
        return v
    }

    /// Every value of an option that may repeat, in order.
    mutating func values<V>(_ option: Option<V>) throws(UsageError) -> [V] {
        var out: [V] = []
        for (name, text) in try takeSpelledOption(option.names, valueName: option.valueName) { out.append(try option.parse(text, name)) }
        return out
    }

    /// Whether the flag was given.
    mutating func isSet(_ flag: Flag) -> Bool { takeFlag(flag.names) }

    /// The next positional; a usage error naming ``Positional/missing`` when there is none.
    mutating func value(_ positional: Positional) throws(UsageError) -> String {
        try self.positional(positional.missing)
    }
}
