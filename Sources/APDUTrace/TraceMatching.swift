public import BERTLV
import ISO7816

/// How replay compares the command a reader sends with the recorded one.
public enum TraceMatchMode: String, Hashable, Sendable, CaseIterable {
    /// Byte for byte.
    case strict
    /// Byte for byte except the bytes that legitimately change between runs: the terminal data
    /// named in ``TraceMatching/maskedTags`` inside DOL data (GPO ← PDOL, GENERATE AC ← CDOL1 /
    /// CDOL2, INTERNAL AUTHENTICATE ← DDOL, COMPUTE CRYPTOGRAPHIC CHECKSUM ← UDOL), located
    /// through the DOLs the card sent in the trace, and the terminal's relay-resistance entropy.
    case masked
    /// Same CLA, INS, P1, P2, data length and Le: for captures made by other terminals, whose
    /// terminal data (TTQ, country, amount) differ.
    case structural
}

/// The matching rule of a replay: a mode and, for `masked`, the terminal data to ignore.
public struct TraceMatching: Hashable, Sendable {
    public var mode: TraceMatchMode
    /// Tags whose bytes `masked` ignores inside DOL data.
    public var maskedTags: Set<Tag>

    /// Data that differs on every run: unpredictable numbers (9F37, and 9F6A for mag-stripe
    /// mode), transaction date 9A and time 9F21.
    public static let volatileTags: Set<Tag> = [.unpredictableNumber, .transactionDate, .transactionTime, 0x9F6A]
    /// The amount and currency, ignored too when the caller overrides them.
    public static let amountTags: Set<Tag> = [.amountAuthorised, .amountOther, .transactionCurrencyCode,
                                              .amountAuthorisedBinary, 0x9F04]

    public init(mode: TraceMatchMode = .masked, maskedTags: Set<Tag> = TraceMatching.volatileTags) {
        self.mode = mode
        self.maskedTags = maskedTags
    }

    /// The matching a trace asks for with `@match strict|masked|structural` (a capture of
    /// another terminal says `structural`); masked when it says nothing.
    public static func declared(by trace: APDUTrace) -> TraceMatching {
        TraceMatching(mode: trace[header: "match"].flatMap(TraceMatchMode.init(rawValue:)) ?? .masked)
    }

    /// `mode`, ignoring the volatile data, plus the amount and currency when `overridesAmount`.
    public init(mode: TraceMatchMode, overridesAmount: Bool) {
        self.init(mode: mode, maskedTags: overridesAmount ? Self.volatileTags.union(Self.amountTags) : Self.volatileTags)
    }
}

/// Where the volatile bytes sit in each recorded command, found by following the card's DOLs
/// through the trace.
struct TraceMasks {
    /// The DOLs the card has sent so far, updated as responses go by.
    private var pdol = DataObjectList(entries: [])
    private var cdol1: DataObjectList?
    private var cdol2: DataObjectList?
    private var ddol: DataObjectList?
    private var udol: DataObjectList?
    private var generateACs = 0
    /// A response being fetched with GET RESPONSE: the command that got 61xx, the data so far.
    private var chained: (command: [UInt8], data: [UInt8])?
    let tags: Set<Tag>

    init(tags: Set<Tag>) { self.tags = tags }

    /// The byte ranges of `command` (its encoding) to ignore, given the DOLs seen so far.
    mutating func mask(for command: [UInt8]) -> [Range<Int>] {
        guard let apdu = try? CommandAPDU(bytes: command), !apdu.data.isEmpty else { return [] }
        // Short Lc sits at byte 4; an extended one is 00 + two bytes.
        let dataStart = command[4] == 0 ? 7 : 5
        let cla = apdu.instructionClass & 0xF0
        var ranges: [Range<Int>] = []
        switch (cla, apdu.instructionCode) {
        case (0x80, 0xA8):
            // GPO: 83 L <PDOL data>
            var d = apdu.data[...]
            guard d.first == 0x83, let (len, next) = try? BERTLV.readLength(d, at: d.startIndex + 1),
                  next + len == d.endIndex else { return [] }
            d = d[next...]
            ranges = Self.ranges(pdol, tags: tags, dataLength: d.count, offset: dataStart + next)
        case (0x80, 0xAE):
            generateACs += 1
            let dol = generateACs == 1 ? cdol1 : (cdol2 ?? cdol1)
            if let dol { ranges = Self.ranges(dol, tags: tags, dataLength: apdu.data.count, offset: dataStart) }
        case (0x00, 0x88):
            if let ddol { ranges = Self.ranges(ddol, tags: tags, dataLength: apdu.data.count, offset: dataStart) }
            else if apdu.data.count == 4 && tags.contains(.unpredictableNumber) { ranges = [dataStart..<(dataStart + 4)] }
        case (0x80, 0x2A):
            let dol = udol ?? DataObjectList(entries: [.init(tag: 0x9F6A, length: 4)])
            ranges = Self.ranges(dol, tags: tags, dataLength: apdu.data.count, offset: dataStart)
        case (0x80, 0xEA):
            // EXCHANGE RELAY RESISTANCE DATA: the terminal's random entropy.
            if tags.contains(.unpredictableNumber) { ranges = [dataStart..<(dataStart + apdu.data.count)] }
        default:
            break
        }
        return ranges
    }

    /// The terminal data a DOL-carrying command sent, split by the DOL seen so far (call before
    /// ``mask(for:)`` for the same command, which counts GENERATE ACs).
    func values(for command: [UInt8]) -> [Tag: [UInt8]] {
        guard let apdu = try? CommandAPDU(bytes: command), !apdu.data.isEmpty else { return [:] }
        switch (apdu.instructionClass & 0xF0, apdu.instructionCode) {
        case (0x80, 0xA8):
            let d = apdu.data[...]
            guard d.first == 0x83, let (len, next) = try? BERTLV.readLength(d, at: d.startIndex + 1),
                  next + len == d.endIndex else { return [:] }
            return pdol.split(d[next...]) ?? [:]
        case (0x80, 0xAE):
            let dol = generateACs == 0 ? cdol1 : (cdol2 ?? cdol1)
            return dol?.split(apdu.data) ?? [:]
        case (0x00, 0x88):
            // INTERNAL AUTHENTICATE: the card's DDOL, else the default one (the unpredictable number).
            let dol = ddol ?? DataObjectList(entries: [.init(tag: .unpredictableNumber, length: 4)])
            return dol.split(apdu.data) ?? [:]
        default:
            return [:]
        }
    }

    /// Learns the DOLs a card response carries: PDOL from a SELECT, the others from any response.
    /// A response fetched through 61xx and GET RESPONSE counts as the answer to the command that
    /// got the 61xx.
    mutating func observe(command: [UInt8], response: ResponseAPDU) {
        var command = command
        var data = response.data
        if command.count >= 2 && command[1] == 0xC0, let p = chained {
            command = p.command
            data = p.data + data
        }
        if response.sw1 == 0x61 {
            chained = (command, data)
            return
        }
        chained = nil
        guard !data.isEmpty, let nodes = try? BERTLV.parse(data) else { return }
        let isSelect = command.count >= 2 && command[1] == 0xA4
        if isSelect && response.statusWord == .success {
            // A new application: its PDOL (or none), and a new transaction.
            pdol = nodes.find(.pdol).flatMap { try? DataObjectList(bytes: $0.value) } ?? DataObjectList(entries: [])
            cdol1 = nil; cdol2 = nil; ddol = nil; udol = nil
            generateACs = 0
        }
        if let n = nodes.find(.cdol1), let d = try? DataObjectList(bytes: n.value) { cdol1 = d }
        if let n = nodes.find(.cdol2), let d = try? DataObjectList(bytes: n.value) { cdol2 = d }
        if let n = nodes.find(0x9F49), let d = try? DataObjectList(bytes: n.value) { ddol = d }
        if let n = nodes.find(0x9F69), let d = try? DataObjectList(bytes: n.value), Self.looksLikeDOL(n.value) { udol = d }
    }

    /// 9F69 is the UDOL for Mastercard and Card Authentication Related Data for Visa; only a
    /// value that parses as a DOL of known tags is taken as a UDOL.
    private static func looksLikeDOL(_ v: ArraySlice<UInt8>) -> Bool {
        guard let d = try? DataObjectList(bytes: v), !d.entries.isEmpty else { return false }
        return d.entries.allSatisfy { EMVTagDictionary.info($0.tag) != nil || $0.tag == 0x9F6A }
    }

    private static func ranges(_ dol: DataObjectList, tags: Set<Tag>, dataLength: Int, offset: Int) -> [Range<Int>] {
        guard dol.dataLength == dataLength else { return [] }
        var out: [Range<Int>] = []
        var at = offset
        for e in dol.entries {
            if tags.contains(e.tag) && e.length > 0 { out.append(at..<(at + e.length)) }
            at += e.length
        }
        return out
    }
}

extension TraceMatching {
    /// Nil when `received` matches `recorded` under this rule; otherwise why not.
    func mismatch(recorded: [UInt8], mask: [Range<Int>], received: [UInt8]) -> String? {
        switch mode {
        case .strict:
            return Self.firstDifference(recorded, received, mask: [])
        case .masked:
            return Self.firstDifference(recorded, received, mask: mask)
        case .structural:
            guard let a = try? CommandAPDU(bytes: recorded), let b = try? CommandAPDU(bytes: received) else {
                return Self.firstDifference(recorded, received, mask: [])
            }
            if (a.instructionClass, a.instructionCode, a.p1Parameter, a.p2Parameter)
                != (b.instructionClass, b.instructionCode, b.p1Parameter, b.p2Parameter) {
                return "CLA INS P1 P2 differ"
            }
            if a.data.count != b.data.count {
                return "data length \(b.data.count) instead of \(a.data.count)"
            }
            if a.expectedResponseLength != b.expectedResponseLength {
                func le(_ v: Int) -> String { v == -1 ? "absent" : String(v) }
                return "Le \(le(b.expectedResponseLength)) instead of \(le(a.expectedResponseLength))"
            }
            return nil
        }
    }

    private static func firstDifference(_ a: [UInt8], _ b: [UInt8], mask: [Range<Int>]) -> String? {
        if a.count != b.count {
            return "\(b.count) byte(s) instead of \(a.count)"
        }
        for i in a.indices where a[i] != b[i] && !mask.contains(where: { $0.contains(i) }) {
            return "first difference at byte \(i)"
        }
        return nil
    }
}

extension APDUTrace {
    /// The terminal data the recorded reader sent through the card's DOLs (PDOL in GPO, CDOL1/2
    /// in GENERATE AC, DDOL in INTERNAL AUTHENTICATE): amount 9F02, currency 5F2A, country 9F1A, TTQ 9F66, … The first value
    /// of each tag wins. Replay uses it to run a kernel with the recorded amount and currency.
    public var terminalData: [Tag: [UInt8]] {
        var out: [Tag: [UInt8]] = [:]
        var masks = TraceMasks(tags: [])
        var pending: [UInt8]?
        for e in entries {
            switch e.kind {
            case .command(let bytes):
                for (tag, value) in masks.values(for: bytes) where out[tag] == nil { out[tag] = value }
                _ = masks.mask(for: bytes)
                pending = bytes
            case .response(let r):
                if let p = pending { masks.observe(command: p, response: r) }
                pending = nil
            case .event:
                pending = nil
            }
        }
        return out
    }
}
