/// "Did you mean …?" for a mistyped command, subcommand or option: the known names closest to
/// what was typed, by edit distance (a swap of two neighbours counts as one edit), or the one
/// name it is a prefix of.
enum Suggestion {
    /// The candidates closest to `typed`, best first (several only when equally close); empty
    /// when none is close enough to be what was meant.
    static func closest(to typed: String, among candidates: [String]) -> [String] {
        let unique = candidates.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        guard !typed.isEmpty else { return [] }
        let scored = unique.map { ($0, distance(typed.lowercased(), $0.lowercased())) }
        let near = scored.filter { $0.0 != typed && $0.1 <= allowedEdits(for: $0.0) }
        if let best = near.map(\.1).min() {
            return near.filter { $0.1 == best }.map(\.0)
        }
        // `--amo` → `--amount`: a prefix of exactly one name (at least 3 characters typed).
        let bare = typed.drop { $0 == "-" }
        let prefixed = unique.filter { $0.hasPrefix(typed) && $0 != typed }
        if bare.count >= 3, prefixed.count == 1 { return prefixed }
        return []
    }

    /// `did you mean 'read'?`, `did you mean 'pay' or 'sale'?`, or nil. `group` goes before
    /// each name found (`did you mean 'cards show'?`).
    static func phrase(for typed: String, among candidates: [String], group: [String] = []) -> String? {
        let found = closest(to: typed, among: candidates)
        guard !found.isEmpty else { return nil }
        return "did you mean " + found.map { "'\((group + [$0]).joined(separator: " "))'" }.joined(separator: " or ") + "?"
    }

    /// How many edits still count as a typo of `name`: one for short names, two from 5
    /// characters on (leading dashes not counted), so `rad` finds `read` but `xyz` finds nothing.
    static func allowedEdits(for name: String) -> Int {
        name.drop { $0 == "-" }.count >= 5 ? 2 : 1
    }

    /// The optimal-string-alignment distance: insertions, deletions, substitutions and swaps
    /// of two neighbouring characters each cost one.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}

extension Arguments {
    /// When a usage error has a mistyped option behind it (`--ammount` left over while `pay`
    /// complains that `--amount` is missing), the reason to give instead:
    /// `unknown option --ammount; did you mean '--amount'?`. `documented` are the command's
    /// options as its help names them, for errors thrown before every option was asked for.
    func mistypedOption(documented: [String]) -> String? {
        let names = Array(Set(askedFor + documented)).sorted()
        for token in leftover where Self.isOptionLike(token) {
            let name = token.split(separator: "=", maxSplits: 1).first.map(String.init) ?? token
            guard !names.contains(name), !name.dropFirst().allSatisfy({ $0.isNumber || $0 == "." }),
                  let phrase = Suggestion.phrase(for: name, among: names) else { continue }
            return "unknown option \(name); \(phrase)"
        }
        return nil
    }
}

extension CommandConfiguration {
    /// Every option name the usage line and the option help mention (`--amount`, `-o`, `-n`).
    var optionNames: [String] {
        let text = ([usage] + options.map(\.names)).joined(separator: " ")
        let words = text.split { !($0.isLetter || $0.isNumber || $0 == "-") }
        return words.map(String.init).filter { word in
            word.hasPrefix("-") && word.drop { $0 == "-" }.first?.isLetter == true
        }
    }
}
