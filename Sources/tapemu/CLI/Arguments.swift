/// The arguments of one command, consumed piece by piece by its `init(arguments:)` through the
/// descriptors of CommandArgument.swift (`value(_:)`, `required(_:)`, `isSet(_:)`), which declare
/// each option once.
///
/// Options are `--name VALUE` or `--name=VALUE`; flags are `--name`. A lone `-` is a positional
/// (conventionally stdin). Everything after `--` is positional. Consume flags and options
/// before positionals: an option's value is only known to be one when the option is asked for.
struct Arguments: Sendable {
    private var tokens: [String]
    private var afterDashDash: [String]
    /// Every option and flag name the command asked for, for "did you mean" in ``finish()``.
    private(set) var askedFor: [String] = []
    /// The process's environment, for the options that fall back on a variable
    /// (``Option/environment(_:)``: `TAPEMU_GATEWAY`, `TAPEMU_DATA_DIR`, …).
    let environment: [String: String]

    init(_ arguments: [String], environment: [String: String] = [:]) {
        self.environment = environment
        if let i = arguments.firstIndex(of: "--") {
            tokens = Array(arguments[..<i])
            afterDashDash = Array(arguments[(i + 1)...])
        } else {
            tokens = arguments
            afterDashDash = []
        }
    }

    /// Whether `token` looks like an option or flag rather than a value.
    static func isOptionLike(_ token: String) -> Bool { token.hasPrefix("-") && token != "-" }

    /// Whether any of `names` was given (every occurrence is consumed).
    mutating func takeFlag(_ names: [String]) -> Bool {
        askedFor += names
        var seen = false
        tokens.removeAll { token in
            if names.contains(token) { seen = true; return true }
            return false
        }
        return seen
    }

    /// Every value given to an option named any of `names`, in order (every occurrence is consumed).
    mutating func takeOption(_ names: [String], valueName: String) throws(UsageError) -> [String] {
        try takeSpelledOption(names, valueName: valueName).map(\.value)
    }

    /// Every value given to an option named any of `names`, in order, each with the spelling
    /// it was given under (`--count` or `-n`), for the errors about it.
    mutating func takeSpelledOption(_ names: [String], valueName: String) throws(UsageError) -> [(name: String, value: String)] {
        askedFor += names
        var values: [(name: String, value: String)] = []
        var kept: [String] = []
        var i = 0
        while i < tokens.count {
            let t = tokens[i]
            if names.contains(t) {
                guard i + 1 < tokens.count, !tokens[i + 1].hasPrefix("--") else {
                    throw UsageError("\(t) needs a value \(valueName)")
                }
                values.append((t, tokens[i + 1]))
                i += 2
                continue
            }
            if let eq = t.firstIndex(of: "="), names.contains(String(t[..<eq])) {
                let v = String(t[t.index(after: eq)...])
                guard !v.isEmpty else { throw UsageError("\(t[..<eq]) needs a value \(valueName)") }
                values.append((String(t[..<eq]), v))
                i += 1
                continue
            }
            kept.append(t)
            i += 1
        }
        tokens = kept
        return values
    }

    /// The next positional argument; a usage error naming `valueName` when there is none.
    mutating func positional(_ valueName: String) throws(UsageError) -> String {
        guard let v = optionalPositional() else {
            // `tlv decode -x`: the value was given, but looks like an option nobody knows.
            if let t = tokens.first(where: Self.isOptionLike) {
                let name = t.split(separator: "=", maxSplits: 1).first.map(String.init) ?? t
                throw UsageError("unknown option \(name) (and missing \(valueName))")
            }
            throw UsageError("missing \(valueName)")
        }
        return v
    }

    /// The next positional argument, or nil.
    mutating func optionalPositional() -> String? {
        if let i = tokens.firstIndex(where: { !Self.isOptionLike($0) }) {
            return tokens.remove(at: i)
        }
        if !afterDashDash.isEmpty { return afterDashDash.removeFirst() }
        return nil
    }

    /// All remaining positional arguments.
    mutating func remainingPositionals() -> [String] {
        var out: [String] = []
        while let v = optionalPositional() { out.append(v) }
        return out
    }

    /// The tokens not consumed so far (before `--`).
    var leftover: [String] { tokens }

    /// Reports anything not consumed: an unknown option or an unexpected argument.
    func finish() throws(UsageError) {
        if let t = tokens.first(where: Self.isOptionLike) {
            let name = t.split(separator: "=", maxSplits: 1).first.map(String.init) ?? t
            // `--json=yes`: a flag the command knows, given a value (an option's would be taken).
            if name != t, askedFor.contains(name) { throw UsageError("\(name) takes no value, not '\(t)'") }
            let hint = Suggestion.phrase(for: name, among: askedFor.filter { $0.hasPrefix("-") }).map { "; \($0)" } ?? ""
            throw UsageError("unknown option \(name)\(hint)")
        }
        if let t = tokens.first ?? afterDashDash.first {
            throw UsageError("unexpected argument '\(t)'")
        }
    }
}
