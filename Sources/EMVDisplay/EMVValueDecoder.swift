public import BERTLV
public import PaymentRules

/// A data object's value decoded for people: a one-line text, further lines (the set bits of a
/// bit field, the rules of a CVM list, the entries of an AFL or DOL) and a structured form for
/// JSON. PANs and track data appear masked (first 6 + last 4), never in full.
public struct DecodedValue: Hashable, Sendable, CustomStringConvertible {
    /// One line: `EUR 12.34`, `2026-11-30`, `ARQC (online authorisation requested)`.
    public var text: String
    /// Further lines, each one item.
    public var details: [String]
    /// The same, machine-readable.
    public var fields: StructuredValue?

    public init(_ text: String, details: [String] = [], fields: StructuredValue? = nil) {
        self.text = text
        self.details = details
        self.fields = fields
    }

    /// The text and the details on one line.
    public var description: String { ([text] + details).joined(separator: "; ") }
}

/// A JSON-shaped value, so BERTLV needs no Foundation to describe structured decodes.
public indirect enum StructuredValue: Hashable, Sendable, Encodable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case array([StructuredValue])
    case object([String: StructuredValue])

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let s): try c.encode(s)
        case .int(let i): try c.encode(i)
        case .bool(let b): try c.encode(b)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }
}

/// Decodes EMV data object values for display: amounts with their currency, dates, times,
/// country and currency codes, text, bit fields by name (AIP, TVR, TSI, TTQ, CTQ, terminal
/// capabilities, …), CVM lists and results, CID, AFL, DOLs, PAN and track 2 (masked).
public enum EMVValueDecoder {
    /// Whether `tag` holds a PAN, track data or PIN data, whose raw bytes must never be shown
    /// (``SensitiveData``, the one policy).
    public static func isSensitive(_ tag: Tag) -> Bool {
        SensitiveData.isSensitive(tag)
    }

    /// The value of `tlv` as one line (text and details joined), or nil when there is nothing
    /// to say beyond the hex. `context` is the surrounding data (the whole parsed response or
    /// record): it supplies the currency of amounts and tells Visa from Mastercard meanings.
    public static func describe(_ tlv: TLV, context: [TLV] = []) -> String? {
        decode(tlv, context: context)?.description
    }

    /// The decoded value of a primitive `tlv`, or nil when there is nothing to say beyond the
    /// hex (constructed objects, cryptograms, unknown tags). Never nil for sensitive tags.
    public static func decode(_ tlv: TLV, context: [TLV] = []) -> DecodedValue? {
        decode(tlv, in: Context(context))
    }

    /// The same with a context built once, for decoding many objects of one response.
    public static func decode(_ tlv: TLV, in ctx: Context) -> DecodedValue? {
        guard !tlv.isConstructed else { return nil }
        let v = Array(tlv.value)
        if let d = decodeKnown(tlv.tag, v, ctx) { return d }
        if isSensitive(tlv.tag) { return DecodedValue("redacted (\(v.count) bytes)", fields: .object(["redacted": .bool(true)])) }
        return decodeByFormat(tlv.tag, v)
    }

    // MARK: - Context

    /// What the surrounding data objects tell about a value: the currency and exponent of
    /// amounts, and the payment scheme (from an AID) for tags the schemes use differently.
    public struct Context: Sendable {
        let objects: [TLV]
        /// The payment scheme, from an AID in the context, or given.
        public let scheme: Scheme?

        /// The context of `objects` (searched depth first); `scheme` overrides the one their AID tells.
        public init(_ objects: [TLV], scheme: Scheme? = nil) {
            let flat = objects.flattened
            self.objects = flat
            self.scheme = scheme ?? Self.scheme(in: flat)
        }

        func value(_ tag: Tag) -> [UInt8]? {
            objects.first { $0.tag == tag && !$0.isConstructed }.map { Array($0.value) }
        }

        static func scheme(in objects: [TLV]) -> Scheme? {
            for tag: Tag in [0x4F, 0x84, 0x9F06] {
                for o in objects where o.tag == tag {
                    if let s = Scheme(aid: Array(o.value)) { return s }
                }
            }
            return nil
        }

        /// The currency `codeTag` names in the context. A value that is not a 3-digit code in
        /// two BCD bytes is `.malformed`, never a number (a card's bytes may hold any value).
        func currency(_ codeTag: Tag) -> ContextCurrency {
            guard let v = value(codeTag) else { return .absent }
            guard let n = ISOCodes.numericCode(bcd: v) else { return .malformed(codeTag) }
            return .known(ISOCodes.currency(n) ?? ISOCodes.Currency(numeric: n, code: threeDigits(n),
                                                                     exponent: -1, name: ""))
        }

        func exponent(_ tag: Tag) -> Int? {
            guard let v = value(tag), let n = BCD.value(v), n <= 9 else { return nil }
            return Int(n)
        }
    }

    /// The currency of an amount, from its context.
    enum ContextCurrency {
        /// The context names no currency.
        case absent
        /// The context's currency code (this tag) is not a 3-digit BCD code.
        case malformed(Tag)
        case known(ISOCodes.Currency)
    }

    /// The payment schemes whose meanings of shared tags differ.
    public enum Scheme: String, Sendable, Hashable {
        case visa, mastercard, amex, discover, jcb, unionpay

        /// The scheme of `aid`, from the registry (``PaymentNetwork``); nil for the networks
        /// whose tags mean what EMV says.
        public init?(aid: [UInt8]) {
            switch PaymentNetwork(aid: aid) {
            case .visa: self = .visa
            case .mastercard, .maestro: self = .mastercard
            case .amex: self = .amex
            case .discover: self = .discover
            case .jcb: self = .jcb
            case .unionpay: self = .unionpay
            case .interac, .cartesBancaires, .girocard, .eftpos, .rupay, .mir, .unknown: return nil
            }
        }
    }

    /// The name of `tag` for display. Where schemes share a tag (`9F6C`: "Card Transaction
    /// Qualifiers (CTQ) (Visa) / Mag-stripe Application Version Number (Card) (Mastercard)") and
    /// the context tells the scheme, only that scheme's meaning.
    public static func name(of tag: Tag, in ctx: Context) -> String? {
        guard let full = EMVTagDictionary.info(tag)?.name else { return nil }
        guard let scheme = ctx.scheme, full.contains(" / ") else { return full }
        let marker: String = switch scheme {
        case .visa: "(Visa)"
        case .mastercard: "(Mastercard)"
        case .amex: "(Amex)"
        case .discover: "(Discover)"
        case .jcb: "(JCB)"
        case .unionpay: "(UnionPay)"
        }
        var parts: [Substring] = []
        var rest = full[...]
        while let r = rest.firstRange(of: " / ") {
            parts.append(rest[..<r.lowerBound])
            rest = rest[r.upperBound...]
        }
        parts.append(rest)
        return parts.first { $0.hasSuffix(marker) }.map(String.init) ?? full
    }

    // MARK: - By tag

    static func decodeKnown(_ tag: Tag, _ v: [UInt8], _ ctx: Context) -> DecodedValue? {
        switch tag.rawValue {
        // Sensitive card data: masked.
        case 0x5A: return pan(v)
        case 0x57, 0x9F6B: return track2(v)
        case 0x56: return track1(v)
        case 0x9F1F, 0x9F20, 0x99: return DecodedValue("redacted (\(v.count) bytes)", fields: .object(["redacted": .bool(true)]))

        // Amounts.
        case 0x9F02, 0x9F03:
            return numericAmount(v, currency: ctx.currency(0x5F2A), exponent: ctx.exponent(0x5F36))
        case 0x81, 0x9F04:
            return binaryAmount(v, currency: ctx.currency(0x5F2A), exponent: ctx.exponent(0x5F36))
        case 0x9F1B:
            return binaryAmount(v, currency: ctx.currency(0x5F2A), exponent: ctx.exponent(0x5F36))
        case 0x9F3A:
            return binaryAmount(v, currency: ctx.currency(0x9F3C), exponent: ctx.exponent(0x9F3D))
        case 0x9F50, 0xDF8104, 0xDF8105:
            return numericAmount(v, currency: ctx.currency(0x9F42), exponent: ctx.exponent(0x9F44))
        case 0xDF8123, 0xDF8124, 0xDF8125, 0xDF8126, 0x9F7B:
            return numericAmount(v, currency: ctx.currency(0x5F2A), exponent: ctx.exponent(0x5F36))
        case 0x9F5D:
            if v.count == 6 {
                var d = numericAmount(v, currency: ctx.currency(0x9F42), exponent: ctx.exponent(0x9F44))
                d?.text += " (available offline spending amount)"
                return d
            }
            if v.count == 3 {
                return DecodedValue("application capabilities: ACI version \(v[0] >> 4), data storage version \(v[0] & 0x0F)",
                                    fields: .object(["aciVersion": .int(Int(v[0] >> 4)),
                                                     "dataStorageVersion": .int(Int(v[0] & 0x0F))]))
            }
            return nil

        // Currencies, countries, exponents.
        case 0x5F2A, 0x9F42, 0x9F3C: return currencyCode(v)
        case 0x9F51 where v.count == 2 && ctx.scheme != .mastercard: return currencyCode(v)
        case 0x5F28, 0x9F1A, 0x9F57: return countryCode(v)
        case 0x5F36, 0x9F44, 0x9F3D:
            guard v.count == 1, let n = BCD.value(v) else { return malformed(v, "a one-digit exponent") }
            return DecodedValue("\(n) decimal place\(n == 1 ? "" : "s")", fields: .object(["exponent": .int(Int(n))]))

        // Dates and times.
        case 0x5F24, 0x5F25, 0x9A: return date(v)
        case 0x9F21: return time(v)

        // Text.
        case 0x50, 0x9F12, 0x5F20, 0x9F0B, 0x9F4E, 0x9F16, 0x9F1C, 0x9F1E, 0x5F50, 0x89, 0x9F24, 0x5F55, 0x5F56,
             0x5F54, 0x9F53:
            return text(v)
        case 0x8A: return authorisationResponseCode(v)
        case 0x5F2D: return languages(v)

        // Small numbers and counters.
        case 0x5F34:
            guard v.count == 1, let n = BCD.value(v) else { return malformed(v, "one BCD byte") }
            return DecodedValue("\(n)", fields: .object(["value": .int(Int(n))]))
        case 0x9F36, 0x9F13, 0x9F17, 0x9F14, 0x9F23, 0xDF8307:
            guard (1...4).contains(v.count) else { return nil }
            let n = v.reduce(0) { $0 << 8 | Int($1) }
            return DecodedValue("\(n)", fields: .object(["value": .int(n)]))
        case 0x9F41, 0x9F01, 0x9F15, 0x9F25, 0x9F19, 0x42, 0x9F0C:
            return digits(v)
        case 0x9F11:
            guard v.count == 1, let n = BCD.value(v) else { return malformed(v, "one BCD byte") }
            return DecodedValue("ISO/IEC 8859-\(n)", fields: .object(["codeTable": .int(Int(n))]))
        case 0x5F30: return serviceCode(v)
        case 0x87: return priority(v)
        case 0x88:
            guard v.count == 1 else { return malformed(v, "one byte") }
            return DecodedValue("SFI \(v[0])", fields: .object(["sfi": .int(Int(v[0]))]))
        case 0x9F4D:
            guard v.count == 2 else { return malformed(v, "two bytes") }
            return DecodedValue("log in SFI \(v[0]), \(v[1]) record(s)",
                                fields: .object(["sfi": .int(Int(v[0])), "records": .int(Int(v[1]))]))

        // Identifiers.
        case 0x4F, 0x84, 0x9F06, 0x9D: return applicationIdentifier(v)
        case 0x9F2A: return kernelIdentifier(v)
        case 0xDF810C:
            guard v.count == 1 else { return nil }
            return DecodedValue("kernel \(v[0] & 0x3F)\(kernelName(v[0] & 0x3F).map { " (\($0))" } ?? "")")

        // Bit fields.
        case 0x82: return bits(v, EMVBitTables.aip)
        case 0x95, 0x9F0D, 0x9F0E, 0x9F0F, 0xDF8120, 0xDF8121, 0xDF8122: return bits(v, EMVBitTables.tvr)
        case 0x9B: return bits(v, EMVBitTables.tsi)
        case 0x9F66 where v.count == 4: return bits(v, EMVBitTables.ttq)
        case 0x9F6C where ctx.scheme != .mastercard: return bits(v, EMVBitTables.ctq)
        case 0x9F33: return bits(v, EMVBitTables.terminalCapabilities)
        case 0x9F40: return bits(v, EMVBitTables.additionalTerminalCapabilities)
        case 0x9F07: return bits(v, EMVBitTables.applicationUsageControl)
        case 0xDF811B: return bits(v, EMVBitTables.kernelConfiguration)
        case 0xDF8117: return bits(v, EMVBitTables.oneByteOfTerminalCapabilities(0))
        case 0xDF8118, 0xDF8119, 0xDF811E, 0xDF812C: return bits(v, EMVBitTables.oneByteOfTerminalCapabilities(1))
        case 0xDF811F: return bits(v, EMVBitTables.oneByteOfTerminalCapabilities(2))
        case 0x9F6E where v.count == 4 && (ctx.scheme == nil || ctx.scheme == .visa): return formFactor(v)

        // Codes.
        case 0x9F27: return cryptogramInformation(v)
        case 0x9F34: return cvmResults(v)
        case 0x8E: return cvmList(v)
        case 0x9C: return transactionType(v)
        case 0x9F35: return terminalType(v)
        case 0x9F39: return posEntryMode(v)

        // Structures.
        case 0x94: return afl(v)
        case 0x8C, 0x8D, 0x9F38, 0x9F49, 0x97, 0x9F4F, 0xDF811A:
            return dol(v, ctx)
        case 0x9F5B where ctx.scheme == .mastercard: return dol(v, ctx)
        case 0x9F51 where ctx.scheme == .mastercard: return dol(v, ctx)
        case 0x9F69:
            if v.count >= 7, v[0] == 0x01 { return cardAuthenticationData(v) }
            return dol(v, ctx)
        case 0x9F4A, 0xDF8112: return tagList(v, ctx)
        case 0x9F10: return issuerApplicationData(v, ctx)
        case 0x8F, 0x9F22:
            guard v.count == 1 else { return malformed(v, "one byte") }
            return DecodedValue("CA public key index \(hex(v))", fields: .object(["index": .int(Int(v[0]))]))
        case 0x9F32, 0x9F47, 0x9F2E:
            guard (1...3).contains(v.count) else { return malformed(v, "1 to 3 bytes") }
            let e = v.reduce(0) { $0 << 8 | Int($1) }
            return DecodedValue("public key exponent \(e)", fields: .object(["exponent": .int(e)]))
        case 0x90, 0x9F46, 0x9F2D:
            guard !v.isEmpty else { return nil }
            return DecodedValue("\(v.count * 8)-bit public key certificate (recovered with the \(tag == 0x90 ? "CA" : "issuer") public key)",
                                fields: .object(["bits": .int(v.count * 8)]))
        case 0x92, 0x9F48, 0x9F2F:
            guard !v.isEmpty else { return nil }
            return DecodedValue("public key remainder, \(v.count) bytes", fields: .object(["length": .int(v.count)]))
        case 0x93, 0x9F4B:
            guard !v.isEmpty else { return nil }
            return DecodedValue("\(v.count * 8)-bit signature", fields: .object(["bits": .int(v.count * 8)]))
        case 0x80: return responseFormat1(v)
        case 0x9F08, 0x9F09: return versionNumber(v)
        case 0x9F6D where ctx.scheme == .mastercard: return versionNumber(v)
        default:
            return nil
        }
    }

    /// Fallback by format: text for a/an/ans, digits for n.
    static func decodeByFormat(_ tag: Tag, _ v: [UInt8]) -> DecodedValue? {
        guard let info = EMVTagDictionary.info(tag), !v.isEmpty else { return nil }
        switch info.format {
        case .a, .an, .ans: return text(v)
        case .n: return digits(v)
        case .b, .cn, .template, .variable: return nil
        }
    }

    // MARK: - PAN and tracks (always masked)

    static func pan(_ v: [UInt8]) -> DecodedValue {
        do {
            let p = try PAN(bcd: v)
            let luhn = p.isLuhnValid ? "Luhn OK" : "Luhn check FAILS"
            return DecodedValue("\(p.masked) (\(p.digits.count) digits, \(luhn))",
                                fields: .object(["masked": .string(p.masked), "digits": .int(p.digits.count),
                                                 "luhnValid": .bool(p.isLuhnValid)]))
        } catch {
            return DecodedValue("malformed PAN (\(v.count) bytes, redacted)", fields: .object(["redacted": .bool(true)]))
        }
    }

    static func track2(_ v: [UInt8]) -> DecodedValue {
        do {
            let t = try Track2(bytes: v)
            var parts = [t.pan.masked]
            var fields: [String: StructuredValue] = ["pan": .string(t.pan.masked), "serviceCode": .string(t.serviceCode),
                                                     "luhnValid": .bool(t.pan.isLuhnValid)]
            if let y = Int(t.expiry.prefix(2)), let m = Int(t.expiry.suffix(2)), (1...12).contains(m) {
                let exp = "\(2000 + y)-\(twoDigits(m))"
                parts.append("expires \(exp)")
                fields["expiry"] = .string(exp)
            } else {
                parts.append("expiry \(t.expiry) (not a valid YYMM)")
                fields["expiry"] = .string(t.expiry)
            }
            parts.append("service code \(t.serviceCode)")
            parts.append("discretionary data hidden")
            return DecodedValue(parts.joined(separator: ", "), fields: .object(fields))
        } catch {
            return DecodedValue("malformed track 2 (\(v.count) bytes, redacted)", fields: .object(["redacted": .bool(true)]))
        }
    }

    /// Track 1: `B<PAN>^<NAME>^<YYMM><service code><discretionary>`.
    static func track1(_ v: [UInt8]) -> DecodedValue {
        let s = String(decoding: v, as: UTF8.self)
        let parts = s.split(separator: "^", omittingEmptySubsequences: false)
        guard parts.count >= 3 else {
            return DecodedValue("malformed track 1 (\(v.count) bytes, redacted)", fields: .object(["redacted": .bool(true)]))
        }
        var digits = parts[0]
        while let f = digits.first, !f.isNumber { digits.removeFirst() }
        guard let p = PAN(digits) else {
            return DecodedValue("malformed track 1 (\(v.count) bytes, redacted)", fields: .object(["redacted": .bool(true)]))
        }
        let name = parts[1].trimmingCharacters(in: " ")
        return DecodedValue("\(p.masked), name \"\(name)\", discretionary data hidden",
                            fields: .object(["pan": .string(p.masked), "name": .string(String(name))]))
    }

    // MARK: - Amounts, currencies, countries

    static func numericAmount(_ v: [UInt8], currency: ContextCurrency, exponent: Int?) -> DecodedValue? {
        guard let n = BCD.value(v) else { return malformed(v, "BCD digits") }
        return amount(n, currency: currency, exponent: exponent)
    }

    static func binaryAmount(_ v: [UInt8], currency: ContextCurrency, exponent: Int?) -> DecodedValue? {
        guard v.count == 4 else { return malformed(v, "four bytes") }
        let n = v.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return amount(n, currency: currency, exponent: exponent)
    }

    static func amount(_ minor: UInt64, currency: ContextCurrency, exponent: Int?) -> DecodedValue {
        var known = exponent
        if known == nil, case .known(let c) = currency, c.exponent >= 0 { known = c.exponent }
        let e = known ?? 2
        let formatted = formatAmount(minor, exponent: e)
        var fields: [String: StructuredValue] = ["minorUnits": .string(String(minor)), "amount": .string(formatted),
                                                 "exponent": .int(e)]
        let text: String
        switch currency {
        case .known(let c):
            fields["currency"] = .string(c.code)
            text = "\(c.code) \(formatted)" + (known == nil ? " (2 decimals assumed)" : "")
        case .malformed(let tag):
            fields["currencyMalformed"] = .bool(true)
            text = formatted + " (currency code \(tag.hex) malformed" + (known == nil ? "; 2 decimals assumed)" : ")")
        case .absent:
            text = formatted + (known == nil ? " (no currency given; 2 decimals assumed)" : "")
        }
        return DecodedValue(text, fields: .object(fields))
    }

    /// `1234` with exponent 2 -> `12.34`.
    public static func formatAmount(_ minor: UInt64, exponent: Int) -> String {
        guard exponent > 0 else { return String(minor) }
        var s = String(minor)
        if s.count <= exponent { s = String(repeating: "0", count: exponent - s.count + 1) + s }
        s.insert(".", at: s.index(s.endIndex, offsetBy: -exponent))
        return s
    }

    static func currencyCode(_ v: [UInt8]) -> DecodedValue {
        guard let n = ISOCodes.numericCode(bcd: v) else { return malformed(v, "a 3-digit BCD code") }
        guard let c = ISOCodes.currency(n) else {
            return DecodedValue("currency \(threeDigits(n))", fields: .object(["numeric": .int(n)]))
        }
        return DecodedValue("\(c.code) (\(c.name))",
                            fields: .object(["numeric": .int(c.numeric), "code": .string(c.code),
                                             "exponent": .int(c.exponent)]))
    }

    static func countryCode(_ v: [UInt8]) -> DecodedValue {
        guard let n = ISOCodes.numericCode(bcd: v) else { return malformed(v, "a 3-digit BCD code") }
        guard let c = ISOCodes.country(n) else {
            return DecodedValue("country \(threeDigits(n))", fields: .object(["numeric": .int(n)]))
        }
        return DecodedValue("\(c.alpha3) (\(c.name))",
                            fields: .object(["numeric": .int(c.numeric), "alpha3": .string(c.alpha3)]))
    }

    // MARK: - Dates, times, text, digits

    /// YYMMDD -> `2026-11-30` (YY 00-49 is 20YY, 50-99 is 19YY, EMV Book 4 §6.7.3).
    static func date(_ v: [UInt8]) -> DecodedValue {
        guard v.count == 3, let s = try? BCD.digits(v), let yy = Int(s.prefix(2)),
              let mm = Int(s.dropFirst(2).prefix(2)), let dd = Int(s.suffix(2)) else {
            return malformed(v, "YYMMDD in BCD")
        }
        let year = yy < 50 ? 2000 + yy : 1900 + yy
        guard (1...12).contains(mm), (1...daysIn(month: mm, year: year)).contains(dd) else {
            return DecodedValue("invalid date \(s) (YYMMDD)", fields: .object(["raw": .string(s)]))
        }
        let iso = "\(year)-\(twoDigits(mm))-\(twoDigits(dd))"
        return DecodedValue(iso, fields: .object(["date": .string(iso)]))
    }

    static func time(_ v: [UInt8]) -> DecodedValue {
        guard v.count == 3, let s = try? BCD.digits(v), let h = Int(s.prefix(2)),
              let m = Int(s.dropFirst(2).prefix(2)), let sec = Int(s.suffix(2)) else {
            return malformed(v, "HHMMSS in BCD")
        }
        guard h < 24, m < 60, sec < 60 else {
            return DecodedValue("invalid time \(s) (HHMMSS)", fields: .object(["raw": .string(s)]))
        }
        let t = "\(twoDigits(h)):\(twoDigits(m)):\(twoDigits(sec))"
        return DecodedValue(t, fields: .object(["time": .string(t)]))
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Printable text in quotes; non-printable bytes as `\xNN`.
    static func text(_ v: [UInt8]) -> DecodedValue {
        var s = ""
        for b in v {
            if (0x20...0x7E).contains(b) {
                if b == 0x22 || b == 0x5C { s.append("\\") }
                s.append(Character(Unicode.Scalar(b)))
            } else {
                s += "\\x" + hex([b])
            }
        }
        return DecodedValue("\"\(s)\"", fields: .object(["text": .string(String(decoding: v.map { (0x20...0x7E).contains($0) ? $0 : 0x3F }, as: UTF8.self))]))
    }

    static func digits(_ v: [UInt8]) -> DecodedValue? {
        guard let s = try? BCD.digits(v, allowingTrailingF: true), !s.isEmpty else { return malformed(v, "BCD digits") }
        return DecodedValue(s, fields: .object(["digits": .string(s)]))
    }

    static func languages(_ v: [UInt8]) -> DecodedValue {
        guard v.count % 2 == 0, v.allSatisfy({ (0x61...0x7A).contains($0) || (0x41...0x5A).contains($0) }) else {
            return text(v)
        }
        let codes = stride(from: 0, to: v.count, by: 2).map { String(decoding: v[$0..<($0 + 2)], as: UTF8.self) }
        return DecodedValue(codes.joined(separator: ", "), fields: .object(["languages": .array(codes.map(StructuredValue.string))]))
    }

    static func authorisationResponseCode(_ v: [UInt8]) -> DecodedValue {
        var d = text(v)
        let s = String(decoding: v, as: UTF8.self)
        let meaning: String? = switch s {
        case "00": "approved"
        case "Y1": "offline approved"
        case "Z1": "offline declined"
        case "Y2": "approved (after card-initiated referral)"
        case "Z2": "declined (after card-initiated referral)"
        case "Y3": "unable to go online, offline approved"
        case "Z3": "unable to go online, offline declined"
        case "51": "insufficient funds"
        case "05": "do not honour"
        case "55": "incorrect PIN"
        case "54": "expired card"
        case "01": "refer to card issuer"
        default: nil
        }
        if let meaning { d.text += " (\(meaning))" }
        return d
    }

    static func serviceCode(_ v: [UInt8]) -> DecodedValue {
        guard v.count == 2, let s = try? BCD.digits(v), s.count == 4, s.first == "0" else {
            return malformed(v, "a 3-digit BCD code")
        }
        let code = String(s.dropFirst())
        let d = Array(code)
        let first: String = switch d[0] {
        case "1": "international interchange"
        case "2": "international interchange, use IC where feasible"
        case "5": "national interchange only"
        case "6": "national interchange, use IC where feasible"
        case "7": "private, no interchange"
        case "9": "test"
        default: "unassigned"
        }
        let second: String = switch d[1] {
        case "0": "normal authorisation"
        case "2": "contact issuer via online means"
        case "4": "contact issuer via online means except under bilateral agreement"
        default: "unassigned"
        }
        let third: String = switch d[2] {
        case "0": "no restrictions, PIN required"
        case "1": "no restrictions"
        case "2": "goods and services only"
        case "3": "ATM only, PIN required"
        case "4": "cash only"
        case "5": "goods and services only, PIN required"
        case "6": "no restrictions, prompt for PIN if PED present"
        case "7": "goods and services only, prompt for PIN if PED present"
        default: "unassigned"
        }
        return DecodedValue(code, details: [first, second, third], fields: .object(["serviceCode": .string(code)]))
    }

    static func priority(_ v: [UInt8]) -> DecodedValue {
        guard v.count == 1 else { return malformed(v, "one byte") }
        let p = Int(v[0] & 0x0F)
        var text = p == 0 ? "no priority" : "priority \(p)"
        if v[0] & 0x80 != 0 { text += ", cardholder confirmation required" }
        return DecodedValue(text, fields: .object(["priority": .int(p),
                                                   "confirmationRequired": .bool(v[0] & 0x80 != 0)]))
    }

    // MARK: - Identifiers

    static func applicationIdentifier(_ v: [UInt8]) -> DecodedValue? {
        if let s = String(validating: v, as: UTF8.self), s == "2PAY.SYS.DDF01" || s == "1PAY.SYS.DDF01" {
            let what = s.hasPrefix("2") ? "Proximity Payment System Environment (PPSE)" : "Payment System Environment (PSE)"
            return DecodedValue("\"\(s)\" — \(what)", fields: .object(["text": .string(s)]))
        }
        guard let name = applicationName(v) else { return nil }
        return DecodedValue(name, fields: .object(["application": .string(name)]))
    }

    /// The brand of a well-known AID (by full AID, then by RID): ``PaymentNetwork/applicationName(_:)``.
    public static func applicationName(_ aid: [UInt8]) -> String? {
        PaymentNetwork.applicationName(aid)
    }

    static func kernelIdentifier(_ v: [UInt8]) -> DecodedValue? {
        guard let first = v.first else { return nil }
        guard first >> 6 == 0 else {
            return DecodedValue("domestic kernel \(hex(v))", fields: .object(["domestic": .bool(true)]))
        }
        let k = first & 0x3F
        return DecodedValue("kernel \(k)\(kernelName(k).map { " (\($0))" } ?? "")", fields: .object(["kernel": .int(Int(k))]))
    }

    static func kernelName(_ k: UInt8) -> String? { PaymentNetwork.kernelName(k) }

    // MARK: - Bit fields

    static func bits(_ v: [UInt8], _ table: EMVBitTables.Table) -> DecodedValue {
        var names: [String] = []
        var items: [StructuredValue] = []
        for (i, byte) in v.enumerated() {
            for bit in (1...8).reversed() where byte & (1 << (bit - 1)) != 0 {
                let name = i < table.count ? table[i][8 - bit] : nil
                let label = name ?? "RFU"
                names.append("byte \(i + 1) bit \(bit): \(label)")
                items.append(.object(["byte": .int(i + 1), "bit": .int(bit), "name": .string(label)]))
            }
        }
        var text: String
        switch names.count {
        case 0: text = "none set"
        case 1: text = names[0]
        default: text = "\(names.count) set"
        }
        if v.count != table.count { text += " (expected \(table.count) bytes, got \(v.count))" }
        return DecodedValue(text, details: names.count > 1 ? names : [], fields: .object(["set": .array(items)]))
    }

    static func formFactor(_ v: [UInt8]) -> DecodedValue {
        let version = Int(v[0] >> 5)
        let type: String = switch v[0] & 0x1F {
        case 0: "standard card"
        case 1: "mini card"
        case 2: "non-card form factor"
        case 3: "consumer mobile phone"
        default: "form factor \(v[0] & 0x1F)"
        }
        var details: [String] = []
        for bit in (1...8).reversed() where v[1] & (1 << (bit - 1)) != 0 {
            details.append("byte 2 bit \(bit): \(EMVBitTables.formFactorFeatures[8 - bit] ?? "RFU")")
        }
        return DecodedValue("\(type) (form factor indicator version \(version))", details: details,
                            fields: .object(["version": .int(version), "formFactor": .string(type)]))
    }

    // MARK: - Codes

    static func cryptogramInformation(_ v: [UInt8]) -> DecodedValue {
        guard v.count == 1 else { return malformed(v, "one byte") }
        let b = v[0]
        let type: String = switch b >> 6 {
        case 0: "AAC (declined)"
        case 1: "TC (approved offline)"
        case 2: "ARQC (online authorisation requested)"
        default: "AAR (referral, RFU)"
        }
        var details: [String] = []
        if b & 0x30 != 0 { details.append("payment system-specific cryptogram bits \(b >> 4 & 0x3)") }
        if b & 0x08 != 0 { details.append("advice required") }
        switch b & 0x07 {
        case 0: break
        case 1: details.append("reason: service not allowed")
        case 2: details.append("reason: PIN Try Limit exceeded")
        case 3: details.append("reason: issuer authentication failed")
        default: details.append("reason code \(b & 0x07) (RFU)")
        }
        let short = String(type.prefix { $0 != " " })
        return DecodedValue(type, details: details,
                            fields: .object(["cryptogram": .string(short), "adviceRequired": .bool(b & 0x08 != 0)]))
    }

    static func cvmName(_ code: UInt8) -> String {
        switch code & 0x3F {
        case 0x00: "Fail CVM processing"
        case 0x01: "Plaintext PIN verification performed by ICC"
        case 0x02: "Enciphered PIN verified online"
        case 0x03: "Plaintext PIN verification performed by ICC and signature (paper)"
        case 0x04: "Enciphered PIN verification performed by ICC"
        case 0x05: "Enciphered PIN verification performed by ICC and signature (paper)"
        case 0x1E: "Signature (paper)"
        case 0x1F: "No CVM required"
        case 0x3F: "No CVM performed"
        case 0x20...0x2F: "CVM \(hex([code & 0x3F])) (payment system-specific)"
        case 0x30...0x3E: "CVM \(hex([code & 0x3F])) (issuer-specific)"
        default: "CVM \(hex([code & 0x3F])) (RFU)"
        }
    }

    static func cvmCondition(_ c: UInt8, x: UInt32? = nil, y: UInt32? = nil) -> String {
        switch c {
        case 0x00: return "always"
        case 0x01: return "if unattended cash"
        case 0x02: return "if not unattended cash and not manual cash and not purchase with cashback"
        case 0x03: return "if terminal supports the CVM"
        case 0x04: return "if manual cash"
        case 0x05: return "if purchase with cashback"
        case 0x06: return "if transaction is in the application currency and is under X" + (x.map { " (\($0))" } ?? "")
        case 0x07: return "if transaction is in the application currency and is over X" + (x.map { " (\($0))" } ?? "")
        case 0x08: return "if transaction is in the application currency and is under Y" + (y.map { " (\($0))" } ?? "")
        case 0x09: return "if transaction is in the application currency and is over Y" + (y.map { " (\($0))" } ?? "")
        case 0x80...0xFF: return "condition \(hex([c])) (payment system-specific)"
        default: return "condition \(hex([c])) (RFU)"
        }
    }

    static func cvmResults(_ v: [UInt8]) -> DecodedValue {
        guard v.count == 3 else { return malformed(v, "three bytes") }
        let result: String = switch v[2] {
        case 0: "unknown"
        case 1: "failed"
        case 2: "successful"
        default: "result \(hex([v[2]]))"
        }
        return DecodedValue("\(cvmName(v[0])), \(cvmCondition(v[1])): \(result)",
                            fields: .object(["cvm": .string(cvmName(v[0])), "condition": .string(cvmCondition(v[1])),
                                             "result": .string(result)]))
    }

    static func cvmList(_ v: [UInt8]) -> DecodedValue {
        guard v.count >= 8, (v.count - 8) % 2 == 0 else {
            return malformed(v, "amount X, amount Y and 2-byte rules")
        }
        let x = v[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let y = v[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var details: [String] = []
        var rules: [StructuredValue] = []
        for i in stride(from: 8, to: v.count, by: 2) {
            let next = v[i] & 0x40 != 0
            let line = "\(cvmName(v[i])), \(cvmCondition(v[i + 1], x: x, y: y)); "
                + (next ? "if unsuccessful, apply next rule" : "if unsuccessful, cardholder verification fails")
            details.append(line)
            rules.append(.object(["cvm": .string(cvmName(v[i])), "condition": .string(cvmCondition(v[i + 1])),
                                  "applyNextIfUnsuccessful": .bool(next)]))
        }
        return DecodedValue("X = \(x), Y = \(y), \(rules.count) rule\(rules.count == 1 ? "" : "s")", details: details,
                            fields: .object(["x": .int(Int(x)), "y": .int(Int(y)), "rules": .array(rules)]))
    }

    static func transactionType(_ v: [UInt8]) -> DecodedValue {
        guard v.count == 1 else { return malformed(v, "one byte") }
        let name: String = switch v[0] {
        case 0x00: "purchase (goods and services)"
        case 0x01: "cash advance / withdrawal"
        case 0x09: "purchase with cashback"
        case 0x20: "refund / return"
        case 0x30: "available funds inquiry"
        case 0x31: "balance inquiry"
        case 0x40: "transfer"
        case 0x50: "payment"
        default: "transaction type \(hex(v))"
        }
        return DecodedValue(name, fields: .object(["type": .string(name)]))
    }

    static func terminalType(_ v: [UInt8]) -> DecodedValue {
        guard v.count == 1 else { return malformed(v, "one byte") }
        let who: String = switch v[0] >> 4 {
        case 1: "financial institution"
        case 2: "merchant"
        case 3: "cardholder"
        default: "operator \(v[0] >> 4)"
        }
        let how: String = switch v[0] & 0x0F {
        case 1: "attended, online only"
        case 2: "attended, offline with online capability"
        case 3: "attended, offline only"
        case 4: "unattended, online only"
        case 5: "unattended, offline with online capability"
        case 6: "unattended, offline only"
        default: "environment \(v[0] & 0x0F)"
        }
        return DecodedValue("\(who), \(how)", fields: .object(["operator": .string(who), "environment": .string(how)]))
    }

    static func posEntryMode(_ v: [UInt8]) -> DecodedValue {
        guard v.count == 1 else { return malformed(v, "one byte") }
        let name: String = switch v[0] {
        case 0x00: "unspecified"
        case 0x01: "manual (key entry)"
        case 0x02: "magnetic stripe"
        case 0x05: "integrated circuit card (contact)"
        case 0x07: "contactless chip (EMV)"
        case 0x80: "fallback to magnetic stripe"
        case 0x90: "magnetic stripe, full track read"
        case 0x91: "contactless magnetic stripe"
        default: "entry mode \(hex(v))"
        }
        return DecodedValue(name, fields: .object(["mode": .string(name)]))
    }

    // MARK: - Structures

    static func afl(_ v: [UInt8]) -> DecodedValue {
        guard v.count % 4 == 0 else { return malformed(v, "4-byte entries") }
        var details: [String] = []
        var entries: [StructuredValue] = []
        var problems: [String] = []
        for i in stride(from: 0, to: v.count, by: 4) {
            let sfi = Int(v[i] >> 3), first = Int(v[i + 1]), last = Int(v[i + 2]), oda = Int(v[i + 3])
            let records = first == last ? "record \(first)" : "records \(first)-\(last)"
            var line = "SFI \(sfi), \(records)"
            if oda > 0 { line += ", \(oda) for offline data authentication" }
            if !(1...30).contains(sfi) || v[i] & 0x07 != 0 || first == 0 || last < first || oda > last - first + 1 {
                line += " (invalid entry)"
                problems.append(line)
            }
            details.append(line)
            entries.append(.object(["sfi": .int(sfi), "firstRecord": .int(first), "lastRecord": .int(last),
                                    "odaRecords": .int(oda)]))
        }
        let n = v.count / 4
        var text = "\(n) entr\(n == 1 ? "y" : "ies")"
        if n == 1 { text = details[0] }
        if !problems.isEmpty { text += " (malformed)" }
        return DecodedValue(text, details: n == 1 ? [] : details, fields: .object(["entries": .array(entries)]))
    }

    static func dol(_ v: [UInt8], _ ctx: Context) -> DecodedValue {
        guard let list = try? DataObjectList(bytes: v) else { return malformed(v, "a data object list") }
        var details: [String] = []
        var entries: [StructuredValue] = []
        for e in list.entries {
            let name = name(of: e.tag, in: ctx) ?? "unknown tag"
            details.append("\(e.tag.hex) \(name) [\(e.length)]")
            entries.append(.object(["tag": .string(e.tag.hex), "name": .string(name), "length": .int(e.length)]))
        }
        let n = list.entries.count
        return DecodedValue("\(n) data object\(n == 1 ? "" : "s"), \(list.dataLength) bytes of data", details: details,
                            fields: .object(["entries": .array(entries), "dataLength": .int(list.dataLength)]))
    }

    static func tagList(_ v: [UInt8], _ ctx: Context) -> DecodedValue {
        var tags: [Tag] = []
        var i = 0
        let slice = v[...]
        while i < v.count {
            guard let (t, next) = try? BERTLV.readTag(slice, at: i) else { return malformed(v, "a list of tags") }
            tags.append(t)
            i = next
        }
        let details = tags.map { "\($0.hex) \(name(of: $0, in: ctx) ?? "unknown tag")" }
        return DecodedValue(tags.count == 1 ? details[0] : "\(tags.count) tags", details: tags.count == 1 ? [] : details,
                            fields: .object(["tags": .array(tags.map { .string($0.hex) })]))
    }

    /// Visa fDDA: version, card unpredictable number, CTQ, …
    static func cardAuthenticationData(_ v: [UInt8]) -> DecodedValue {
        let un = hex(v[1..<5])
        let ctq = hex(v[5..<7])
        return DecodedValue("fDDA version \(hex([v[0]])), card unpredictable number \(un), CTQ \(ctq)",
                            fields: .object(["fddaVersion": .int(Int(v[0])), "cardUnpredictableNumber": .string(un),
                                             "ctq": .string(ctq)]))
    }

    static func issuerApplicationData(_ v: [UInt8], _ ctx: Context) -> DecodedValue? {
        // Visa formats 0, 1 and 3: length 06, DKI, CVN, CVR (4 bytes, starting with its length 03).
        if v.count >= 7, v[0] == 0x06, v[3] == 0x03, ctx.scheme == nil || ctx.scheme == .visa {
            return DecodedValue("Visa: CVN \(hex([v[2]])) (\(v[2])), DKI \(hex([v[1]])), CVR \(hex(v[3..<7]))",
                                fields: .object(["cvn": .int(Int(v[2])), "dki": .int(Int(v[1])),
                                                 "cvr": .string(hex(v[3..<7]))]))
        }
        // Visa format 2: length 1F, then the format/CVN byte.
        if v.count == 32, v[0] == 0x1F, ctx.scheme == nil || ctx.scheme == .visa {
            return DecodedValue("Visa: 32-byte form, CVN byte \(hex([v[1]]))", fields: .object(["cvnByte": .int(Int(v[1]))]))
        }
        return nil
    }

    /// Format 1 response (tag 80): AIP + AFL after GET PROCESSING OPTIONS, or
    /// CID + ATC + AC (+ IAD) after GENERATE AC.
    static func responseFormat1(_ v: [UInt8]) -> DecodedValue? {
        if v.count >= 6, (v.count - 2) % 4 == 0, afl(Array(v[2...])).text.contains("malformed") == false {
            let aip = bits(Array(v[0..<2]), EMVBitTables.aip)
            let a = afl(Array(v[2...]))
            return DecodedValue("GET PROCESSING OPTIONS response: AIP \(hex(v[0..<2])), AFL \(a.text)",
                                details: aip.details.isEmpty ? [aip.text] + a.details : aip.details + a.details)
        }
        if v.count >= 11 {
            let cid = cryptogramInformation([v[0]])
            let atc = Int(v[1]) << 8 | Int(v[2])
            return DecodedValue("GENERATE AC response: \(cid.text), ATC \(atc), AC \(hex(v[3..<11]))"
                                + (v.count > 11 ? ", IAD \(hex(v[11...]))" : ""))
        }
        return nil
    }

    static func versionNumber(_ v: [UInt8]) -> DecodedValue? {
        guard v.count == 2 else { return nil }
        let n = Int(v[0]) << 8 | Int(v[1])
        return DecodedValue("version \(n)", fields: .object(["version": .int(n)]))
    }

    // MARK: - Helpers

    static func malformed(_ v: [UInt8], _ expected: String) -> DecodedValue {
        DecodedValue("malformed (expected \(expected))", fields: .object(["malformed": .bool(true)]))
    }

    static func twoDigits(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789ABCDEF")
        var s = ""
        for b in bytes { s.append(digits[Int(b >> 4)]); s.append(digits[Int(b & 0xF)]) }
        return s
    }
}

/// A number as three digits: `978`, `036`.
func threeDigits(_ n: Int) -> String {
    let s = String(n)
    return String(repeating: "0", count: max(0, 3 - s.count)) + s
}

extension Substring {
    func trimmingCharacters(in set: Character) -> Substring {
        var s = self
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return s
    }
}
