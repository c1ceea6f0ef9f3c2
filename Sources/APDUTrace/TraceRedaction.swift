import Foundation
import BERTLV
public import PaymentRules
import ISO7816

extension APDUTrace {
    /// This trace with every PAN replaced, consistently across every object that holds it, by a
    /// Luhn-valid test PAN of the same length, and every cardholder name by a placeholder of the
    /// same length; `@redacted yes`. It still parses and replays. See ``TraceRedactor``.
    public func redacted() -> APDUTrace { TraceRedactor.redact(self).trace }
}

/// What a redaction found and replaced.
public struct TraceRedaction: Sendable {
    public var trace: APDUTrace
    /// Distinct PANs found (and replaced everywhere).
    public var panCount: Int
    /// Distinct cardholder names found (and replaced).
    public var nameCount: Int
}

/// Replaces the sensitive data of a trace by test values of the same shape.
///
/// PANs are found in tag 5A, in track 2 equivalents (57, 9F6B), in track 1 (56) — in records,
/// SELECT and GPO responses alike, each answer whole (the pieces of a 61xx chain put together),
/// parsed as TLV, and, in responses that do not parse (a
/// truncated capture), by scanning for those tags. Each PAN is then replaced wherever its
/// digits occur — as BCD at any nibble (5A, track 2, any other object) and as ASCII (track 1,
/// 9F1F, names) — in every command and response, header (key and value) and comment. Names (5F20, 9F0B, the
/// name field of track 1) become `CARDHOLDER/TEST…` of the same length.
public enum TraceRedactor {
    public static func redact(_ trace: APDUTrace) -> TraceRedaction {
        var pans: [String] = []
        var names: [[UInt8]] = []
        // Sets beside the ordered lists: a trace may hold thousands of distinct PANs and names.
        var panSet: Set<String> = []
        var nameSet: Set<[UInt8]> = []
        var t = trace

        // Each answer whole: a PAN or a name may be cut between the pieces of a 61xx chain.
        let answers = answers(in: t.entries)

        // 1. Find the PANs and names, and blank the name fields where they sit.
        for pieces in answers {
            var data = pieces.flatMap { i -> [UInt8] in
                guard case .response(let r) = t.entries[i].kind else { return [] }
                return r.data
            }
            guard !data.isEmpty else { continue }
            let original = data
            var fields = sensitiveFields(in: data)
            // The pieces of a chain alone too: when the whole does not parse as TLV (a piece
            // that is not the start of the answer) its raw scan takes Luhn-valid PANs only, and
            // missed one that a piece holds in well-formed TLV. PANs only: a name's range is
            // in the whole.
            if pieces.count > 1 {
                for i in pieces {
                    guard case .response(let r) = t.entries[i].kind else { continue }
                    for case .pan(let digits) in sensitiveFields(in: r.data) { fields.append(.pan(digits)) }
                }
            }
            for f in fields {
                switch f {
                case .pan(let digits):
                    if panSet.insert(digits).inserted { pans.append(digits) }
                case .name(let range):
                    let value = Array(data[range])
                    if nameSet.insert(value).inserted { names.append(value) }
                    data.replaceSubrange(range, with: placeholderName(length: range.count))
                }
            }
            if data != original { putBack(data, into: pieces, of: &t.entries) }
        }

        // 2. Replace every PAN wherever its digits occur, and the longer names wherever they occur.
        var replacements: [(from: String, to: String)] = []
        var used: Set<String> = []
        for (k, pan) in pans.enumerated() {
            var variant = k
            var candidate = testPAN(replacing: pan, variant: variant)
            while panSet.contains(candidate) || used.contains(candidate) {
                variant += 1
                candidate = testPAN(replacing: pan, variant: variant)
            }
            replacements.append((pan, candidate))
            used.insert(candidate)
        }
        // Looked up by length at each offset: one pass over the data whatever the number of PANs
        // (a pass per PAN over every command, response, header and comment was quadratic).
        let table = PANReplacementTable(replacements)
        let globalNames = names.compactMap { n -> [UInt8]? in
            var v = n
            while let l = v.last, l == 0x20 || l == 0x00 { v.removeLast() }
            let letters = v.filter { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }.count
            return v.count >= 4 && letters >= 3 ? v : nil
        }
        // The same for names: a pass per name over everything was quadratic too.
        let nameTable = NameReplacementTable(globalNames)
        /// `step` repeated until nothing changes (at most 8 times): a replacement may hold another
        /// PAN's digits (track 2's shorter PAN inside the record's longer one), or recreate an
        /// original across its edges.
        func untilStable(_ bytes: [UInt8], _ step: ([UInt8]) -> [UInt8]) -> [UInt8] {
            var b = bytes
            for _ in 0..<8 {
                let next = step(b)
                if next == b { break }
                b = next
            }
            return b
        }
        func scrub(_ bytes: [UInt8]) -> [UInt8] {
            nameTable.replacing(in: untilStable(bytes) { table.replacingASCII(in: table.replacingNibbles(in: $0)) })
        }
        func scrub(_ text: String) -> String {
            var s = text
            if !replacements.isEmpty {
                s = String(decoding: untilStable(Array(s.utf8)) { table.replacingASCII(in: $0) }, as: UTF8.self)
            }
            if !globalNames.isEmpty { s = String(decoding: nameTable.replacing(in: Array(s.utf8)), as: UTF8.self) }
            return s
        }
        /// Free text (a comment, an event's detail, a header that is not one of the format's
        /// machine-read ones): the card's PANs replaced, and any other card number in it masked
        /// — a note about another card, a number pasted by hand.
        func scrubText(_ text: String) -> String { SensitiveData.maskedText(scrub(text)) }
        for i in t.entries.indices {
            switch t.entries[i].kind {
            case .command(let bytes):
                t.entries[i].kind = .command(scrub(bytes))
            case .response:
                break   // by answer, below
            case .event(let e):
                t.entries[i].kind = .event(TraceEvent(e.kind, detail: e.detail.map(scrubText)))
            }
        }
        for pieces in answers {
            // The answer's data, then its final status word, scrubbed as one run of bytes.
            var bytes: [UInt8] = []
            for i in pieces { if case .response(let r) = t.entries[i].kind { bytes += r.data } }
            guard case .response(let last) = t.entries[pieces[pieces.count - 1]].kind else { continue }
            let b = scrub(bytes + [last.sw1, last.sw2])
            putBack(Array(b.dropLast(2)), statusWord: StatusWord(sw1: b[b.count - 2], sw2: b[b.count - 1]),
                    into: pieces, of: &t.entries)
        }
        // Keys too: a key is letters and digits, so it can hold a PAN's digits as well as a value can.
        for i in t.headers.indices {
            let key = t.headers[i].key
            let value = Self.machineReadHeaders.contains(key.lowercased()) ? scrub(t.headers[i].value) : scrubText(t.headers[i].value)
            // A key is letters, digits, `-`, `_` and `.`: its masked digits are `x`.
            t.headers[i] = .init(scrubText(key).replacingOccurrences(of: "*", with: "x"), value)
        }
        t.comments = t.comments.map(scrubText)
        t.isRedacted = true
        return TraceRedaction(trace: t, panCount: pans.count, nameCount: names.count)
    }

    /// Headers whose values are read by machine (hex, dates, keywords): their card numbers are
    /// replaced, but digit runs are not masked (an ATR's hex can hold a run that looks like one).
    static let machineReadHeaders: Set<String> = ["format", "atr", "ats", "recorded", "redacted", "outcome", "match",
                                                  "reader", "source"]

    /// A Luhn-valid test PAN of the same length as `original`, of the same scheme when the first
    /// digit says which (4 Visa 476173…, 5 and 2 Mastercard, 3 Amex, 6 Discover), never equal to
    /// it. `variant` makes distinct PANs map to distinct replacements.
    public static func testPAN(replacing original: String, variant: Int = 0) -> String {
        let length = max(12, min(19, original.count))
        let first = original.first ?? "4"
        let bodies: [Character: String] = [
            "4": "476173900101001", "5": "541333008900001", "2": "222300004840001",
            "3": "37424545540000", "6": "601100099013942",
        ]
        var body = Array(bodies[first] ?? String(first.isNumber ? first : "9"))
        if body.count > length - 1 { body = Array(body.prefix(length - 1)) }
        while body.count < length - 1 { body.append("0") }
        var v = variant
        while true {
            var b = body
            if v > 0 {
                // Vary the last four digits before the check digit.
                let tail = Int(String(b.suffix(4))) ?? 0
                let varied = String((tail + v) % 10_000)
                let padded = String(repeating: "0", count: 4 - varied.count) + varied
                b.replaceSubrange((b.count - 4)..., with: Array(padded))
                // Past 10,000 variants (a trace with more PANs of one length and scheme) the
                // four digits before vary too: else the search for an unused one never ended.
                if v >= 10_000 {
                    let end = b.count - 4
                    let high = Int(String(b[(end - 4)..<end])) ?? 0
                    let more = String((high + v / 10_000) % 10_000)
                    b.replaceSubrange((end - 4)..<end, with: Array(String(repeating: "0", count: 4 - more.count) + more))
                }
            }
            let payload = String(b)
            let pan = payload + String(Luhn.checkDigit(payload) ?? 0)
            if pan != original { return pan }
            v += 1
        }
    }

    /// `CARDHOLDER/TEST…` cut or space-padded to `length` bytes.
    public static func placeholderName(length: Int) -> [UInt8] {
        let pattern = Array("CARDHOLDER/TEST".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(length)
        for i in 0..<max(0, length) { out.append(i < pattern.count ? pattern[i] : 0x20) }
        return out
    }

    // MARK: Answers in pieces

    /// The responses of `entries`, answer by answer: a response ending in 61xx and the answers
    /// to the GET RESPONSEs that follow it are the pieces of one answer (ISO/IEC 7816-4: the
    /// card may hand its data out in several), and a PAN may be cut between two of them.
    static func answers(in entries: [APDUTrace.Entry]) -> [[Int]] {
        var out: [[Int]] = []
        var open = false          // the last answer ended in 61xx
        var getResponse = false   // the command just sent is a GET RESPONSE
        for (i, e) in entries.enumerated() {
            switch e.kind {
            case .command(let bytes):
                getResponse = bytes.count >= 2 && bytes[1] == 0xC0
                if !getResponse { open = false }
            case .response(let r):
                if open && getResponse { out[out.count - 1].append(i) } else { out.append([i]) }
                open = r.sw1 == 0x61
                getResponse = false
            case .event:
                open = false
                getResponse = false
            }
        }
        return out
    }

    /// Writes `data`, an answer's data put together, back into its pieces (each keeps its
    /// length), with `statusWord`, when given, as the last piece's.
    static func putBack(_ data: [UInt8], statusWord: StatusWord? = nil, into pieces: [Int],
                        of entries: inout [APDUTrace.Entry]) {
        var at = 0
        for (k, i) in pieces.enumerated() {
            guard case .response(let r) = entries[i].kind else { continue }
            let sw = k == pieces.count - 1 ? statusWord ?? r.statusWord : r.statusWord
            entries[i].kind = .response(ResponseAPDU(data: Array(data[at..<(at + r.data.count)]), statusWord: sw))
            at += r.data.count
        }
    }

    // MARK: Finding the fields

    enum Field {
        case pan(String)
        /// The bytes of a name, to be replaced in place.
        case name(Range<Int>)
    }

    static let nameTags: Set<Tag> = SensitiveData.cardholderNameTags
    static let track2Tags: Set<Tag> = [.track2EquivalentData, .track2Data]
    static let track1Tag: Tag = 0x56
    /// What the raw scan looks for: every tag this redactor replaces (PAN, tracks, names).
    static let scannedTags: [Tag] = ([.pan, track1Tag] + track2Tags.sorted { $0.bytes.count < $1.bytes.count }
                                     + nameTags.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) })

    /// The PANs and name fields in one response's data: by TLV when it parses, by scanning for
    /// the tags when it does not.
    static func sensitiveFields(in data: [UInt8]) -> [Field] {
        var out: [Field] = []
        if let nodes = try? BERTLV.parse(data) {
            for n in nodes.flattened where !n.isConstructed {
                out += fields(tag: n.tag, value: n.value.startIndex..<n.value.endIndex, in: data, strict: false)
            }
            return out
        }
        var i = 0
        while i + 2 < data.count {
            var tag: Tag?
            var at = i
            for candidate in scannedTags {
                let encoded = candidate.bytes
                if i + encoded.count + 1 < data.count, data[i..<(i + encoded.count)].elementsEqual(encoded) {
                    tag = candidate; at = i + encoded.count
                    break
                }
            }
            if let tag, at < data.count, data[at] < 0x80 {
                let length = Int(data[at])
                let range = (at + 1)..<min(data.count, at + 1 + length)
                if length > 0 {
                    out += fields(tag: tag, value: range, in: data, strict: true)
                }
            }
            i += 1
        }
        return out
    }

    /// `strict` (raw scan): only values that look exactly like what the tag holds.
    private static func fields(tag: Tag, value: Range<Int>, in data: [UInt8], strict: Bool) -> [Field] {
        let v = data[value]
        switch tag {
        case .pan:
            if let p = try? PAN(bcd: v), !strict || p.isLuhnValid { return [.pan(p.digits)] }
        case _ where track2Tags.contains(tag):
            if let t = try? Track2(bytes: v), !strict || t.pan.isLuhnValid { return [.pan(t.pan.digits)] }
            // A truncated track 2 (cut by a capture): take the digits before the separator.
            if let digits = leadingDigits(v), digits.count >= 12, !strict || Luhn.isValid(digits) { return [.pan(digits)] }
        case track1Tag:
            // B<PAN>^<NAME>^<YYMM><service code>…
            guard v.first == UInt8(ascii: "B"),
                  let c1 = v.firstIndex(of: UInt8(ascii: "^")) else { return [] }
            var out: [Field] = []
            let digits = String(decoding: v[(v.startIndex + 1)..<c1].filter { $0 != 0x20 }, as: UTF8.self)
            if let p = PAN(digits), !strict || p.isLuhnValid { out.append(.pan(p.digits)) }
            if let c2 = v[(c1 + 1)...].firstIndex(of: UInt8(ascii: "^")), c2 > c1 + 1 {
                out.append(.name((c1 + 1)..<c2))
            }
            return out
        case _ where nameTags.contains(tag):
            if !strict || v.allSatisfy({ (0x20...0x7E).contains($0) }) { return [.name(value)] }
        default:
            break
        }
        return []
    }

    private static func leadingDigits(_ v: ArraySlice<UInt8>) -> String? {
        var s = ""
        for b in v {
            for nib in [b >> 4, b & 0xF] {
                if nib <= 9 { s.append(Character(Unicode.Scalar(0x30 + nib))) } else { return nib == 0xD ? s : nil }
            }
        }
        return s
    }

    // MARK: Replacing

    /// The names to replace, by length (longest first), found in one pass: at each offset whose
    /// first four bytes start a name, the names of each length are looked up.
    struct NameReplacementTable {
        let byLength: [(length: Int, names: Set<ArraySlice<UInt8>>)]
        let prefixes: Set<ArraySlice<UInt8>>

        /// `names`: each at least four bytes (shorter ones are left out).
        init(_ names: [[UInt8]]) {
            var sets: [Int: Set<ArraySlice<UInt8>>] = [:]
            var prefixes: Set<ArraySlice<UInt8>> = []
            for n in names where n.count >= 4 {
                sets[n.count, default: []].insert(n[...])
                prefixes.insert(n[0..<4])
            }
            byLength = sets.sorted { $0.key > $1.key }.map { (length: $0.key, names: $0.value) }
            self.prefixes = prefixes
        }

        /// `bytes` with every name, left to right and the longest first, replaced by a
        /// placeholder of its length.
        func replacing(in bytes: [UInt8]) -> [UInt8] {
            guard let shortest = byLength.last?.length else { return bytes }
            var b = bytes
            var i = 0
            search: while i + shortest <= b.count {
                if prefixes.contains(b[i..<(i + 4)]) {
                    for (length, names) in byLength where i + length <= b.count && names.contains(b[i..<(i + length)]) {
                        b.replaceSubrange(i..<(i + length), with: TraceRedactor.placeholderName(length: length))
                        i += length
                        continue search
                    }
                }
                i += 1
            }
            return b
        }
    }

    /// Every PAN's digits and their replacement's, by length (longest first), found in one pass.
    struct PANReplacementTable {
        /// Digit values (0…9) of a PAN to those of its replacement, for each length.
        let byLength: [(length: Int, map: [[UInt8]: [UInt8]])]

        init(_ pairs: [(from: String, to: String)]) {
            var maps: [Int: [[UInt8]: [UInt8]]] = [:]
            for (from, to) in pairs where !from.isEmpty && from.utf8.count == to.utf8.count {
                let f = from.utf8.map { $0 &- 0x30 }, t = to.utf8.map { $0 &- 0x30 }
                if maps[f.count]?[f] == nil { maps[f.count, default: [:]][f] = t }
            }
            byLength = maps.sorted { $0.key > $1.key }.map { (length: $0.key, map: $0.value) }
        }

        /// Replaces, left to right, every run of `symbols` (digit values; anything above 9 is not
        /// a digit) that is a PAN's digits, the longest PAN first. Whether anything changed.
        func replace(in symbols: inout [UInt8]) -> Bool {
            guard let longest = byLength.first?.length, let shortest = byLength.last?.length else { return false }
            var changed = false
            var i = 0
            search: while i + shortest <= symbols.count {
                var run = 0   // digits from i on, counted up to the longest PAN
                while run < longest, i + run < symbols.count, symbols[i + run] <= 9 { run += 1 }
                if run >= shortest {
                    for (length, map) in byLength where length <= run {
                        if let r = map[Array(symbols[i..<(i + length)])] {
                            symbols.replaceSubrange(i..<(i + length), with: r)
                            changed = true
                            i += length
                            continue search
                        }
                    }
                }
                i += 1
            }
            return changed
        }

        /// `bytes` with every PAN replaced where its digits are BCD nibbles, at any nibble offset.
        func replacingNibbles(in bytes: [UInt8]) -> [UInt8] {
            guard !byLength.isEmpty else { return bytes }
            var nibbles: [UInt8] = []
            nibbles.reserveCapacity(bytes.count * 2)
            for b in bytes { nibbles.append(b >> 4); nibbles.append(b & 0xF) }
            guard replace(in: &nibbles) else { return bytes }
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count)
            for k in stride(from: 0, to: nibbles.count, by: 2) { out.append(nibbles[k] << 4 | nibbles[k + 1]) }
            return out
        }

        /// `bytes` with every PAN replaced where its digits are ASCII.
        func replacingASCII(in bytes: [UInt8]) -> [UInt8] {
            guard !byLength.isEmpty else { return bytes }
            var symbols = bytes.map { (0x30...0x39).contains($0) ? $0 - 0x30 : 0xFF }
            guard replace(in: &symbols) else { return bytes }
            var out = bytes
            for k in out.indices where symbols[k] <= 9 { out[k] = symbols[k] + 0x30 }
            return out
        }
    }
}
