public import BERTLV
public import PaymentRules
import ISO7816

// Parsers for what the card answers, one per command. Each takes the response data and the step,
// and throws a `KernelError` naming both when the card breaks the protocol.

/// Parses BER-TLV from a card, turning TLV errors into `malformedResponse` at `step`.
func parseTLV(_ data: [UInt8], step: KernelStep, what: String) throws(KernelError) -> [TLV] {
    do {
        return try BERTLV.parse(data, rules: .emv)
    } catch {
        throw KernelError(.malformedResponse, step: step, "\(what) is not valid BER-TLV: \(error)")
    }
}

/// Parses exactly one template with `tag` (padding aside); anything else is `malformedResponse`.
func parseTemplate(_ data: [UInt8], _ tag: Tag, step: KernelStep, what: String) throws(KernelError) -> TLV {
    let objects = try parseTLV(data, step: step, what: what)
    guard let first = objects.first else {
        throw KernelError(.malformedResponse, step: step, "\(what) is empty (expected template \(tag.hex))")
    }
    guard first.tag == tag else {
        throw KernelError(.malformedResponse, step: step, "\(what) starts with tag \(first.tag.hex), not template \(tag.hex)")
    }
    guard objects.count == 1 else {
        throw KernelError(.malformedResponse, step: step,
                          "\(what) has \(objects.count - 1) data object(s) after template \(tag.hex)")
    }
    return first
}

/// Parses the one object of an answer that may be one of several templates (a GPO or GENERATE AC
/// answer: 80 or 77, told apart by the caller); none, or anything after it, is `malformedResponse`.
func parseOneTemplate(_ data: [UInt8], step: KernelStep, what: String) throws(KernelError) -> TLV {
    let objects = try parseTLV(data, step: step, what: what)
    guard let first = objects.first else {
        throw KernelError(.malformedResponse, step: step, "\(what) is empty")
    }
    guard objects.count == 1 else {
        throw KernelError(.malformedResponse, step: step,
                          "\(what) has \(objects.count - 1) data object(s) after template \(first.tag.hex)")
    }
    return first
}

/// Text of an `an`/`ans` field (a label, a preferred name, a cardholder name): bytes read as
/// ISO 8859-1, control characters dropped, trailing spaces trimmed, and a card number in it
/// masked by the one policy (``SensitiveData/maskedText(_:)``), so no display, log or store of
/// a read shows one whatever the card put there.
func text(_ bytes: some Collection<UInt8>) -> String {
    SensitiveData.maskedText(plainText(bytes))
}

private func plainText(_ bytes: some Collection<UInt8>) -> String {
    // Printable ASCII, the usual case: the bytes are the UTF-8 text, each byte one character, so
    // the trailing spaces are trimmed as bytes, before the string is made.
    var printable = true, kept = 0, n = 0
    for b in bytes {
        n += 1
        guard b >= 0x20 && b < 0x7F else { printable = false; break }
        if b != 0x20 { kept = n }
    }
    if printable {
        return String(decoding: bytes.prefix(kept), as: UTF8.self)
    }
    var s = String(String.UnicodeScalarView(bytes.compactMap { b in
        (b >= 0x20 && b != 0x7F && !(0x80..<0xA0).contains(b)) ? Unicode.Scalar(b) : nil
    }))
    while s.last == " " { s.removeLast() }
    return s
}

// MARK: - Selection

/// One application the card offers, from a PPSE directory entry or a SELECT answer.
public struct ApplicationCandidate: Hashable, Sendable {
    /// The ADF name (AID) as the card gave it.
    public var aid: [UInt8]
    public var label: String?
    /// 1 (highest) ... 15; nil when absent or 0 (lowest).
    public var priority: UInt8?
    /// Kernel identifier (9F2A), when the directory entry has one.
    public var kernelIdentifier: [UInt8]?
    /// Extended selection (9F29), when the directory entry has one: final selection selects the
    /// AID followed by it (Book B §3.3.2.5).
    public var extendedSelection: [UInt8]?

    /// The name final selection selects: the AID, with its extended selection when the two fit in
    /// 16 bytes.
    public var selectionName: [UInt8] {
        guard let e = extendedSelection, !e.isEmpty, aid.count + e.count <= 16 else { return aid }
        return aid + e
    }
    /// Position in the card's list, to keep order among equal priorities.
    public var position: Int

    public init(aid: [UInt8], label: String? = nil, priority: UInt8? = nil, kernelIdentifier: [UInt8]? = nil,
                extendedSelection: [UInt8]? = nil, position: Int = 0) {
        self.extendedSelection = extendedSelection
        self.aid = aid
        self.label = label
        self.priority = priority
        self.kernelIdentifier = kernelIdentifier
        self.position = position
    }

    /// The priority from an Application Priority Indicator (87) byte: low nibble, 0 = none.
    static func priority(_ indicator: [UInt8]?) -> UInt8? {
        guard let b = indicator?.first, b & 0x0F != 0 else { return nil }
        return b & 0x0F
    }

    /// Priority order (1 first, absent last), card order among equals.
    static func ordered(_ candidates: [ApplicationCandidate]) -> [ApplicationCandidate] {
        guard candidates.count > 1 else { return candidates }   // one application, the usual card
        return candidates.sorted { a, b in
            let pa = Int(a.priority ?? 16), pb = Int(b.priority ?? 16)
            return pa != pb ? pa < pb : a.position < b.position
        }
    }
}

/// The directory entries of a PPSE answer (6F{84, A5{BF0C{61{4F, 50, 87, 9F2A}…}}}).
func parsePPSE(_ data: [UInt8]) throws(KernelError) -> [ApplicationCandidate] {
    let fci = try parseTemplate(data, .fciTemplate, step: .ppse, what: "the PPSE FCI")
    guard let proprietary = fci.child(.fciProprietaryTemplate) else {
        throw KernelError(.missingMandatoryData, step: .ppse, "the PPSE FCI has no proprietary template A5")
    }
    guard let directory = proprietary.child(.fciIssuerDiscretionaryData) else {
        throw KernelError(.missingMandatoryData, step: .ppse, "the PPSE FCI has no issuer discretionary data BF0C")
    }
    var out: [ApplicationCandidate] = []
    for (i, entry) in directory.children.enumerated() where entry.tag == Tag(0x61) {
        // An entry without a well-formed ADF name is skipped (EMV Book B §3.3.2.5).
        guard let adf = entry.child(.applicationIdentifier), (5...16).contains(adf.value.count) else { continue }
        out.append(ApplicationCandidate(
            aid: adf.valueBytes,
            label: entry.child(.applicationLabel).map { text($0.value) },
            priority: ApplicationCandidate.priority(entry.child(.applicationPriorityIndicator)?.valueBytes),
            kernelIdentifier: entry.child(.kernelIdentifier).flatMap { $0.value.isEmpty ? nil : $0.valueBytes },
            extendedSelection: entry.child(.extendedSelection).flatMap { $0.value.isEmpty ? nil : $0.valueBytes },
            position: i))
    }
    guard !out.isEmpty else {
        throw KernelError(.missingMandatoryData, step: .ppse, "the PPSE directory has no application entry 61")
    }
    return out
}

/// The file control information of a selected application.
public struct ApplicationFCI: Hashable, Sendable {
    /// DF name (84).
    public var dfName: [UInt8]
    public var label: String?
    public var preferredName: String?
    public var priority: UInt8?
    /// The PDOL (9F38), empty when the card asks for nothing.
    public var pdol: DataObjectList
    public var languagePreference: String?
    /// Issuer code table index (9F11): the ISO 8859 part of the preferred name.
    public var issuerCodeTableIndex: UInt8?
    /// The FCI issuer discretionary data (BF0C) objects.
    public var discretionaryData: [TLV]
}

/// Parses a SELECT AID answer: 6F{84, A5{50, 87, 9F38, 5F2D, 9F11, 9F12, BF0C}}.
func parseFCI(_ data: [UInt8], step: KernelStep) throws(KernelError) -> ApplicationFCI {
    let fci = try parseTemplate(data, .fciTemplate, step: step, what: "the FCI")
    guard let df = fci.child(.dedicatedFileName), (5...16).contains(df.value.count) else {
        throw KernelError(.missingMandatoryData, step: step, "the FCI has no DF name 84 of 5 to 16 bytes")
    }
    let a5 = fci.child(.fciProprietaryTemplate)
    let pdol: DataObjectList
    if let p = a5?.child(.pdol) {
        do { pdol = try DataObjectList(bytes: p.value) } catch {
            throw KernelError(.malformedResponse, step: step, "the PDOL 9F38 is not a data object list: \(error)")
        }
    } else {
        pdol = DataObjectList(entries: [])
    }
    return ApplicationFCI(
        dfName: df.valueBytes,
        label: a5?.child(.applicationLabel).map { text($0.value) },
        preferredName: a5?.child(.applicationPreferredName).map { text($0.value) },
        priority: ApplicationCandidate.priority(a5?.child(.applicationPriorityIndicator)?.valueBytes),
        pdol: pdol,
        languagePreference: a5?.child(.languagePreference).map { text($0.value) },
        issuerCodeTableIndex: a5?.child(.issuerCodeTableIndex)?.value.first,
        discretionaryData: a5?.child(.fciIssuerDiscretionaryData)?.children ?? [])
}

// MARK: - Application File Locator

/// One entry of the Application File Locator (94): records `firstRecord...lastRecord` of short
/// file `sfi`, of which the first `offlineAuthenticationRecords` take part in offline data
/// authentication.
public struct AFLEntry: Hashable, Sendable {
    public var sfi: UInt8
    public var firstRecord: UInt8
    public var lastRecord: UInt8
    public var offlineAuthenticationRecords: UInt8

    public init(sfi: UInt8, firstRecord: UInt8, lastRecord: UInt8, offlineAuthenticationRecords: UInt8 = 0) {
        self.sfi = sfi
        self.firstRecord = firstRecord
        self.lastRecord = lastRecord
        self.offlineAuthenticationRecords = offlineAuthenticationRecords
    }

    /// The AFL bytes of this entry.
    public var bytes: [UInt8] { [sfi << 3, firstRecord, lastRecord, offlineAuthenticationRecords] }

    /// Parses and validates an AFL (EMV Book 3 §10.2): 4-byte entries, SFI 1...30 with the low
    /// three bits zero, first record >= 1, first <= last, offline-authentication count <= records,
    /// no record named twice.
    public static func parse(_ bytes: [UInt8], step: KernelStep = .gpo) throws(KernelError) -> [AFLEntry] {
        guard bytes.count % 4 == 0 else {
            throw KernelError(.invalidAFL, step: step, "the AFL is \(bytes.count) byte(s), not a multiple of 4")
        }
        var out: [AFLEntry] = []
        out.reserveCapacity(bytes.count / 4)
        for i in stride(from: 0, to: bytes.count, by: 4) {
            let n = i / 4 + 1
            let sfi = bytes[i] >> 3
            guard bytes[i] & 0x07 == 0 else {
                throw KernelError(.invalidAFL, step: step,
                                  "AFL entry \(n): SFI byte \(Hex.encode([bytes[i]])) has its low 3 bits set")
            }
            guard (1...30).contains(sfi) else {
                throw KernelError(.invalidAFL, step: step, "AFL entry \(n): SFI \(sfi) is outside 1...30")
            }
            let first = bytes[i + 1], last = bytes[i + 2], offline = bytes[i + 3]
            guard first >= 1 else {
                throw KernelError(.invalidAFL, step: step, "AFL entry \(n): first record is 0 (records start at 1)")
            }
            guard first <= last else {
                throw KernelError(.invalidAFL, step: step,
                                  "AFL entry \(n): first record \(first) is after last record \(last)")
            }
            guard Int(offline) <= Int(last) - Int(first) + 1 else {
                throw KernelError(.invalidAFL, step: step,
                                  "AFL entry \(n): \(offline) offline-authentication record(s) of only \(Int(last) - Int(first) + 1)")
            }
            // The first record of this entry an earlier one of the same file names (the earlier
            // ranges do not overlap each other: each was checked in its turn).
            var twice: UInt8?
            for e in out where e.sfi == sfi && e.firstRecord <= last && first <= e.lastRecord {
                let r = max(first, e.firstRecord)
                if twice.map({ r < $0 }) ?? true { twice = r }
            }
            if let r = twice {
                throw KernelError(.invalidAFL, step: step, "AFL entry \(n): record \(r) of SFI \(sfi) is named twice")
            }
            out.append(AFLEntry(sfi: sfi, firstRecord: first, lastRecord: last, offlineAuthenticationRecords: offline))
        }
        return out
    }

    /// Whether `record` is one of the first ``offlineAuthenticationRecords`` of its AFL entry: part
    /// of the static data to be authenticated.
    static func isMarkedForODA(_ record: RecordReference, in afl: [AFLEntry]) -> Bool {
        afl.contains { e in
            e.sfi == record.sfi && record.record >= e.firstRecord
                && Int(record.record) - Int(e.firstRecord) < Int(e.offlineAuthenticationRecords)
        }
    }

    /// Every record this AFL names, in order.
    static func records(_ afl: [AFLEntry]) -> [RecordReference] {
        var out: [RecordReference] = []
        out.reserveCapacity(afl.reduce(0) { $0 + Int($1.lastRecord) - Int($1.firstRecord) + 1 })
        for e in afl {
            for r in e.firstRecord...e.lastRecord { out.append(RecordReference(sfi: e.sfi, record: r)) }
        }
        return out
    }
}

/// One record to read: record number of a short file.
public struct RecordReference: Hashable, Sendable, CustomStringConvertible {
    public var sfi: UInt8
    public var record: UInt8
    public init(sfi: UInt8, record: UInt8) { self.sfi = sfi; self.record = record }
    public var step: KernelStep { .readRecord(record: record, sfi: sfi) }
    public var description: String { "record \(record)/SFI \(sfi)" }
}

// MARK: - GET PROCESSING OPTIONS

/// A GPO answer, either format.
struct ProcessingOptions {
    var aip: [UInt8]
    var afl: [AFLEntry]
    /// The objects for the card data: format 1's AIP and AFL as 82 and 94, or format 2's template,
    /// whose primitive objects ``CardDataStore/add(_:step:)`` takes in document order.
    var objects: [TLV]
}

/// Parses a GPO answer: format 1 (80: AIP + AFL) or format 2 (77 with 82, 94 and more).
func parseProcessingOptions(_ data: [UInt8]) throws(KernelError) -> ProcessingOptions {
    let first = try parseOneTemplate(data, step: .gpo, what: "the GPO answer")
    switch first.tag {
    case .responseMessageTemplateFormat1:
        let v = first.valueBytes
        guard v.count >= 2 else {
            throw KernelError(.malformedResponse, step: .gpo, "the format 1 GPO answer has \(v.count) byte(s); the AIP alone is 2")
        }
        let aip = Array(v[0..<2])
        let afl = try AFLEntry.parse(Array(v[2...]))
        return ProcessingOptions(aip: aip, afl: afl,
                                 objects: [TLV(tag: .applicationInterchangeProfile, value: aip),
                                           TLV(tag: .applicationFileLocator, value: v[2...])])
    case .responseMessageTemplateFormat2:
        guard let aip = first.child(.applicationInterchangeProfile) else {
            throw KernelError(.missingMandatoryData, step: .gpo, "the GPO answer has no application interchange profile 82")
        }
        guard aip.value.count == 2 else {
            throw KernelError(.malformedResponse, step: .gpo, "the AIP 82 is \(aip.value.count) byte(s), not 2")
        }
        let afl: [AFLEntry]
        if let a = first.child(.applicationFileLocator) {
            afl = try AFLEntry.parse(a.valueBytes)
        } else if first.child(.applicationCryptogram) != nil {
            afl = []   // everything came in the GPO answer; no records to read
        } else {
            throw KernelError(.missingMandatoryData, step: .gpo,
                              "the GPO answer has neither an application file locator 94 nor a cryptogram 9F26")
        }
        return ProcessingOptions(aip: aip.valueBytes, afl: afl, objects: [first])
    default:
        throw KernelError(.malformedResponse, step: .gpo, "the GPO answer is template \(first.tag.hex), not 80 or 77")
    }
}

// MARK: - GENERATE AC

/// Parses a GENERATE AC answer into objects for the card data: format 1 (80: CID, ATC, AC, IAD)
/// is turned into 9F27, 9F36, 9F26 and 9F10; format 2 (77) must hold 9F27, 9F36 and 9F26, and is
/// given as its template (whose primitive objects ``CardDataStore/add(_:step:)`` takes).
/// `cda`: CDA was asked for, so a format 2 answer may hold the signature 9F4B instead of the AC.
func parseGenerateAC(_ data: [UInt8], cda: Bool = false) throws(KernelError) -> [TLV] {
    let first = try parseOneTemplate(data, step: .generateAC, what: "the GENERATE AC answer")
    switch first.tag {
    case .responseMessageTemplateFormat1:
        let v = first.valueBytes
        guard v.count >= 11 else {
            throw KernelError(.malformedResponse, step: .generateAC,
                              "the format 1 GENERATE AC answer has \(v.count) byte(s); CID, ATC and AC need 11")
        }
        var out = [TLV(tag: .cryptogramInformationData, value: v[0..<1]),
                   TLV(tag: .applicationTransactionCounter, value: v[1..<3]),
                   TLV(tag: .applicationCryptogram, value: v[3..<11])]
        if v.count > 11 { out.append(TLV(tag: .issuerApplicationData, value: v[11...])) }
        return out
    case .responseMessageTemplateFormat2:
        let signed = cda && first.child(.signedDynamicApplicationData) != nil
        for tag in [Tag.cryptogramInformationData, .applicationTransactionCounter, .applicationCryptogram]
        where first.child(tag) == nil && !(signed && tag == .applicationCryptogram) {
            throw KernelError(.missingMandatoryData, step: .generateAC, "the GENERATE AC answer has no \(tag.hex)")
        }
        return [first]
    default:
        throw KernelError(.malformedResponse, step: .generateAC,
                          "the GENERATE AC answer is template \(first.tag.hex), not 80 or 77")
    }
}

// MARK: - The card's data objects

/// The primitive data objects the card gave, in order, at most one value per tag.
public struct CardDataStore: Hashable, Sendable, CustomReflectable {
    /// The objects' tags and values, in order. A card gives a few dozen objects: a scan of their
    /// 4-byte tags is cheaper than hashing, and the values are handed out as they are.
    private(set) var tags: [Tag] = []
    private(set) var values: [[UInt8]] = []

    public init() {}

    /// The objects as TLVs (built when asked: a read asks once, at its end).
    public var objects: [TLV] {
        var out: [TLV] = []
        out.reserveCapacity(tags.count)
        for (tag, value) in zip(tags, values) { out.append(TLV(tag: tag, value: value)) }
        return out
    }

    /// How many objects the store holds.
    var count: Int { tags.count }

    /// The objects, tags and values, as a store that kept all three showed them.
    public var customMirror: Mirror {
        Mirror(self, children: ["objects": objects, "tags": tags, "values": values], displayStyle: .struct)
    }

    public subscript(_ tag: Tag) -> [UInt8]? {
        guard let i = position(of: tag) else { return nil }
        return values[i]
    }

    public func contains(_ tag: Tag) -> Bool { position(of: tag) != nil }

    private func position(of tag: Tag) -> Int? {
        tags.withUnsafeBufferPointer { p in
            for i in p.indices where p[i] == tag { return i }
            return nil
        }
    }

    /// Drops the objects added after the first `count` (undoes the adds since then).
    mutating func truncate(to count: Int) {
        tags.removeSubrange(count...)
        values.removeSubrange(count...)
    }

    /// Adds every primitive object of `tlvs` (constructed ones are opened). A data object the
    /// card already gave with another value is `inconsistentData` (EMV Book 3 §7.5); the same
    /// value twice is tolerated.
    mutating func add(_ tlvs: [TLV], step: KernelStep) throws(KernelError) {
        // Depth first in document order, as `flattened` walks, without building that list.
        for o in tlvs {
            if o.isConstructed {
                try add(o.children, step: step)
                continue
            }
            if let i = position(of: o.tag) {
                guard values[i].elementsEqual(o.value) else {
                    throw KernelError(.inconsistentData, step: step,
                                      "the card gave data object \(o.tag.hex) twice with different values")
                }
                continue
            }
            if tags.isEmpty {
                // A card gives a few dozen objects: no regrowing on the way.
                tags.reserveCapacity(48)
                values.reserveCapacity(48)
            }
            tags.append(o.tag)
            values.append(o.valueBytes)
        }
    }
}
