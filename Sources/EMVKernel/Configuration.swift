import BERTLV
public import PaymentRules
public import Foundation
import Synchronization

/// An application the terminal accepts, as an AID (or the prefix of AIDs, with partial matching).
public struct SupportedApplication: Hashable, Sendable {
    /// The terminal's AID: RID (5 bytes) + PIX.
    public var aid: [UInt8]
    /// Whether a card AID that starts with ``aid`` and is longer also matches (EMV Book 1
    /// §12.3.1, Application Selection Indicator).
    public var allowsPartialMatch: Bool

    public init(aid: [UInt8], allowsPartialMatch: Bool = true) {
        precondition((5...16).contains(aid.count), "an AID is 5 to 16 bytes")
        self.aid = aid
        self.allowsPartialMatch = allowsPartialMatch
    }

    /// Whether the card's ADF name matches this terminal AID.
    public func matches(_ adfName: [UInt8]) -> Bool {
        if adfName == aid { return true }
        return allowsPartialMatch && adfName.count > aid.count && adfName.starts(with: aid)
    }

    public static let visa = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x00, 0x03, 0x10, 0x10])
    public static let visaElectron = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x00, 0x03, 0x20, 0x10])
    public static let vPay = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x00, 0x03, 0x20, 0x20])
    public static let mastercard = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x00, 0x04, 0x10, 0x10])
    public static let maestro = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x00, 0x04, 0x30, 0x60])
    public static let amex = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x00, 0x25, 0x01])
    public static let discover = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x01, 0x52, 0x30, 0x10])
    public static let jcb = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x00, 0x65, 0x10, 0x10])
    public static let unionPayDebit = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x03, 0x33, 0x01, 0x01, 0x01])
    public static let unionPayCredit = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x03, 0x33, 0x01, 0x01, 0x02])
    public static let unionPayQuasiCredit = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x03, 0x33, 0x01, 0x01, 0x03])
    public static let interac = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x02, 0x77, 0x10, 0x10])
    public static let cartesBancaires = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x00, 0x42, 0x10, 0x10])
    public static let girocard = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x03, 0x59, 0x10, 0x10, 0x02, 0x80, 0x01])
    /// Discover Common Debit (US debit, D-PAS).
    public static let discoverCommonDebit = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x01, 0x52, 0x40, 0x10])
    /// eftpos (Australia): savings and cheque accounts share the prefix.
    public static let eftpos = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x03, 0x84, 0x10])
    public static let rupay = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x05, 0x24, 0x10, 0x10])
    public static let mir = SupportedApplication(aid: [0xA0, 0x00, 0x00, 0x06, 0x58, 0x10, 0x10])

    /// Every application tapemu's terminal accepts by default, in the order the list-of-AIDs
    /// fallback tries them.
    public static let defaults: [SupportedApplication] = [
        .visa, .visaElectron, .vPay, .mastercard, .maestro, .amex, .discover, .jcb,
        .unionPayDebit, .unionPayCredit, .unionPayQuasiCredit, .interac, .cartesBancaires, .girocard,
        .discoverCommonDebit, .eftpos, .rupay, .mir,
    ]
}

/// What the terminal is and can do: the data a card asks for in its PDOL and CDOL1 that does not
/// depend on the transaction.
///
/// Numeric codes are held as numbers and written as the BCD (format n) the card expects.
public struct TerminalConfiguration: Hashable, Sendable {
    /// AIDs the terminal accepts, in list-of-AIDs order.
    public var supportedApplications: [SupportedApplication]
    /// Terminal country code, ISO 3166-1 numeric (9F1A); 724 is Spain.
    public var countryCode: UInt16
    /// Transaction currency code, ISO 4217 numeric (5F2A); 978 is the euro.
    public var currencyCode: UInt16
    /// Transaction currency exponent (5F36): digits after the decimal point.
    public var currencyExponent: UInt8
    /// Terminal transaction qualifiers (9F66), 4 bytes, as configured. The kernel sets "CVM
    /// required" (byte 2 bit 7) itself when the amount is above ``cvmRequiredLimit``.
    public var terminalTransactionQualifiers: [UInt8]
    /// Terminal capabilities (9F33), 3 bytes: card input, CVM capability, security capability.
    public var terminalCapabilities: [UInt8]
    /// Additional terminal capabilities (9F40), 5 bytes.
    public var additionalTerminalCapabilities: [UInt8]
    /// Terminal type (9F35), e.g. `0x22`: attended, merchant, offline with online capability.
    public var terminalType: UInt8
    /// Terminal floor limit in minor units (9F1B). Above it, TVR "exceeds floor limit" is set.
    public var floorLimit: UInt64
    /// Reader CVM required limit in minor units: from it on (C-2: above it), a cardholder
    /// verification is required. ``cvmRequiredLimits`` may set another per kernel.
    public var cvmRequiredLimit: UInt64
    /// Reader CVM required limits of particular kernels (kernel number → minor units), for the
    /// schemes whose limit differs from ``cvmRequiredLimit``.
    public var cvmRequiredLimits: [UInt8: UInt64]
    /// The methods the reader offers when a CVM is required, as terminal capabilities byte 2
    /// (9F33): "CVM Capability – CVM Required" (Book C-2, DF8118). Default: byte 2 of
    /// ``terminalCapabilities`` without "no CVM required".
    public var cvmCapabilityCVMRequired: UInt8
    /// The methods the reader offers when no CVM is required: "CVM Capability – No CVM Required"
    /// (Book C-2, DF8119). Default: no CVM required only.
    public var cvmCapabilityNoCVMRequired: UInt8
    /// Merchant category code (9F15), 4 digits.
    public var merchantCategoryCode: UInt16
    /// Merchant identifier (9F16), up to 15 characters.
    public var merchantIdentifier: String
    /// Terminal identification (9F1C), 8 characters.
    public var terminalIdentification: String
    /// Merchant name and location (9F4E).
    public var merchantNameAndLocation: String
    /// Acquirer identifier (9F01), 6 to 11 digits.
    public var acquirerIdentifier: String
    /// Interface device serial number (9F1E), 8 characters.
    public var interfaceDeviceSerialNumber: String
    /// Application version number, terminal (9F09), 2 bytes.
    public var applicationVersionNumber: [UInt8]
    /// Point-of-service entry mode (9F39): `0x07` contactless chip.
    public var posEntryMode: UInt8
    /// Transaction category code (9F53, Mastercard), an ASCII letter: `R` retail.
    public var transactionCategoryCode: UInt8
    /// The CA public keys offline data authentication opens issuer certificates with: the schemes'
    /// published keys and tapemu's test CA, plus any `--ca-keys` file.
    public var caPublicKeys: CAPublicKeyList = .builtIn
    /// The DDOL DDA uses when the card has none (9F49 absent; Book 3 §10.3.2): the unpredictable
    /// number.
    public var defaultDDOL: [UInt8] = [0x9F, 0x37, 0x04]
    /// Issuer certificates the terminal refuses (a `--crl` file).
    public var revocationList: CertificateRevocationList = .empty

    public init(supportedApplications: [SupportedApplication] = SupportedApplication.defaults,
                countryCode: UInt16 = 724, currencyCode: UInt16 = 978, currencyExponent: UInt8 = 2,
                terminalTransactionQualifiers: [UInt8] = [0x24, 0x80, 0x40, 0x00],
                terminalCapabilities: [UInt8] = [0xE0, 0x48, 0x08],
                additionalTerminalCapabilities: [UInt8] = [0x60, 0x00, 0xF0, 0xA0, 0x01],
                terminalType: UInt8 = 0x22, floorLimit: UInt64 = 0, cvmRequiredLimit: UInt64 = 5000,
                cvmRequiredLimits: [UInt8: UInt64] = [:], cvmCapabilityCVMRequired: UInt8? = nil,
                cvmCapabilityNoCVMRequired: UInt8 = 0x08,
                merchantCategoryCode: UInt16 = 5999, merchantIdentifier: String = "TAPEMU000000001",
                terminalIdentification: String = "TAPEMU01",
                merchantNameAndLocation: String = "tapemu test merchant, Barcelona ES",
                acquirerIdentifier: String = "000000123456", interfaceDeviceSerialNumber: String = "TPM00001",
                applicationVersionNumber: [UInt8] = [0x00, 0x02], posEntryMode: UInt8 = 0x07,
                transactionCategoryCode: UInt8 = UInt8(ascii: "R")) {
        precondition(terminalTransactionQualifiers.count == 4, "TTQ is 4 bytes")
        precondition(terminalCapabilities.count == 3, "terminal capabilities are 3 bytes")
        precondition(additionalTerminalCapabilities.count == 5, "additional terminal capabilities are 5 bytes")
        precondition(applicationVersionNumber.count == 2, "the application version number is 2 bytes")
        self.supportedApplications = supportedApplications
        self.countryCode = countryCode
        self.currencyCode = currencyCode
        self.currencyExponent = currencyExponent
        self.terminalTransactionQualifiers = terminalTransactionQualifiers
        self.terminalCapabilities = terminalCapabilities
        self.additionalTerminalCapabilities = additionalTerminalCapabilities
        self.terminalType = terminalType
        self.floorLimit = floorLimit
        self.cvmRequiredLimit = cvmRequiredLimit
        self.cvmRequiredLimits = cvmRequiredLimits
        self.cvmCapabilityCVMRequired = cvmCapabilityCVMRequired ?? (terminalCapabilities[1] & ~0x08)
        self.cvmCapabilityNoCVMRequired = cvmCapabilityNoCVMRequired
        self.merchantCategoryCode = merchantCategoryCode
        self.merchantIdentifier = merchantIdentifier
        self.terminalIdentification = terminalIdentification
        self.merchantNameAndLocation = merchantNameAndLocation
        self.acquirerIdentifier = acquirerIdentifier
        self.interfaceDeviceSerialNumber = interfaceDeviceSerialNumber
        self.applicationVersionNumber = applicationVersionNumber
        self.posEntryMode = posEntryMode
        self.transactionCategoryCode = transactionCategoryCode
    }

    /// tapemu's terminal: a Spanish merchant taking euros, online PIN and no-CVM, CVM limit 50.00.
    public static let `default` = TerminalConfiguration()

    /// The reader CVM required limit for `kernel`.
    public func cvmRequiredLimit(for kernel: ContactlessKernel) -> UInt64 {
        cvmRequiredLimits[kernel.id] ?? cvmRequiredLimit
    }

    /// The terminal can take an online PIN (9F33 byte 2 bit 7).
    public var supportsOnlinePIN: Bool { terminalCapabilities[1] & 0x40 != 0 }
    /// The terminal can take a signature (9F33 byte 2 bit 6).
    public var supportsSignature: Bool { terminalCapabilities[1] & 0x20 != 0 }
    /// The terminal may go ahead without CVM (9F33 byte 2 bit 4).
    public var supportsNoCVM: Bool { terminalCapabilities[1] & 0x08 != 0 }
    /// The reader accepts a consumer device CVM (TTQ byte 3 bit 7).
    public var supportsConsumerDeviceCVM: Bool { terminalTransactionQualifiers[2] & 0x40 != 0 }
}

/// The kind of transaction (9C), as its two BCD digits.
public enum TransactionType: UInt8, Hashable, Sendable, CaseIterable {
    case purchase = 0x00
    case cashAdvance = 0x01
    case purchaseWithCashback = 0x09
    case refund = 0x20
}

/// A local date and time, as the terminal writes 9A (YYMMDD) and 9F21 (HHMMSS).
public struct TransactionDateTime: Hashable, Sendable {
    public var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int

    public init(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) {
        precondition((2000...2099).contains(year) && (1...12).contains(month) && (1...31).contains(day)
                     && (0...23).contains(hour) && (0...59).contains(minute) && (0...60).contains(second),
                     "date or time out of range")
        self.year = year; self.month = month; self.day = day
        self.hour = hour; self.minute = minute; self.second = second
    }

    /// The date and time of `date` in `timeZone`.
    public init(_ date: Date, timeZone: TimeZone = .current) {
        // Reads come many to the second: the calendar works once per whole second and zone.
        let second = date.timeIntervalSinceReferenceDate.rounded(.down)
        if let hit = Self.lastConversion.withLock({ last in
            last?.second == second && last?.timeZone == timeZone ? last?.value : nil
        }) {
            self = hit
            return
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        self.init(year: min(max(c.year ?? 2000, 2000), 2099), month: c.month ?? 1, day: c.day ?? 1,
                  hour: c.hour ?? 0, minute: c.minute ?? 0, second: min(c.second ?? 0, 59))
        let value = self
        Self.lastConversion.withLock { $0 = (second, timeZone, value) }
    }

    /// The last whole second converted, its zone and its date and time.
    private static let lastConversion = Mutex<(second: Double, timeZone: TimeZone, value: TransactionDateTime)?>(nil)

    /// The date of 9A (YYMMDD in BCD) and the time of 9F21 (HHMMSS in BCD, midnight when nil),
    /// as a terminal wrote them; nil for bytes that are not such a date or time (outside input:
    /// a trace's).
    public init?(dateBCD date: [UInt8], timeBCD time: [UInt8]?) {
        func fields(_ bytes: [UInt8]) -> [Int]? {
            guard bytes.count == 3 else { return nil }
            var out: [Int] = []
            for b in bytes {
                guard b >> 4 <= 9, b & 0x0F <= 9 else { return nil }
                out.append(Int(b >> 4) * 10 + Int(b & 0x0F))
            }
            return out
        }
        guard let d = fields(date) else { return nil }
        let t = time.map(fields) ?? [0, 0, 0]
        guard let t, (1...12).contains(d[1]), (1...31).contains(d[2]),
              t[0] <= 23, t[1] <= 59, t[2] <= 60 else { return nil }
        self.init(year: 2000 + d[0], month: d[1], day: d[2], hour: t[0], minute: t[1], second: t[2])
    }

    /// 9A: YYMMDD in BCD.
    public var dateBCD: [UInt8] {
        BCD.encodeNumeric(UInt64((year % 100) * 10_000 + month * 100 + day), length: 3)
    }
    /// 9F21: HHMMSS in BCD.
    public var timeBCD: [UInt8] {
        BCD.encodeNumeric(UInt64(hour * 10_000 + minute * 100 + second), length: 3)
    }
}

/// One payment as the terminal sees it.
public struct Transaction: Hashable, Sendable {
    /// Amount, authorised (9F02), in minor units of the terminal's currency.
    public var amount: UInt64
    /// Amount, other (9F03): cashback, in minor units.
    public var otherAmount: UInt64
    public var type: TransactionType

    public init(amount: UInt64, otherAmount: UInt64 = 0, type: TransactionType = .purchase) {
        precondition(amount <= EMVAmount.maximum && otherAmount <= EMVAmount.maximum, "amount beyond 12 digits")
        self.amount = amount
        self.otherAmount = otherAmount
        self.type = type
    }
}

/// What the kernel takes from the world: the time and fresh randomness. Injectable, so tests and
/// trace replays are deterministic.
public struct KernelEnvironment: Sendable {
    /// The transaction's local date and time.
    public var now: @Sendable () -> TransactionDateTime
    /// A fresh unpredictable number (9F37) for each transaction.
    public var unpredictableNumber: @Sendable () -> UInt32

    public init(now: @escaping @Sendable () -> TransactionDateTime,
                unpredictableNumber: @escaping @Sendable () -> UInt32) {
        self.now = now
        self.unpredictableNumber = unpredictableNumber
    }

    /// The system clock (local time) and the system's secure random source (`arc4random_buf`,
    /// which glibc seeds from `getrandom`).
    public static var system: KernelEnvironment {
        KernelEnvironment(now: { TransactionDateTime(Date()) }, unpredictableNumber: { systemRandom() })
    }

    /// Unpredictable numbers from the system's random source, drawn 64 at a time: one system
    /// call serves 64 reads. Each is handed out once.
    private static let randomPool = Mutex<(numbers: [UInt32], next: Int)>(([], 0))

    static func systemRandom() -> UInt32 {
        randomPool.withLock { pool in
            if pool.next == pool.numbers.count {
                if pool.numbers.isEmpty { pool.numbers = Array(repeating: 0, count: 64) }
                pool.numbers.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
                pool.next = 0
            }
            defer { pool.next += 1 }
            return pool.numbers[pool.next]
        }
    }

    /// The given date, and unpredictable numbers drawn from `generator`.
    public static func fixed<G: RandomNumberGenerator & Sendable>(_ dateTime: TransactionDateTime,
                                                                using generator: G) -> KernelEnvironment {
        let box = GeneratorBox(generator)
        return KernelEnvironment(now: { dateTime }, unpredictableNumber: { box.next() })
    }
}

private final class GeneratorBox<G: RandomNumberGenerator & Sendable>: Sendable {
    private let generator: Mutex<G>
    init(_ g: G) { generator = Mutex(g) }
    func next() -> UInt32 { generator.withLock { UInt32.random(in: .min ... .max, using: &$0) } }
}
