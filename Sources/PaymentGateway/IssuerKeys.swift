public import BERTLV
public import PaymentRules
// The gateway's one dependency on the virtual cards, and the only file that has it. The emulated
// acquirer is also the issuer host of tapemu's test cards: it verifies their cryptograms (9F26)
// with the issuer master keys the cards were personalised with (each profile's `issuerMasterKey`)
// by the scheme the cards compute them with (`ApplicationCryptogram`). Both are the cards' own
// data, read here from the one place they are defined, so a card and its issuer cannot disagree;
// a second copy of the keys on the gateway's side would be a rule owned twice. Nothing else of
// the gateway (webhook signing, tokens, secrets: `Cryptography`) goes through this module.
public import VirtualCard

/// An issuer master key (16 bytes, double-length triple DES) the gateway holds for a card
/// range. Its `description` never shows the key.
public struct IssuerKey: Sendable, Hashable, CustomStringConvertible {
    public var masterKey: [UInt8]
    public init(masterKey: [UInt8]) { self.masterKey = masterKey }
    public var description: String { "IssuerKey(\(masterKey.count) bytes, redacted)" }
}

/// Where the gateway looks up the issuer key of a card. A card with no key is authorised as
/// ``CryptogramCheck/unverified``.
public protocol IssuerKeyStore: Sendable {
    /// The issuer master key for this card, or nil when the gateway does not know the card.
    func issuerKey(for pan: PAN, panSequenceNumber: UInt8) -> IssuerKey?
}

/// Keys held in memory: for whole PANs, and for PAN prefixes (BIN ranges). An exact PAN wins;
/// then the longest prefix.
public struct StaticIssuerKeyStore: IssuerKeyStore {
    private var byPAN: [PAN: IssuerKey]
    private var byPrefix: [(prefix: String, key: IssuerKey)]

    public init(cards: [PAN: IssuerKey] = [:], prefixes: [String: IssuerKey] = [:]) {
        byPAN = cards
        byPrefix = prefixes.map { ($0.key, $0.value) }.sorted { $0.prefix.count > $1.prefix.count }
    }

    /// A store that knows no card: every card is unverified.
    public static let empty = StaticIssuerKeyStore()

    public func issuerKey(for pan: PAN, panSequenceNumber: UInt8) -> IssuerKey? {
        if let k = byPAN[pan] { return k }
        return byPrefix.first { pan.digits.hasPrefix($0.prefix) }?.key
    }
}

/// The test issuer master keys of tapemu's virtual cards (VirtualCard's profiles): the
/// gateway's default, so payments made with a virtual card are ``CryptogramCheck/verified``.
public struct VirtualCardIssuerKeys: IssuerKeyStore {
    private let keys: [PAN: IssuerKey]

    /// The keys of `profiles` (default: every built-in profile), by each application's PAN.
    public init(profiles: [CardProfile] = CardProfiles.all) {
        var keys: [PAN: IssuerKey] = [:]
        for p in profiles where p.issuerMasterKey.count == 16 {
            for app in p.applications where keys[app.pan] == nil {
                keys[app.pan] = IssuerKey(masterKey: p.issuerMasterKey)
            }
        }
        self.keys = keys
    }

    public func issuerKey(for pan: PAN, panSequenceNumber: UInt8) -> IssuerKey? { keys[pan] }
}

/// Checks a card's application cryptogram (9F26) against the EMV data of the request.
public protocol CryptogramVerifier: Sendable {
    /// True when the cryptogram in `emvData` is the one the card computes under `issuerKey`.
    /// Missing or malformed 9F26 / 9F36 / 82 count as a wrong cryptogram.
    func verify(issuerKey: IssuerKey, pan: PAN, panSequenceNumber: UInt8, emvData: [TLV]) -> Bool
}

/// The scheme tapemu's virtual cards use (VirtualCard's `ApplicationCryptogram`: EMV option A
/// key derivation, common session key, retail MAC).
public struct EMVCryptogramVerifier: CryptogramVerifier {
    public init() {}
    public func verify(issuerKey: IssuerKey, pan: PAN, panSequenceNumber: UInt8, emvData: [TLV]) -> Bool {
        guard panSequenceNumber <= 99 else { return false }
        return ApplicationCryptogram.verify(issuerMasterKey: issuerKey.masterKey, pan: pan,
                                            panSequenceNumber: panSequenceNumber, authorisationData: emvData)
    }
}
