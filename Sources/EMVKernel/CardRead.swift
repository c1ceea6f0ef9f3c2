public import BERTLV
public import PaymentRules
public import CardChannel
import ISO7816

/// The application the kernel selected.
public struct ApplicationInfo: Hashable, Sendable {
    /// The ADF name (DF name 84 of the FCI).
    public var aid: [UInt8]
    /// Application label (50).
    public var label: String?
    /// Application preferred name (9F12).
    public var preferredName: String?
    /// Priority 1 (highest) ... 15 from the priority indicator (87); nil when absent or 0.
    public var priority: UInt8?
    public var brand: PaymentNetwork
    /// The contactless kernel number: from 9F2A in the PPSE entry, else the brand's; 0 for a
    /// domestic kernel or none (``kernel`` says which).
    public var kernelID: UInt8
    /// The contactless kernel, whose book decides how ambiguous tags and the CVM are read.
    public var kernel: ContactlessKernel
    /// Language preference (5F2D), e.g. `esen`.
    public var languagePreference: String?
    /// Application interchange profile (82), 2 bytes.
    public var applicationInterchangeProfile: [UInt8]

    public init(aid: [UInt8], label: String?, preferredName: String?, priority: UInt8?, brand: PaymentNetwork,
                kernelID: UInt8, languagePreference: String?, applicationInterchangeProfile: [UInt8]) {
        self.aid = aid
        self.label = label
        self.preferredName = preferredName
        self.priority = priority
        self.brand = brand
        self.kernelID = kernelID
        self.kernel = ContactlessKernel(id: kernelID)
        self.languagePreference = languagePreference
        self.applicationInterchangeProfile = applicationInterchangeProfile
    }

    /// The name to show a cardholder: the preferred name, the label, or the brand.
    public var displayName: String { preferredName ?? label ?? brand.displayName }

    public var aidHex: String { Hex.encode(aid) }
}

/// An expiry date, year and month.
public struct Expiry: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var year: Int
    public var month: Int

    public init(year: Int, month: Int) {
        self.year = year
        self.month = month
    }

    /// From `YYMM` digits (track 2); nil when they are not a month.
    public init?(yymm: some StringProtocol) {
        // Four ASCII digits, the usual case (track 2 holds nothing else): read from the UTF-8
        // bytes, no integer parsing of substrings.
        var digits = (0, 0, 0, 0), count = 0
        for b in yymm.utf8 {
            guard count < 4, (0x30...0x39).contains(b) else { count = -1; break }
            switch count {
            case 0: digits.0 = Int(b - 0x30)
            case 1: digits.1 = Int(b - 0x30)
            case 2: digits.2 = Int(b - 0x30)
            default: digits.3 = Int(b - 0x30)
            }
            count += 1
        }
        if count == 4 {
            let mm = digits.2 * 10 + digits.3
            guard (1...12).contains(mm) else { return nil }
            self.init(year: 2000 + digits.0 * 10 + digits.1, month: mm)
            return
        }
        guard yymm.count == 4, let yy = Int(yymm.prefix(2)), let mm = Int(yymm.suffix(2)),
              (1...12).contains(mm) else { return nil }
        self.init(year: 2000 + yy, month: mm)
    }

    /// `2027-12`.
    public var description: String {
        "\(year)-\(month < 10 ? "0" : "")\(month)"
    }

    public static func < (a: Expiry, b: Expiry) -> Bool { (a.year, a.month) < (b.year, b.month) }
}

/// The card's identity and holder, as the card gave them. Descriptions are redacted.
public struct CardData: Hashable, Sendable, CustomStringConvertible {
    /// The PAN (5A, else from track 2): a type that redacts itself.
    public var pan: PAN
    public var expiry: Expiry
    /// PAN sequence number (5F34), 0...99.
    public var panSequenceNumber: Int?
    /// Cardholder name (5F20), trailing spaces removed.
    public var cardholderName: String?
    /// Track 2 equivalent data (57), when the card has it.
    public var track2: Track2?
    /// Issuer country code (5F28), ISO 3166-1 numeric.
    public var issuerCountryCode: Int?
    /// Application currency code (9F42), ISO 4217 numeric.
    public var applicationCurrencyCode: Int?

    public init(pan: PAN, expiry: Expiry, panSequenceNumber: Int? = nil, cardholderName: String? = nil,
                track2: Track2? = nil, issuerCountryCode: Int? = nil, applicationCurrencyCode: Int? = nil) {
        self.pan = pan
        self.expiry = expiry
        self.panSequenceNumber = panSequenceNumber
        self.cardholderName = cardholderName
        self.track2 = track2
        self.issuerCountryCode = issuerCountryCode
        self.applicationCurrencyCode = applicationCurrencyCode
    }

    public var description: String { "\(pan.masked) exp \(expiry)" }
}

/// The application cryptogram and what an acquirer needs to send it for authorisation.
public struct Cryptogram: Hashable, Sendable {
    /// What the card decided (CID bits 8-7).
    public enum Kind: String, Hashable, Sendable, CustomStringConvertible {
        /// Application authentication cryptogram: declined offline.
        case aac = "AAC"
        /// Transaction certificate: approved offline.
        case tc = "TC"
        /// Authorisation request cryptogram: go online.
        case arqc = "ARQC"
        public var description: String { rawValue }
    }

    /// Where the cryptogram came from.
    public enum Source: String, Hashable, Sendable {
        /// The GET PROCESSING OPTIONS answer (Visa qVSDC and friends).
        case gpo
        /// A GENERATE AC answer (M/Chip and friends).
        case generateAC
    }

    /// Cryptogram information data (9F27); when a card left it out of its GPO answer, `0x80`.
    public var cid: UInt8
    public var kind: Kind
    /// Application transaction counter (9F36).
    public var atc: UInt16
    /// The application cryptogram (9F26), 8 bytes.
    public var ac: [UInt8]
    /// Issuer application data (9F10).
    public var iad: [UInt8]
    /// The unpredictable number the terminal sent (9F37).
    public var unpredictableNumber: [UInt8]
    public var source: Source
    /// The data objects for online authorisation (ISO 8583 field 55), in the usual order:
    /// 9F26 9F27 9F10 9F37 9F36 95 9A 9C 9F02 5F2A 82 9F1A 9F34 9F33 9F35 9F03 84 5F34 …
    /// Never the PAN or track 2 (they travel in their own fields).
    public var onlineData: [TLV]

    public init(cid: UInt8, kind: Kind, atc: UInt16, ac: [UInt8], iad: [UInt8], unpredictableNumber: [UInt8],
                source: Source, onlineData: [TLV]) {
        self.cid = cid
        self.kind = kind
        self.atc = atc
        self.ac = ac
        self.iad = iad
        self.unpredictableNumber = unpredictableNumber
        self.source = source
        self.onlineData = onlineData
    }

    /// The online data objects, encoded one after the other.
    public var onlineDataBytes: [UInt8] { onlineData.encoded }
}

/// The cardholder verification the card and the amount call for.
public enum CardholderVerification: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// None: below the CVM limit, or the card asks for none.
    case noCVM
    /// The cardholder enters a PIN, sent online to the issuer.
    case onlinePIN
    /// The cardholder signs.
    case signature
    /// The cardholder was verified on the device (phone, watch) that acts as the card.
    case consumerDevice
    /// A verification is required but none the card and the terminal share can be done.
    case failed

    public var description: String { rawValue }
}

/// Everything read from a card: the outcome of ``EMVKernel`` and ``EMVReader``.
///
/// Sendable; its description shows the PAN only masked and never the track 2.
public struct CardRead: Hashable, Sendable, CustomStringConvertible {
    public var application: ApplicationInfo
    public var card: CardData
    public var cryptogram: Cryptogram
    public var cvm: CardholderVerification
    /// How the CVM was decided: CVM Results (9F34), the kernel, the rule and why (nil only for a
    /// read made without the kernel).
    public var cvmDecision: CVMDecision?
    /// Every exchange on the wire, in order, timed (filled by ``EMVReader``; empty from the bare
    /// state machine).
    public var exchanges: [Exchange]
    /// Every primitive data object the card gave (FCI, GPO answer, records, GENERATE AC), in the
    /// order received. Holds the PAN and track 2: do not print it.
    public var cardDataObjects: [TLV]
    /// Offline data authentication: the method, each step of the chain, the TVR bits it set.
    public var oda: ODAResult = .notPerformed

    public init(application: ApplicationInfo, card: CardData, cryptogram: Cryptogram, cvm: CardholderVerification,
                exchanges: [Exchange] = [], cardDataObjects: [TLV] = [], cvmDecision: CVMDecision? = nil) {
        self.application = application
        self.card = card
        self.cryptogram = cryptogram
        self.cvm = cvm
        self.cvmDecision = cvmDecision
        self.exchanges = exchanges
        self.cardDataObjects = cardDataObjects
    }

    /// `Visa A0000000031010 476173******0119 exp 2027-12 ARQC ATC 1 CVM noCVM, 7 exchanges`.
    public var description: String {
        "\(application.brand.displayName) \(application.aidHex) \(card) \(cryptogram.kind) ATC \(cryptogram.atc) "
            + "CVM \(cvm), \(exchanges.count) exchange(s)"
    }
}

/// What is known part way: at the online data point (``EMVKernel/Action/onlineDataReady(_:)``)
/// or when reading failed (``KernelError/partial``). Sendable; the description is redacted.
public struct PartialCardRead: Hashable, Sendable, CustomStringConvertible {
    /// The step the kernel had reached.
    public var step: KernelStep?
    /// Offline data authentication, when it ran before the failure (a reader's offline decline
    /// after a failed signature says why here).
    public var oda: ODAResult?
    public var application: ApplicationInfo?
    /// The card data, once PAN and expiry are known.
    public var card: CardData?
    public var cryptogram: Cryptogram?
    public var cvm: CardholderVerification?
    /// Whether ``EMVKernel/Action/onlineDataReady(_:)`` had been emitted: a payment flow may
    /// have started the authorisation.
    public var onlineDataWasReady: Bool
    /// Every exchange so far (filled by ``EMVReader``).
    public var exchanges: [Exchange]

    public init(step: KernelStep? = nil, application: ApplicationInfo? = nil, card: CardData? = nil,
                cryptogram: Cryptogram? = nil, cvm: CardholderVerification? = nil, onlineDataWasReady: Bool = false,
                exchanges: [Exchange] = []) {
        self.step = step
        self.application = application
        self.card = card
        self.cryptogram = cryptogram
        self.cvm = cvm
        self.onlineDataWasReady = onlineDataWasReady
        self.exchanges = exchanges
    }

    public var description: String {
        var parts: [String] = []
        if let step { parts.append("at \(step)") }
        if let application { parts.append("\(application.brand.displayName) \(application.aidHex)") }
        if let card { parts.append(card.description) }
        if let cryptogram { parts.append("\(cryptogram.kind) ATC \(cryptogram.atc)") }
        if onlineDataWasReady { parts.append("online data handed out") }
        parts.append("\(exchanges.count) exchange(s)")
        return parts.joined(separator: ", ")
    }
}
