public import Foundation

/// What card an ATR is, from pcsc-tools' list of known ATRs (`smartcard_list.txt`, the file
/// `pcsc_scan` names cards from; Debian's package `pcsc-tools` installs it as
/// `/usr/share/pcsc/smartcard_list.txt`, and `pcsc_scan -u` keeps a newer copy in
/// `~/.cache/smartcard_list.txt`).
///
/// The file's format: `#` starts a comment line; a line starting with a hex digit is an ATR
/// pattern — its bytes in upper-case hex separated by single spaces, read as a regular
/// expression over the ATR written that way (`..` any byte, `0[CD]` a class, `.*` any rest);
/// the lines after it that start with a tab describe the card. A pattern matches the whole ATR,
/// letter case aside. Every matching entry is kept, in file order.
public struct SmartcardList: Sendable {
    public struct Entry: Sendable, Hashable {
        /// The pattern as written (`3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 .. .. 00 00 00 00 ..`).
        public var pattern: String
        /// Its description lines.
        public var names: [String]
    }

    /// Where the list was read from.
    public var path: String
    public var entries: [Entry]

    /// Where tapemu looks, first found wins: the copy `pcsc_scan -u` keeps up to date, then
    /// Debian's.
    public static func defaultPaths(home: String? = ProcessInfo.processInfo.environment["HOME"]) -> [String] {
        (home.map { ["\($0)/.cache/smartcard_list.txt"] } ?? []) + ["/usr/share/pcsc/smartcard_list.txt"]
    }

    /// The first list of `paths` that can be read; nil when none can (the ATR alone is shown).
    public static func load(from paths: [String] = defaultPaths()) -> SmartcardList? {
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            return SmartcardList(parsing: String(decoding: data, as: UTF8.self), path: path)
        }
        return nil
    }

    /// Parses the text of a list. Lines that are neither a pattern nor a description are skipped.
    public init(parsing text: String, path: String) {
        self.path = path
        var entries: [Entry] = []
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            guard let first = line.first, first != "#" else { continue }
            if first == "\t" {
                let name = line.trimmingCharacters(in: .whitespaces)
                if !name.isEmpty, !entries.isEmpty { entries[entries.count - 1].names.append(name) }
            } else if first.isHexDigit {
                entries.append(Entry(pattern: line.trimmingCharacters(in: .whitespaces), names: []))
            }
        }
        self.entries = entries
    }

    /// The names of every entry whose pattern matches `atr`, in file order.
    public func names(for atr: [UInt8]) -> [String] {
        guard !atr.isEmpty else { return [] }
        let text = Array(atr.map { String(format: "%02X", $0) }.joined(separator: " ").utf8)
        return entries.filter { Self.matches(pattern: Array($0.pattern.uppercased().utf8), text) }.flatMap(\.names)
    }

    // MARK: The patterns: a small regular expression matcher (literals, `.`, `[…]`, `*`).

    private enum Atom {
        case any
        case byte(UInt8)
        case set([UInt8], negated: Bool)

        func accepts(_ c: UInt8) -> Bool {
            switch self {
            case .any: return true
            case .byte(let b): return b == c
            case .set(let members, let negated): return members.contains(c) != negated
            }
        }
    }

    /// Whether `pattern` matches all of `text` (both upper-case ASCII).
    static func matches(pattern: [UInt8], _ text: [UInt8]) -> Bool {
        var atoms: [(Atom, star: Bool)] = []
        var i = 0
        while i < pattern.count {
            var atom: Atom
            switch pattern[i] {
            case UInt8(ascii: "."):
                atom = .any
                i += 1
            case UInt8(ascii: "["):
                var j = i + 1
                var negated = false
                if j < pattern.count, pattern[j] == UInt8(ascii: "^") { negated = true; j += 1 }
                var members: [UInt8] = []
                while j < pattern.count, pattern[j] != UInt8(ascii: "]") {
                    if j + 2 < pattern.count, pattern[j + 1] == UInt8(ascii: "-"), pattern[j + 2] != UInt8(ascii: "]"),
                       pattern[j] <= pattern[j + 2] {
                        members += Array(pattern[j]...pattern[j + 2])
                        j += 3
                    } else {
                        members.append(pattern[j])
                        j += 1
                    }
                }
                guard j < pattern.count else { return false }   // an unclosed class matches nothing
                atom = .set(members, negated: negated)
                i = j + 1
            case UInt8(ascii: "\\") where i + 1 < pattern.count:
                atom = .byte(pattern[i + 1])
                i += 2
            case let b:
                atom = .byte(b)
                i += 1
            }
            let star = i < pattern.count && pattern[i] == UInt8(ascii: "*")
            if star { i += 1 }
            atoms.append((atom, star))
        }
        // Backtracking over the stars (patterns have a few at most); memoised by position.
        var failed = Set<Int>()
        func match(_ a: Int, _ t: Int) -> Bool {
            if a == atoms.count { return t == text.count }
            let key = a * (text.count + 1) + t
            if failed.contains(key) { return false }
            let (atom, star) = atoms[a]
            var ok = false
            if star {
                var k = t
                while true {
                    if match(a + 1, k) { ok = true; break }
                    guard k < text.count, atom.accepts(text[k]) else { break }
                    k += 1
                }
            } else {
                ok = t < text.count && atom.accepts(text[t]) && match(a + 1, t + 1)
            }
            if !ok { failed.insert(key) }
            return ok
        }
        return match(0, 0)
    }
}
