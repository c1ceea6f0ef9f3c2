import BERTLV
import ISO7816
import Synchronization

/// The terminal's data objects for one transaction: what PDOL and CDOL1 are filled from, and what
/// goes with the cryptogram to the acquirer.
enum TerminalData {
    static func make(configuration c: TerminalConfiguration, transaction t: Transaction,
                     dateTime: TransactionDateTime, unpredictableNumber: UInt32) -> TerminalValues {
        let shared = transactionValues(c, t)
        var d = TerminalValues(shared: shared)
        let (date, time) = dateAndTime(dateTime)
        // In the order the terminal's objects have always been listed in; type, TTQ and TVR are
        // the shared arrays.
        d.append(contentsOf: [
            .transactionDate: date,
            .transactionTime: time,
            .transactionType: shared.transactionType,
            .unpredictableNumber: withUnsafeBytes(of: unpredictableNumber.bigEndian, Array.init),
            .terminalTransactionQualifiers: shared.terminalTransactionQualifiers,
            .terminalVerificationResults: shared.terminalVerificationResults,
        ])
        return d
    }

    /// The last date and time and their BCD (9A, 9F21): reads come many to the second.
    private static let lastDateTime = Mutex<(dateTime: TransactionDateTime, date: [UInt8], time: [UInt8])?>(nil)

    static func dateAndTime(_ dateTime: TransactionDateTime) -> (date: [UInt8], time: [UInt8]) {
        if let hit = lastDateTime.withLock({ last in
            last?.dateTime == dateTime ? (last!.date, last!.time) : nil
        }) {
            return hit
        }
        let date = dateTime.dateBCD, time = dateTime.timeBCD
        lastDateTime.withLock { $0 = (dateTime, date, time) }
        return (date, time)
    }

    /// Data objects shared by the transactions of one configuration and transaction (amount,
    /// type), built once for a run of them: a terminal reads card after card with one
    /// configuration, and often one amount. Held by reference, so a kernel copies none of them.
    final class SharedValues: Sendable {
        let configuration: TerminalConfiguration
        /// The transaction, or nil for the configuration's own values.
        let transaction: Transaction?
        let tags: [Tag]
        let values: [[UInt8]]
        /// Objects of the transaction that each kernel lists after the date and time (shared arrays).
        let transactionType: [UInt8], terminalTransactionQualifiers: [UInt8], terminalVerificationResults: [UInt8]

        /// The raw tags sorted, each with its position in `tags`: looked up by binary search.
        let sorted: [(tag: UInt32, position: Int)]

        init(configuration: TerminalConfiguration, transaction: Transaction?, tags: [Tag], values: [[UInt8]],
             transactionType: [UInt8] = [], terminalTransactionQualifiers: [UInt8] = [],
             terminalVerificationResults: [UInt8] = []) {
            self.configuration = configuration
            self.transaction = transaction
            self.tags = tags
            self.values = values
            self.transactionType = transactionType
            self.terminalTransactionQualifiers = terminalTransactionQualifiers
            self.terminalVerificationResults = terminalVerificationResults
            self.sorted = tags.indices.map { (tags[$0].rawValue, $0) }.sorted { $0.tag < $1.tag }
        }

        /// The position of `tag` in `tags`, or nil.
        func position(of tag: Tag) -> Int? {
            sorted.withUnsafeBufferPointer { p in
                var low = 0, high = p.count
                while low < high {
                    let mid = (low + high) / 2
                    if p[mid].tag < tag.rawValue { low = mid + 1 } else { high = mid }
                }
                return low < p.count && p[low].tag == tag.rawValue ? p[low].position : nil
            }
        }
    }

    /// The last configuration's own data objects, and the last transaction's (with them).
    private static let lastConfiguration = Mutex<SharedValues?>(nil)
    private static let lastTransaction = Mutex<SharedValues?>(nil)

    /// The data objects that depend on the configuration and the transaction alone.
    static func transactionValues(_ c: TerminalConfiguration, _ t: Transaction) -> SharedValues {
        if let last = lastTransaction.withLock({ $0 }), last.transaction == t, last.configuration == c {
            return last
        }
        var ttq = c.terminalTransactionQualifiers
        // Entry Point sets "CVM required" at or above the reader CVM required limit (Book A §5.2.2).
        if t.amount >= c.cvmRequiredLimit { ttq[1] |= 0x40 }
        var tvr: [UInt8] = [0x80, 0, 0, 0, 0]                     // offline data authentication not performed
        if t.amount > c.floorLimit { tvr[3] |= 0x80 }             // transaction exceeds floor limit
        var d = TerminalValues(shared: configurationValues(c))
        d.append(contentsOf: [
            .amountAuthorised: BCD.encodeNumeric(t.amount, length: 6),
            .amountOther: BCD.encodeNumeric(t.otherAmount, length: 6),
            .amountAuthorisedBinary: withUnsafeBytes(of: UInt32(clamping: t.amount).bigEndian, Array.init),
            Tag(0x9F04): withUnsafeBytes(of: UInt32(clamping: t.otherAmount).bigEndian, Array.init),
        ])
        let (tags, values) = d.flattened
        let shared = SharedValues(configuration: c, transaction: t, tags: tags, values: values,
                                  transactionType: [t.type.rawValue], terminalTransactionQualifiers: ttq,
                                  terminalVerificationResults: tvr)
        lastTransaction.withLock { $0 = shared }
        return shared
    }

    /// The data objects that depend on the configuration alone.
    static func configurationValues(_ c: TerminalConfiguration) -> SharedValues {
        if let last = lastConfiguration.withLock({ $0 }), last.configuration == c {
            return last
        }
        func ascii(_ s: String, _ n: Int) -> [UInt8] {
            let bytes = Array(s.utf8.prefix(n))
            return bytes + Array(repeating: 0x20, count: n - bytes.count)
        }
        var d = TerminalValues()
        d.append(contentsOf: [
            .terminalCountryCode: BCD.encodeNumeric(UInt64(c.countryCode), length: 2),
            .transactionCurrencyCode: BCD.encodeNumeric(UInt64(c.currencyCode), length: 2),
            .transactionCurrencyExponent: BCD.encodeNumeric(UInt64(c.currencyExponent), length: 1),
            .terminalCapabilities: c.terminalCapabilities,
            .additionalTerminalCapabilities: c.additionalTerminalCapabilities,
            .terminalType: [c.terminalType],
            .terminalFloorLimit: withUnsafeBytes(of: UInt32(clamping: c.floorLimit).bigEndian, Array.init),
            .merchantCategoryCode: BCD.encodeNumeric(UInt64(c.merchantCategoryCode), length: 2),
            .merchantIdentifier: ascii(c.merchantIdentifier, 15),
            .terminalIdentification: ascii(c.terminalIdentification, 8),
            .merchantNameAndLocation: Array(c.merchantNameAndLocation.utf8),
            .acquirerIdentifier: BCD.encodeNumeric(digits: c.acquirerIdentifier, length: 6),
            .interfaceDeviceSerialNumber: ascii(c.interfaceDeviceSerialNumber, 8),
            .applicationVersionNumberTerminal: c.applicationVersionNumber,
            .posEntryMode: BCD.encodeNumeric(UInt64(c.posEntryMode), length: 1),
            Tag(0x9F53): [c.transactionCategoryCode],           // transaction category code
            .cvmResults: [0x3F, 0x00, 0x00],                   // until CVM processing decides
            // The terminal's own transaction sequence counter is the payment flow's business;
            // the card only needs a value of the right shape.
            .transactionSequenceCounter: BCD.encodeNumeric(1, length: 4),
        ])
        let (tags, values) = d.flattened
        let shared = SharedValues(configuration: c, transaction: nil, tags: tags, values: values)
        lastConfiguration.withLock { $0 = shared }
        return shared
    }

    /// Terminal data objects that always go with an online authorisation; others go only when the
    /// card asked for them in its PDOL or CDOL1.
    static let alwaysOnline: Set<Tag> = [
        .unpredictableNumber, .terminalVerificationResults, .transactionDate, .transactionType,
        .amountAuthorised, .transactionCurrencyCode, .terminalCountryCode, .cvmResults, .terminalCapabilities,
        .terminalType, .amountOther,
    ]

    /// The online data objects in the customary field 55 order, each with whether the terminal's
    /// value goes even when the card did not ask for it (``alwaysOnline``).
    static let onlineOrder: [(tag: Tag, always: Bool)] = [
        .applicationCryptogram, .cryptogramInformationData, .issuerApplicationData, .unpredictableNumber,
        .applicationTransactionCounter, .terminalVerificationResults, .transactionDate, .transactionType,
        .amountAuthorised, .transactionCurrencyCode, .applicationInterchangeProfile, .terminalCountryCode,
        .cvmResults, .terminalCapabilities, .terminalType, .amountOther, .dedicatedFileName,
        .panSequenceNumber, .formFactorIndicator, .terminalTransactionQualifiers, .cardTransactionQualifiers,
        .applicationVersionNumberICC, .applicationVersionNumberTerminal, .interfaceDeviceSerialNumber,
        .transactionTime, .transactionSequenceCounter, Tag(0x9F53), .customerExclusiveData,
        .cardAuthenticationRelatedData, Tag(0x9F24), Tag(0x9F19), Tag(0x9F25),
    ].map { (tag: $0, always: alwaysOnline.contains($0)) }

    /// The data objects for online authorisation, in the customary field 55 order, from the card
    /// (`store`), the selected application's DF name, and the terminal. Never the PAN or track 2.
    /// `requested`: the tags of the card's PDOL and CDOL1 (a short list, scanned).
    static func onlineData(store: CardDataStore, dfName: [UInt8], terminal: TerminalValues, cid: UInt8,
                           requested: [Tag]) -> [TLV] {
        let order = onlineOrder, slots = onlineSlots
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: order.count) { found in
            // Where the store holds each online tag: one pass over the store (its tags are unique).
            found.initialize(repeating: -1)
            store.tags.withUnsafeBufferPointer { tags in
                for i in tags.indices {
                    if let slot = slot(of: tags[i], in: slots) { found[slot] = i }
                }
            }
            var out: [TLV] = []
            out.reserveCapacity(order.count)
            for slot in order.indices {
                let (tag, always) = order[slot]
                if tag == .dedicatedFileName {
                    out.append(TLV(tag: tag, value: dfName))
                } else if found[slot] >= 0 {
                    out.append(TLV(tag: tag, value: store.values[found[slot]]))
                } else if tag == .cryptogramInformationData {
                    out.append(TLV(tag: tag, value: [cid]))
                } else if always || requested.contains(tag), let v = terminal[tag] {
                    out.append(TLV(tag: tag, value: v))
                }
            }
            found.deinitialize()
            return out
        }
    }

    /// The online tags sorted, each with its place in ``onlineOrder``.
    static let onlineSlots: [(tag: UInt32, slot: Int)] =
        onlineOrder.indices.map { (onlineOrder[$0].tag.rawValue, $0) }.sorted { $0.tag < $1.tag }

    /// The place of `tag` in ``onlineOrder`` (a binary search of `slots`), or nil.
    static func slot(of tag: Tag, in slots: [(tag: UInt32, slot: Int)]) -> Int? {
        var low = 0, high = slots.count
        while low < high {
            let mid = (low + high) / 2
            if slots[mid].tag < tag.rawValue { low = mid + 1 } else { high = mid }
        }
        return low < slots.count && slots[low].tag == tag.rawValue ? slots[low].slot : nil
    }
}

/// The terminal's data objects for one transaction, tag by tag: the values shared with other
/// transactions (``TerminalData/SharedValues``, held by reference) and this transaction's own,
/// which come first. About thirty: a scan of their tags is cheaper than a dictionary's hashing.
struct TerminalValues: Sendable, CustomReflectable {
    private var shared: TerminalData.SharedValues?
    /// This transaction's objects, and the shared ones it changed.
    private var tags: [Tag] = []
    private var values: [[UInt8]] = []

    init() {}

    init(shared: TerminalData.SharedValues) { self.shared = shared }

    /// Adds tags not held yet and their values (a dictionary literal's shape).
    mutating func append(contentsOf pairs: KeyValuePairs<Tag, [UInt8]>) {
        tags.reserveCapacity(tags.count + pairs.count + 4)
        values.reserveCapacity(values.count + pairs.count + 4)
        for (tag, value) in pairs {
            precondition(self[tag] == nil, "terminal data object \(tag.hex) given twice")
            tags.append(tag)
            values.append(value)
        }
    }

    private static func position(of tag: Tag, in tags: [Tag]) -> Int? {
        tags.withUnsafeBufferPointer { p in
            for i in p.indices where p[i] == tag { return i }
            return nil
        }
    }

    subscript(_ tag: Tag) -> [UInt8]? {
        get {
            if let i = Self.position(of: tag, in: tags) { return values[i] }
            guard let shared, let i = shared.position(of: tag) else { return nil }
            return shared.values[i]
        }
        set {
            if let i = Self.position(of: tag, in: tags) {
                if let newValue {
                    values[i] = newValue
                    return
                }
                tags.remove(at: i)
                values.remove(at: i)
            }
            if let shared, shared.position(of: tag) != nil {
                guard let newValue else {
                    // Removing a shared object: this transaction takes its own copy of them all.
                    (tags, values) = flattened
                    self.shared = nil
                    self[tag] = nil
                    return
                }
                tags.append(tag)   // shadows the shared value
                values.append(newValue)
            } else if let newValue {
                tags.append(tag)
                values.append(newValue)
            }
        }
    }

    /// Every tag once with its value: the shared ones (as changed here), then this transaction's own.
    var flattened: (tags: [Tag], values: [[UInt8]]) {
        guard let shared else { return (tags, values) }
        var outTags: [Tag] = [], outValues: [[UInt8]] = []
        outTags.reserveCapacity(shared.tags.count + tags.count)
        outValues.reserveCapacity(shared.tags.count + tags.count)
        for (tag, value) in zip(shared.tags, shared.values) {
            outTags.append(tag)
            outValues.append(Self.position(of: tag, in: tags).map { values[$0] } ?? value)
        }
        for (tag, value) in zip(tags, values) where Self.position(of: tag, in: shared.tags) == nil {
            outTags.append(tag)
            outValues.append(value)
        }
        return (outTags, outValues)
    }

    /// Its tags and values in one list each, as the kernel held them before they were shared.
    var customMirror: Mirror {
        let (tags, values) = flattened
        return Mirror(self, children: ["tags": tags, "values": values], displayStyle: .struct)
    }

    /// As a dictionary (the kernel's public ``EMVKernel/terminalData``).
    var dictionary: [Tag: [UInt8]] {
        let (tags, values) = flattened
        return Dictionary(uniqueKeysWithValues: zip(tags, values))
    }
}
