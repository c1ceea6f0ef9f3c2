import Foundation
#if canImport(Glibc)
import Glibc
#endif
/// Parsing of option values, with usage errors that say what was expected.
enum Parse {
    /// A duration with a unit: `250ms`, `30s`, `1.5s`, `2m`, `1h`, `500us`, `100ns`.
    static func duration(_ text: String, option: String) throws(UsageError) -> Duration {
        let units: [(suffix: String, nanoseconds: Double)] = [
            ("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3600e9),
        ]
        let bad = UsageError("\(option) takes a duration like 250ms, 30s or 2m, not '\(text)'")
        // Longest suffix first, so "ms" is not read as "s".
        guard let unit = units.sorted(by: { $0.suffix.count > $1.suffix.count })
            .first(where: { text.hasSuffix($0.suffix) }) else { throw bad }
        let number = text.dropLast(unit.suffix.count)
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              number.filter({ $0 == "." }).count <= 1, number.first != ".", number.last != ".",
              let value = Double(number) else { throw bad }
        let ns = (value * unit.nanoseconds).rounded()
        // A week is far beyond any timeout tapemu has; anything larger is a typo.
        guard ns <= 7 * 86_400e9 else { throw UsageError("\(option) of \(text) is too long (at most a week)") }
        return .nanoseconds(Int64(ns))
    }

    /// A decimal integer within `range`.
    static func integer(_ text: String, option: String, in range: ClosedRange<Int> = Int.min...Int.max) throws(UsageError) -> Int {
        guard let v = Int(text) else {
            let digits = text.hasPrefix("-") ? text.dropFirst() : text[...]
            if !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) {
                throw UsageError("\(option) of \(text) is too large (at most \(range.upperBound == Int.max ? "\(Int.max)" : "\(range.upperBound)"))")
            }
            throw UsageError("\(option) takes a whole number, not '\(text)'")
        }
        guard range.contains(v) else {
            throw UsageError("\(option) must be between \(range.lowerBound) and \(range.upperBound), not \(v)")
        }
        return v
    }
}

/// Whether two paths name one file: the same path once made absolute and standardized, or the
/// same inode when both exist (a hard link, a symbolic link).
enum SamePath {
    static func same(_ a: String, _ b: String) -> Bool {
        func standard(_ p: String) -> String {
            let absolute = p.hasPrefix("/") ? p : FileManager.default.currentDirectoryPath + "/" + p
            return (absolute as NSString).standardizingPath
        }
        if standard(a) == standard(b) { return true }
        var sa = stat(), sb = stat()
        guard stat(a, &sa) == 0, stat(b, &sb) == 0 else { return false }
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
    }
}
