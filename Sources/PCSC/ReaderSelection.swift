/// How `--reader` picks one reader among pcscd's: an exact name, an index (as `pcsc_scan -r` and
/// `tapemu readers` number them, from 0), or a substring that matches one reader — or, on a
/// dual-interface reader whose slots all match (names from one vendor: same first word), the
/// contactless slot.
public enum ReaderSelection {
    /// Why no single reader was chosen.
    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        case noReaders
        case noMatch(query: String, readers: [String])
        case indexOutOfRange(Int, count: Int)
        case ambiguous(query: String, candidates: [String])

        public var description: String {
            switch self {
            case .noReaders:
                return "no PC/SC reader is connected"
            case .noMatch(let q, let readers):
                return "no reader matches '\(q)' (readers: \(readers.map { "'\($0)'" }.joined(separator: ", ")))"
            case .indexOutOfRange(let i, let count):
                return "reader index \(i) is out of range (\(count) reader\(count == 1 ? "" : "s"), numbered from 0)"
            case .ambiguous(let q, let candidates):
                return "'\(q)' matches \(candidates.count) readers: \(candidates.map { "'\($0)'" }.joined(separator: ", ")); give more of the name"
            }
        }
    }

    /// Whether a reader's name says it is the contactless interface: a word `PICC`,
    /// `Contactless` or `CL`, or a model number ending in CL (`ACS ACR1252 1S CL Reader
    /// [ACR1252 Dual Reader PICC] 00 00`, `HID Global OMNIKEY 5422CL Smartcard Reader 01 00`).
    public static func isContactless(_ name: String) -> Bool { contactlessScore(name) > 0 }

    /// 2 for a word `PICC` or `Contactless` (the slot), 1 for `CL` (often the whole reader's
    /// model name, e.g. both slots of an ACR1252 "1S CL Reader"), 0 otherwise.
    static func contactlessScore(_ name: String) -> Int {
        let words = name.uppercased().split(whereSeparator: { !$0.isLetter && !$0.isNumber })
        if words.contains(where: { $0 == "PICC" || $0 == "CONTACTLESS" }) { return 2 }
        let cl = words.contains { w in
            w == "CL" || (w.hasSuffix("CL") && w.count > 2 && w.dropLast(2).last?.isNumber == true)
        }
        return cl ? 1 : 0
    }

    /// The reader `query` designates among `readers`. An empty query picks the only reader, or
    /// the only contactless one.
    public static func resolve(_ query: String, among readers: [String]) throws(Failure) -> String {
        guard !readers.isEmpty else { throw .noReaders }
        if readers.contains(query) { return query }
        if let index = Int(query) {
            guard readers.indices.contains(index) else { throw .indexOutOfRange(index, count: readers.count) }
            return readers[index]
        }
        let matches = query.isEmpty ? readers : readers.filter { $0.lowercased().contains(query.lowercased()) }
        if matches.count == 1 { return matches[0] }
        guard !matches.isEmpty else { throw .noMatch(query: query, readers: readers) }
        let vendors = Set(matches.map { $0.split(separator: " ").first ?? "" })
        if vendors.count == 1 {
            let best = matches.map(contactlessScore).max() ?? 0
            let contactless = matches.filter { contactlessScore($0) == best }
            if best > 0, contactless.count == 1 { return contactless[0] }
        }
        throw .ambiguous(query: query, candidates: matches)
    }
}
