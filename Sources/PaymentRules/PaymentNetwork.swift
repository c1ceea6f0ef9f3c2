/// The one registry of payment applications: which network a registered application provider
/// (RID, the first five bytes of an AID) belongs to, the EMV contactless kernel (Book B) that
/// serves it, its names for people, and the well-known products (full AIDs).
///
/// The one card brand type: everything that tells a brand from an AID (its RID table) or from a
/// PAN (its IIN ranges, ``init(pan:)``), or a kernel from an AID, asks here — the kernel's
/// ``CardRead``, the display decoder's schemes and application names (module `EMVDisplay`), the
/// gateway's ledger (`CardBrand` records a network's raw value).
public enum PaymentNetwork: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case visa, mastercard, maestro, amex, discover, jcb, unionpay, interac
    case cartesBancaires = "cb"
    case girocard, eftpos, rupay, mir
    case unknown

    /// One registered application provider.
    private struct Provider {
        let rid: [UInt8]
        let network: PaymentNetwork
    }

    /// RID → network. Maestro shares Mastercard's RID and is told apart by its PIX (``init(aid:)``).
    private static let providers: [Provider] = [
        Provider(rid: [0xA0, 0x00, 0x00, 0x00, 0x03], network: .visa),
        Provider(rid: [0xA0, 0x00, 0x00, 0x00, 0x04], network: .mastercard),
        Provider(rid: [0xA0, 0x00, 0x00, 0x00, 0x25], network: .amex),
        Provider(rid: [0xA0, 0x00, 0x00, 0x01, 0x52], network: .discover),
        Provider(rid: [0xA0, 0x00, 0x00, 0x03, 0x24], network: .discover),
        Provider(rid: [0xA0, 0x00, 0x00, 0x00, 0x65], network: .jcb),
        Provider(rid: [0xA0, 0x00, 0x00, 0x03, 0x33], network: .unionpay),
        Provider(rid: [0xA0, 0x00, 0x00, 0x02, 0x77], network: .interac),
        Provider(rid: [0xA0, 0x00, 0x00, 0x00, 0x42], network: .cartesBancaires),
        Provider(rid: [0xA0, 0x00, 0x00, 0x03, 0x59], network: .girocard),
        Provider(rid: [0xA0, 0x00, 0x00, 0x03, 0x84], network: .eftpos),
        Provider(rid: [0xA0, 0x00, 0x00, 0x05, 0x24], network: .rupay),
        Provider(rid: [0xA0, 0x00, 0x00, 0x06, 0x58], network: .mir),
    ]

    /// Well-known applications by full AID (prefix), for display.
    public static let products: [(aid: [UInt8], name: String)] = [
        ([0xA0, 0, 0, 0, 0x03, 0x10, 0x10], "Visa credit or debit"),
        ([0xA0, 0, 0, 0, 0x03, 0x20, 0x10], "Visa Electron"),
        ([0xA0, 0, 0, 0, 0x03, 0x20, 0x20], "V PAY"),
        ([0xA0, 0, 0, 0, 0x03, 0x30, 0x10], "Visa Interlink"),
        ([0xA0, 0, 0, 0, 0x03, 0x80, 0x10], "Visa Plus"),
        ([0xA0, 0, 0, 0, 0x04, 0x10, 0x10], "Mastercard credit or debit"),
        ([0xA0, 0, 0, 0, 0x04, 0x30, 0x60], "Maestro"),
        ([0xA0, 0, 0, 0, 0x04, 0x22, 0x03], "Maestro (US)"),
        ([0xA0, 0, 0, 0, 0x04, 0x60, 0x00], "Cirrus"),
        ([0xA0, 0, 0, 0, 0x25, 0x01], "American Express"),
        ([0xA0, 0, 0, 0x01, 0x52, 0x30, 0x10], "Discover"),
        ([0xA0, 0, 0, 0, 0x65, 0x10, 0x10], "JCB"),
        ([0xA0, 0, 0, 0x03, 0x33, 0x01, 0x01], "UnionPay"),
    ]

    /// The network of `aid` by its RID (Maestro apart from Mastercard by its PIX `30 60`);
    /// `.unknown` for an unregistered RID.
    public init(aid: [UInt8]) {
        self = .unknown
        guard aid.count >= 5 else { return }
        let rid = aid.prefix(5)
        guard let provider = Self.providers.first(where: { rid.elementsEqual($0.rid) }) else { return }
        if provider.network == .mastercard && aid.dropFirst(5).starts(with: [0x30, 0x60]) {
            self = .maestro
        } else {
            self = provider.network
        }
    }

    /// The network a PAN's leading digits (its IIN range) suggest, for a card whose application
    /// is not known (a request that names no brand); `.unknown` when no range fits.
    public init(pan: PAN) {
        let d = pan.digits
        func prefix(_ n: Int) -> Int { Int(d.prefix(n)) ?? -1 }
        switch true {
        case d.hasPrefix("4"): self = .visa
        case (51...55).contains(prefix(2)), (2221...2720).contains(prefix(4)): self = .mastercard
        case d.hasPrefix("34"), d.hasPrefix("37"): self = .amex
        case d.hasPrefix("6011"), d.hasPrefix("65"), (644...649).contains(prefix(3)): self = .discover
        case (3528...3589).contains(prefix(4)): self = .jcb
        case d.hasPrefix("62"): self = .unionpay
        case d.hasPrefix("50"), (56...69).contains(prefix(2)): self = .maestro
        default: self = .unknown
        }
    }

    /// Whether the RID of `aid` is registered here.
    public static func isRegistered(_ aid: [UInt8]) -> Bool {
        PaymentNetwork(aid: aid) != .unknown
    }

    /// The EMV contactless kernel (Book B) that serves this network when the card names none.
    public var defaultKernelID: UInt8 {
        switch self {
        case .mastercard, .maestro: return 2
        case .visa: return 3
        case .amex: return 4
        case .jcb: return 5
        case .discover: return 6
        case .unionpay: return 7
        // Domestic schemes run domestic kernels (or name one in 9F2A): EMV rules, the CVM list.
        case .interac, .cartesBancaires, .girocard, .eftpos, .rupay, .mir, .unknown: return 0
        }
    }

    /// The name of EMV contactless kernel `id` (Book B numbering): `C-2, Mastercard`.
    public static func kernelName(_ id: UInt8) -> String? {
        switch id {
        case 1: "C-1"
        case 2: "C-2, Mastercard"
        case 3: "C-3, Visa"
        case 4: "C-4, American Express"
        case 5: "C-5, JCB"
        case 6: "C-6, Discover"
        case 7: "C-7, UnionPay"
        case 8: "C-8, EMVCo"
        default: nil
        }
    }

    /// For people: `Visa`, `Mastercard`, `American Express`.
    public var displayName: String {
        switch self {
        case .visa: return "Visa"
        case .mastercard: return "Mastercard"
        case .maestro: return "Maestro"
        case .amex: return "American Express"
        case .discover: return "Discover"
        case .jcb: return "JCB"
        case .unionpay: return "UnionPay"
        case .interac: return "Interac"
        case .cartesBancaires: return "CB"
        case .girocard: return "girocard"
        case .eftpos: return "eftpos"
        case .rupay: return "RuPay"
        case .mir: return "Mir"
        case .unknown: return "unknown brand"
        }
    }

    /// The name of the provider (by RID, Maestro under Mastercard), for an application of it:
    /// `CB (Cartes Bancaires)`; nil for `.unknown`.
    public var providerName: String? {
        switch self {
        case .maestro: return PaymentNetwork.mastercard.providerName
        case .cartesBancaires: return "CB (Cartes Bancaires)"
        case .unknown: return nil
        default: return displayName
        }
    }

    /// The name of a well-known application (by full AID, then by RID), for display.
    public static func applicationName(_ aid: [UInt8]) -> String? {
        for (prefix, name) in products where aid.starts(with: prefix) { return name }
        return PaymentNetwork(aid: aid).providerName.map { "\($0) application" }
    }

    public var description: String { rawValue }
}
