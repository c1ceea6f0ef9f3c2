public import BERTLV

/// A primary account number. Its `description` is always redacted (first 6 + last 4), so a PAN
/// can be logged, interpolated or put in an error without leaking.
public struct PAN: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The digits. Read it only to send it where a full PAN belongs (the authorisation).
    public let digits: String

    /// A PAN from its digits (12...19 of them). Returns nil for anything else.
    public init?(_ digits: some StringProtocol) {
        // ASCII digits only, checked on the UTF-8 bytes (no Unicode property lookups).
        guard (12...19).contains(digits.utf8.count), digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return nil
        }
        self.digits = String(digits)
    }

    /// A PAN from digits already checked (12 to 19 ASCII digits).
    init(validatedDigits digits: String) {
        self.digits = digits
    }

    /// A PAN from tag 5A (cn: BCD, padded on the right with F).
    public init(bcd: some Collection<UInt8>) throws(TLVError) {
        try self.init(bcdDigits: bcd)
    }

    /// ``init(bcd:)`` for an array (specialised here, not called generically from other modules).
    public init(bcd: [UInt8]) throws(TLVError) {
        try self.init(bcdDigits: bcd)
    }

    private init<C: Collection<UInt8>>(bcdDigits bcd: C) throws(TLVError) {
        let s = try BCD.digits(bcd, allowingTrailingF: true)
        guard let p = PAN(s) else {
            throw TLVError(.badValue, "a PAN of \(s.count) digit(s) (12 to 19 expected)")
        }
        self = p
    }

    /// The cn encoding for tag 5A.
    public var bcd: [UInt8] { BCD.encodeCompressed(digits) }

    /// Whether the Luhn (mod 10) check digit is right.
    public var isLuhnValid: Bool { Luhn.isValid(digits) }

    /// The last four digits.
    public var last4: String { String(digits.suffix(SensitiveData.visibleTrailingDigits)) }
    /// The first six digits (the BIN).
    public var first6: String { String(digits.prefix(SensitiveData.visibleLeadingDigits)) }

    /// First 6 + last 4 with the middle masked: `476173******0119`.
    public var masked: String {
        first6 + String(repeating: "*", count: digits.count - first6.count - last4.count) + last4
    }

    public var description: String { masked }
    public var debugDescription: String { "PAN(\(masked))" }
}

/// The Luhn (mod 10) check of ISO/IEC 7812: the one implementation, for PANs as text and for
/// the digit runs ``SensitiveData`` looks for PANs in.
public enum Luhn {
    public static func isValid(_ digits: some StringProtocol) -> Bool {
        guard let values = values(digits) else { return false }
        return isValid(digits: values)
    }

    /// Whether `digits` (each 0 to 9, the check digit last) pass the check; false when empty.
    public static func isValid(digits: some BidirectionalCollection<Int>) -> Bool {
        !digits.isEmpty && sum(digits, doublingRightmost: false) % 10 == 0
    }

    /// The check digit to append to `payload`, or nil when it holds a non-digit.
    public static func checkDigit(_ payload: some StringProtocol) -> Int? {
        guard let values = values(payload) else { return nil }
        return (10 - sum(values, doublingRightmost: true) % 10) % 10
    }

    /// The ASCII digits of `text` as numbers; nil when it holds anything else.
    private static func values(_ text: some StringProtocol) -> [Int]? {
        var out: [Int] = []
        out.reserveCapacity(text.utf8.count)
        for c in text {
            guard c.isASCII, let v = c.wholeNumberValue else { return nil }
            out.append(v)
        }
        return out
    }

    /// The sum from the right with every second digit doubled (its digits added): the
    /// rightmost first when `doublingRightmost` (a payload whose check digit is still to come).
    private static func sum(_ digits: some BidirectionalCollection<Int>, doublingRightmost: Bool) -> Int {
        var sum = 0
        for (i, d) in digits.reversed().enumerated() {
            if (i % 2 == 0) == doublingRightmost {
                let doubled = d * 2
                sum += doubled > 9 ? doubled - 9 : doubled
            } else {
                sum += d
            }
        }
        return sum
    }
}

/// Track 2 equivalent data (tag 57): PAN, `D`, expiry YYMM, service code, discretionary data.
/// Its `description` is redacted.
public struct Track2: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public let pan: PAN
    /// YYMM.
    public let expiry: String
    public let serviceCode: String
    /// Discretionary data digits. Sensitive: never printed.
    public let discretionaryData: String
    /// The raw bytes of tag 57, for the authorisation request.
    public let bytes: [UInt8]

    public init(bytes: some Collection<UInt8>) throws(TLVError) {
        try self.init(parsing: bytes)
    }

    /// ``init(bytes:)`` for an array (specialised here, not called generically from other modules).
    public init(bytes: [UInt8]) throws(TLVError) {
        try self.init(parsing: bytes)
    }

    private init<C: Collection<UInt8>>(parsing bytes: C) throws(TLVError) {
        let raw = Array(bytes)
        // The nibbles as ASCII ('0'...'9', 'D', 'F'), written straight into one buffer: no
        // per-character strings, no growing. A nibble that is none of them stops the conversion.
        var badNibble: UInt8?
        let s = [UInt8](unsafeUninitializedCapacity: raw.count * 2) { buffer, count in
            count = 0
            func ascii(_ nib: UInt8) -> UInt8? {
                switch nib {
                case 0...9: 0x30 + nib
                case 0xD: UInt8(ascii: "D")
                case 0xF: UInt8(ascii: "F")
                default: nil
                }
            }
            for b in raw {
                guard let high = ascii(b >> 4) else { badNibble = b >> 4; return }
                buffer[count] = high
                guard let low = ascii(b & 0xF) else { badNibble = b & 0xF; count += 1; return }
                buffer[count + 1] = low
                count += 2
            }
        }
        if let nib = badNibble {
            throw TLVError(.badValue, "track 2 holds nibble \(String(nib, radix: 16, uppercase: true))")
        }
        let end = s.last == UInt8(ascii: "F") ? s.count - 1 : s.count
        let digits = s[..<end]
        guard !digits.contains(UInt8(ascii: "F")) else { throw TLVError(.badValue, "track 2 has F padding inside its data") }
        guard let separator = digits.firstIndex(of: UInt8(ascii: "D")) else {
            throw TLVError(.badValue, "track 2 has no field separator D")
        }
        // Before the first D there are digits only: the PAN needs only its length checked.
        let panDigits = digits[..<separator]
        guard (12...19).contains(panDigits.count) else {
            throw TLVError(.badValue, "track 2 PAN of \(panDigits.count) digit(s) (12 to 19 expected)")
        }
        let rest = digits[(separator + 1)...]
        guard rest.count >= 7, !rest.contains(UInt8(ascii: "D")) else {
            throw TLVError(.badValue, "track 2 too short after the separator (expiry and service code need 7 digits)")
        }
        self.pan = PAN(validatedDigits: String(decoding: panDigits, as: UTF8.self))
        self.expiry = String(decoding: rest.prefix(4), as: UTF8.self)
        self.serviceCode = String(decoding: rest.dropFirst(4).prefix(3), as: UTF8.self)
        self.discretionaryData = String(decoding: rest.dropFirst(7), as: UTF8.self)
        self.bytes = raw
    }

    /// Expiry month 1...12 check.
    public var expiryIsPlausible: Bool {
        guard let mm = Int(expiry.suffix(2)) else { return false }
        return (1...12).contains(mm)
    }

    public var description: String { "\(pan.masked)D****…" }
    public var debugDescription: String { "Track2(\(pan.masked), redacted)" }
}
