import BERTLV
import ISO7816
import Synchronization

/// The terminal's data objects for one transaction: what PDOL and CDOL1 are filled from, and what
/// goes with the cryptogram to the acquirer.
enum TerminalData {
    static func make(configuration c: TerminalConfiguration, transaction t: Transaction,
                     dateTime: TransactionDateTime, unpredictableNumber: UInt32) -> TerminalValues {
        var ttq = c.terminalTransactionQualifiers
        if t.amount > c.cvmRequiredLimit { ttq[1] |= 0x40 }       // CVM required
        var tvr: [UInt8] = [0x80, 0, 0, 0, 0]                     // offline data authentication not performed
        if t.amount > c.floorLimit { tvr[3] |= 0x80 }             // transaction exceeds floor limit
        var d = configurationValues(c)
        d.append(contentsOf: [
            .amountAuthorised: BCD.encodeNumeric(t.amount, length: 6),
            .amountOther: BCD.encodeNumeric(t.otherAmount, length: 6),
            .amountAuthorisedBinary: withUnsafeBytes(of: UInt32(clamping: t.amount).bigEndian, Array.init),
            Tag(0x9F04): withUnsafeBytes(of: UInt32(clamping: t.otherAmount).bigEndian, Array.init),
            .transactionDate: dateTime.dateBCD,
            .transactionTime: dateTime.timeBCD,
            .transactionType: [t.type.rawValue],
            .unpredictableNumber: withUnsafeBytes(of: unpredictableNumber.bigEndian, Array.init),
            .terminalTransactionQualifiers: ttq,
            .terminalVerificationResults: tvr,
        ])
        return d
    }

    /// The last configuration's own data objects: a terminal reads card after card with one
    /// configuration, and these do not change from one transaction to the next.
    private static let lastConfiguration = Mutex<(configuration: TerminalConfiguration, values: TerminalValues)?>(nil)

    /// The data objects that depend on the configuration alone.
    static func configurationValues(_ c: TerminalConfiguration) -> TerminalValues {
        if let hit = lastConfiguration.withLock({ last in last?.configuration == c ? last?.values : nil }) {
            return hit
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
        lastConfiguration.withLock { $0 = (c, d) }
        return d
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
        var out: [TLV] = []
        out.reserveCapacity(onlineOrder.count)
        for (tag, always) in onlineOrder {
            if tag == .dedicatedFileName {
                out.append(TLV(tag: tag, value: dfName))
            } else if let v = store[tag] {
                out.append(TLV(tag: tag, value: v))
            } else if tag == .cryptogramInformationData {
                out.append(TLV(tag: tag, value: [cid]))
            } else if always || requested.contains(tag), let v = terminal[tag] {
                out.append(TLV(tag: tag, value: v))
            }
        }
        return out
    }
}

/// The terminal's data objects for one transaction, tag by tag. About thirty: a scan of their
/// tags is cheaper than a dictionary's hashing, and building it allocates two arrays.
struct TerminalValues: Sendable {
    private var tags: [Tag] = []
    private var values: [[UInt8]] = []

    init() {}

    /// Adds tags not held yet and their values (a dictionary literal's shape).
    mutating func append(contentsOf pairs: KeyValuePairs<Tag, [UInt8]>) {
        tags.reserveCapacity(tags.count + pairs.count + 4)
        values.reserveCapacity(values.count + pairs.count + 4)
        for (tag, value) in pairs {
            precondition(position(of: tag) == nil, "terminal data object \(tag.hex) given twice")
            tags.append(tag)
            values.append(value)
        }
    }

    private func position(of tag: Tag) -> Int? {
        tags.withUnsafeBufferPointer { p in
            for i in p.indices where p[i] == tag { return i }
            return nil
        }
    }

    subscript(_ tag: Tag) -> [UInt8]? {
        get { position(of: tag).map { values[$0] } }
        set {
            if let i = position(of: tag) {
                if let newValue {
                    values[i] = newValue
                } else {
                    tags.remove(at: i)
                    values.remove(at: i)
                }
            } else if let newValue {
                tags.append(tag)
                values.append(newValue)
            }
        }
    }

    /// As a dictionary (the kernel's public ``EMVKernel/terminalData``).
    var dictionary: [Tag: [UInt8]] { Dictionary(uniqueKeysWithValues: zip(tags, values)) }
}

/// Cardholder verification: which CVM the card and the amount call for (EMV Book 3 §10.5, Book C-2
/// and C-3), and the CVM results (9F34) that say so.
enum CVMProcessing {
    struct Decision: Hashable, Sendable {
        var cvm: CardholderVerification
        var results: [UInt8]
    }

    static func decide(store: CardDataStore, aip: [UInt8], configuration c: TerminalConfiguration,
                       transaction t: Transaction) throws(KernelError) -> Decision {
        let required = t.amount > c.cvmRequiredLimit
        if let ctq = store[.cardTransactionQualifiers] {
            guard ctq.count >= 2 else {
                throw KernelError(.malformedResponse, step: .cardData,
                                  "the card transaction qualifiers 9F6C are \(ctq.count) byte(s), not 2")
            }
            return byCTQ(ctq, required: required, c)
        }
        guard required else { return Decision(cvm: .noCVM, results: [0x1F, 0x00, 0x02]) }
        // On-device cardholder verification (AIP byte 1 bit 2), e.g. a phone.
        if aip.count == 2, aip[0] & 0x02 != 0, c.supportsConsumerDeviceCVM {
            return Decision(cvm: .consumerDevice, results: [0x01, 0x00, 0x02])
        }
        guard aip.count == 2, aip[0] & 0x10 != 0, let list = store[.cvmList] else {
            // The card does not support cardholder verification: none is performed.
            return Decision(cvm: .noCVM, results: [0x3F, 0x00, 0x00])
        }
        return try byList(list, store: store, c, t)
    }

    /// Visa-style: the card transaction qualifiers say what the card wants.
    static func byCTQ(_ ctq: [UInt8], required: Bool, _ c: TerminalConfiguration) -> Decision {
        if ctq[0] & 0x80 != 0, c.supportsOnlinePIN { return Decision(cvm: .onlinePIN, results: [0x02, 0x00, 0x00]) }
        if ctq[1] & 0x80 != 0, c.supportsConsumerDeviceCVM {
            return Decision(cvm: .consumerDevice, results: [0x01, 0x00, 0x02])
        }
        if ctq[0] & 0x40 != 0, c.supportsSignature { return Decision(cvm: .signature, results: [0x1E, 0x00, 0x00]) }
        let asked = ctq[0] & 0xC0 != 0 || ctq[1] & 0x80 != 0
        if !asked && !required { return Decision(cvm: .noCVM, results: [0x1F, 0x00, 0x02]) }
        // The reader needs a CVM and the card named none it can do.
        if c.supportsSignature { return Decision(cvm: .signature, results: [0x1E, 0x00, 0x00]) }
        if c.supportsOnlinePIN { return Decision(cvm: .onlinePIN, results: [0x02, 0x00, 0x00]) }
        return Decision(cvm: .failed, results: [0x3F, 0x00, 0x01])
    }

    /// The CVM list (8E): amounts X and Y, then rules of (method, condition) tried in order.
    static func byList(_ list: [UInt8], store: CardDataStore, _ c: TerminalConfiguration,
                       _ t: Transaction) throws(KernelError) -> Decision {
        guard list.count >= 8, list.count % 2 == 0 else {
            throw KernelError(.malformedResponse, step: .cardData,
                              "the CVM list 8E is \(list.count) byte(s); it needs 8 for X and Y, then 2-byte rules")
        }
        func amount(_ at: Int) -> UInt64 { list[at..<(at + 4)].reduce(0) { $0 << 8 | UInt64($1) } }
        let x = amount(0), y = amount(4)
        let appCurrency = store[.applicationCurrencyCode].flatMap { ISOCodes.numericCode(bcd: $0) }
        let sameCurrency = appCurrency == Int(c.currencyCode)
        let unattended = (4...6).contains(c.terminalType & 0x0F)

        func supported(_ method: UInt8) -> CardholderVerification? {
            switch method {
            case 0x02: return c.supportsOnlinePIN ? .onlinePIN : nil
            case 0x1E: return c.supportsSignature ? .signature : nil
            case 0x1F: return c.supportsNoCVM ? .noCVM : nil
            default: return nil   // offline PIN and proprietary methods: not on a contactless reader
            }
        }
        func satisfied(_ condition: UInt8, method: UInt8) -> Bool {
            switch condition {
            case 0x00: return true
            case 0x01: return unattended && t.type == .cashAdvance
            case 0x02: return t.type != .cashAdvance && t.type != .purchaseWithCashback
            case 0x03: return supported(method) != nil
            case 0x04: return !unattended && t.type == .cashAdvance
            case 0x05: return t.type == .purchaseWithCashback
            case 0x06: return sameCurrency && t.amount < x
            case 0x07: return sameCurrency && t.amount > x
            case 0x08: return sameCurrency && t.amount < y
            case 0x09: return sameCurrency && t.amount > y
            default: return false
            }
        }
        for i in stride(from: 8, to: list.count, by: 2) {
            let code = list[i], condition = list[i + 1]
            let method = code & 0x3F
            guard satisfied(condition, method: method) else { continue }
            if method != 0x00, let cvm = supported(method) {
                return Decision(cvm: cvm, results: [code, condition, cvm == .noCVM ? 0x02 : 0x00])
            }
            if code & 0x40 == 0 { return Decision(cvm: .failed, results: [code, condition, 0x01]) }
        }
        return Decision(cvm: .failed, results: [0x3F, 0x00, 0x01])
    }
}
