public import BERTLV

/// What is sensitive in card data, and how it is masked for display: the one policy every
/// display, redactor and log of tapemu goes through.
///
/// Two rules, both always applied:
/// - **By tag**: the data objects that hold a PAN, track data or PIN data (the tag dictionary's
///   `sensitive` entries: 56, 57, 5A, 99, 9F1F, 9F20, 9F6B) and 9F5E (Data Storage ID: the PAN
///   followed by the PAN sequence number) never show their raw bytes.
/// - **By content**: wherever it stands — a proprietary tag, a cardholder name, padding, bytes
///   that are not TLV at all — a run of 13 to 19 decimal digits that starts with a payment
///   network's digit (1 to 6, ISO/IEC 7812) and passes the Luhn check is taken for a PAN and
///   keeps only its first 6 and last 4 digits. In BCD (as 5A and track 2 hold it) each digit
///   is a hex nibble, so the hex of the run reads as the PAN and is masked nibble by nibble; in
///   ASCII each digit is a byte `30`…`39`, masked byte by byte. A text value (formats a, an,
///   ans) is searched for ASCII digits only: the hex of letters is made of decimal nibbles too.
public enum SensitiveData {
    /// Tags whose raw value is never shown.
    public static func isSensitive(_ tag: Tag) -> Bool {
        tag == Tag(0x9F5E) || (EMVTagDictionary.info(tag)?.isSensitive ?? false)
    }

    /// Tags that hold the cardholder's name (5F20, 9F0B): personal data a ledger does not keep
    /// and a redacted trace replaces, though not a secret a display must hide.
    public static let cardholderNameTags: Set<Tag> = [Tag(0x5F20), Tag(0x9F0B)]

    /// Whether `tag` holds the cardholder's name (``cardholderNameTags``).
    public static func isCardholderName(_ tag: Tag) -> Bool {
        cardholderNameTags.contains(tag)
    }

    /// How many leading and trailing digits of a PAN stay visible (the PCI DSS maximum: the
    /// first 6 and the last 4).
    public static let visibleLeadingDigits = 6
    public static let visibleTrailingDigits = 4

    /// Whether `text` may show a PAN in the clear: it holds a run of 12 or more digits (a masked
    /// PAN shows at most 6 in a row).
    public static func mayShowPAN(_ text: String) -> Bool {
        var run = 0
        for c in text {
            if c.isASCII && c.isNumber {
                run += 1
                if run >= 12 { return true }
            } else {
                run = 0
            }
        }
        return false
    }

    /// Masks the value of sensitive `tag` (``isSensitive(_:)``) at `value` (byte offsets) in
    /// `chars`, the hex of the bytes (two characters a byte). The PAN 5A keeps its shape
    /// (`476173******0010`); track 2 (57, 9F6B) shows its PAN that way, then `D`, expiry and
    /// service code, and `*` for the discretionary data; every other sensitive object is
    /// masked whole.
    public static func maskValue(in chars: inout [Character], value: Range<Int>, tag: Tag) {
        let lo = value.lowerBound * 2, hi = value.upperBound * 2
        guard lo < hi else { return }
        switch tag {
        case .pan:
            maskBCDNumber(&chars, lo..<hi)
        case .track2EquivalentData, .track2Data:
            let sep = chars[lo..<hi].firstIndex(of: "D") ?? hi
            maskBCDNumber(&chars, lo..<sep)
            // After D: YYMM and the service code stay; discretionary data goes.
            var i = min(sep + 8, hi)
            while i < hi {
                if chars[i] != "F" { chars[i] = "*" }
                i += 1
            }
        default:
            for i in lo..<hi { chars[i] = "*" }
        }
    }

    /// Keeps the first 6 and last 4 digits (F padding aside) of a BCD number.
    private static func maskBCDNumber(_ chars: inout [Character], _ range: Range<Int>) {
        var end = range.upperBound
        while end > range.lowerBound, chars[end - 1] == "F" { end -= 1 }
        let keepFront = range.lowerBound + visibleLeadingDigits, keepBack = end - visibleTrailingDigits
        guard keepFront < keepBack else {
            for i in range.lowerBound..<end { chars[i] = "*" }   // too short to show anything
            return
        }
        for i in keepFront..<keepBack { chars[i] = "*" }
    }

    /// The shortest and longest PAN (ISO/IEC 7812).
    static let panLengths = 13...19

    /// `bytes` as upper-case hex with every PAN in them masked: a value of `tag` (text formats
    /// are searched for ASCII digits only), or bytes of unknown shape (`tag` nil: BCD and ASCII).
    public static func maskedHex(_ bytes: [UInt8], tag: Tag? = nil) -> String {
        var chars = hexCharacters(bytes)
        maskPANs(in: &chars, bytes: bytes, range: bytes.indices, tag: tag)
        return String(chars)
    }

    /// Masks the PANs of `bytes[range]` in `chars`, the hex of `bytes` (two characters a byte).
    public static func maskPANs(in chars: inout [Character], bytes: [UInt8], range: Range<Int>, tag: Tag?) {
        var text = false
        if let tag, let format = EMVTagDictionary.info(tag)?.format {
            text = format == .a || format == .an || format == .ans
        }
        if !text {
            // BCD: the nibbles of the range.
            let lo = range.lowerBound * 2, hi = range.upperBound * 2
            for (start, end) in digitRuns(lo..<hi, isDigit: { chars[$0].isASCII && chars[$0].isNumber }) {
                let digits = (start..<end).map { Int(chars[$0].asciiValue! - 48) }
                for i in maskedPositions(digits) { chars[start + i] = "*" }
            }
        }
        // ASCII: the digit bytes of the range.
        for (start, end) in digitRuns(range, isDigit: { (0x30...0x39).contains(bytes[$0]) }) {
            let digits = (start..<end).map { Int(bytes[$0] - 0x30) }
            for i in maskedPositions(digits) {
                chars[2 * (start + i)] = "*"
                chars[2 * (start + i) + 1] = "*"
            }
        }
    }

    /// Text with every PAN-like digit run masked (a decoded value, a message).
    public static func maskedText(_ text: String) -> String {
        var chars = Array(text)
        for (start, end) in digitRuns(chars.indices, isDigit: { chars[$0].isASCII && chars[$0].isNumber }) {
            let digits = (start..<end).map { Int(chars[$0].asciiValue! - 48) }
            for i in maskedPositions(digits) { chars[start + i] = "*" }
        }
        return String(chars)
    }

    /// ``maskedText(_:)`` except where `verbatim` texts stand: the merchant's own identifiers
    /// (order ids), which every output shows as given — an error quotes the id so it can be
    /// copied back — whatever digits they hold. Only whole occurrences are kept; every other
    /// part of `text` is masked as usual.
    public static func maskedText(_ text: String, keeping verbatim: [String]) -> String {
        let keep = verbatim.filter { !$0.isEmpty }.sorted { $0.count > $1.count }
        guard !keep.isEmpty else { return maskedText(text) }
        var out = "", pending = "", rest = Substring(text)
        while !rest.isEmpty {
            if let hit = keep.first(where: { rest.hasPrefix($0) }) {
                out += maskedText(pending) + hit
                pending = ""
                rest = rest.dropFirst(hit.count)
            } else {
                pending.append(rest.removeFirst())
            }
        }
        return out + maskedText(pending)
    }

    static func hexCharacters(_ bytes: [UInt8]) -> [Character] {
        let digits = Array("0123456789ABCDEF")
        var chars: [Character] = []
        chars.reserveCapacity(bytes.count * 2)
        for b in bytes {
            chars.append(digits[Int(b >> 4)])
            chars.append(digits[Int(b & 0x0F)])
        }
        return chars
    }

    /// The maximal runs of positions in `range` where `isDigit` holds, long enough for a PAN.
    private static func digitRuns(_ range: Range<Int>, isDigit: (Int) -> Bool) -> [(Int, Int)] {
        var runs: [(Int, Int)] = []
        var start = range.lowerBound
        while start < range.upperBound {
            guard isDigit(start) else { start += 1; continue }
            var end = start
            while end < range.upperBound, isDigit(end) { end += 1 }
            if end - start >= panLengths.lowerBound { runs.append((start, end)) }
            start = end
        }
        return runs
    }

    /// The positions to mask in a run of digits: the middle of every window that may be a PAN —
    /// 13 to 19 digits, first digit 1 to 6, Luhn-valid — keeping only its first 6 and last 4
    /// digits. Every such window is masked, not only the first found: a run that holds a PAN
    /// behind a few other digits (the `13 57 11` of a length, a tag and a length before a track 2
    /// in a proprietary object) often holds a window that passes the Luhn check by chance too,
    /// and masking that one alone left most of the real PAN in the clear. Masking the union
    /// can hide a digit of a PAN's first 6 that another window covers — never show more.
    ///
    /// Only windows that start within the run's first four digits or end within its last four
    /// are looked at: a PAN stands next to at most a length byte, a sequence number or padding,
    /// and looking only there keeps amounts, dates and counters in long runs of digits (a GPO's
    /// PDOL data) from being masked by chance.
    static func maskedPositions(_ digits: [Int]) -> [Int] {
        let n = digits.count
        guard n >= panLengths.lowerBound else { return [] }
        let edge = 4
        var masked = [Bool](repeating: false, count: n)
        func consider(offset: Int, length: Int) {
            guard (1...6).contains(digits[offset]), Luhn.isValid(digits: digits[offset..<(offset + length)]) else { return }
            for i in (offset + visibleLeadingDigits)..<(offset + length - visibleTrailingDigits) { masked[i] = true }
        }
        for length in panLengths where length <= n {
            // Starting near the front, then ending near the back (a window may be both).
            for offset in 0...min(edge, n - length) { consider(offset: offset, length: length) }
            let back = max(edge + 1, n - length - edge)
            if back <= n - length {
                for offset in back...(n - length) { consider(offset: offset, length: length) }
            }
        }
        return masked.indices.filter { masked[$0] }
    }
}
