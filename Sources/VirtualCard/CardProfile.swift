public import BERTLV
public import PaymentRules
import ISO7816

/// A virtual card defined as data: its applications, their files and keys, and how it behaves.
///
/// Built-in profiles live in ``CardProfiles``; users write their own as JSON (the same shape
/// the built-ins are written in, see `Sources/VirtualCard/Profiles/`) and load them with
/// ``load(contentsOf:)``. Hex fields are hex strings; `text` values are ASCII.
public struct CardProfile: Codable, Sendable, Hashable {
    /// A short name, e.g. `visa-qvsdc`.
    public var name: String
    /// One line for `tapemu cards`.
    public var summary: String
    /// The ATS historical bytes the reader puts in the ATR it synthesises (0...15 bytes).
    public var atrHistoricalBytes: [UInt8]
    /// Whether the card has a PPSE (`2PAY.SYS.DDF01`). Without one, SELECT PPSE answers 6A82.
    public var hasPPSE: Bool
    /// The issuer master key (16 bytes, double-length 3DES) the ICC master key is derived from.
    /// Test keys only.
    public var issuerMasterKey: [UInt8]
    /// The ATC before the first transaction; the first cryptogram carries `atc + 1`.
    public var atc: UInt16
    /// The applications, in the order the PPSE lists them.
    public var applications: [CardApplication]
    public var behaviour: CardBehaviour

    public init(name: String, summary: String, atrHistoricalBytes: [UInt8] = [], hasPPSE: Bool = true,
                issuerMasterKey: [UInt8], atc: UInt16 = 0, applications: [CardApplication],
                behaviour: CardBehaviour = CardBehaviour()) {
        self.name = name
        self.summary = summary
        self.atrHistoricalBytes = atrHistoricalBytes
        self.hasPPSE = hasPPSE
        self.issuerMasterKey = issuerMasterKey
        self.atc = atc
        self.applications = applications
        self.behaviour = behaviour
    }

    /// A copy that leaves the field after answering exchange `n` (exchange `n + 1` gets
    /// ``CardReply/removed``); `0` tears before the first answer.
    public func withTear(afterExchange n: Int) -> CardProfile {
        changing { $0.behaviour.tearAfterExchange = n }
    }

    /// A copy that never answers exchange `n` (1-based) and stays mute until powered on again.
    public func withMute(atExchange n: Int) -> CardProfile {
        changing { $0.behaviour.muteAtExchange = n }
    }

    /// A copy that spends `time` on every command (reported in ``CardReply/response(_:cardTime:)``).
    public func withCardTime(_ time: Duration) -> CardProfile {
        changing { $0.behaviour.cardTime = time }
    }

    /// A copy that answers every command beginning with `commandPrefix` with `response`
    /// (data + SW1 SW2) verbatim — a card that lies, for testing readers.
    public func withScriptedResponse(commandPrefix: [UInt8], response: [UInt8]) -> CardProfile {
        changing { $0.behaviour.scriptedResponses.append(ScriptedResponse(commandPrefix: commandPrefix, response: response)) }
    }

    /// A copy with `change` made to it: how a built-in variant says what else it changes
    /// (`p.hasPPSE = false`, a behaviour, an application's field), after ``variant(name:summary:atc:pan:)``.
    public func changing(_ change: (inout CardProfile) -> Void) -> CardProfile {
        var p = self
        change(&p)
        return p
    }

    /// A copy under another name, with its own ATC and PAN: how a built-in that differs from
    /// another by a few values derives from it (`torn`, `mute`, `slow`, `chained`, `visa-cdcvm`,
    /// `visa-online-pin`, `two-apps`, `unionpay` from `visa-qvsdc`; `no-ppse`, `offline-decline`
    /// from `mastercard-mchip`; `jcb`, `mastercard-cvm-list` from `maestro`). The PAN is replaced wherever the
    /// applications hold the old one: their PAN, and the data objects that start with its BCD
    /// digits (5A, track 2 in 57 and 9F6B) in the GPO answer, the records and GET DATA.
    /// `pan` has as many digits as the PAN it replaces (a built-in's layout stays the same).
    public func variant(name: String, summary: String, atc: UInt16, pan: PAN) -> CardProfile {
        var p = self
        p.name = name
        p.summary = summary
        p.atc = atc
        for i in p.applications.indices {
            let old = p.applications[i].pan
            precondition(old.digits.count == pan.digits.count, "a variant's PAN has the length of the one it replaces")
            p.applications[i].pan = pan
            func swap(_ objects: inout [CardDataObject]) {
                for j in objects.indices {
                    objects[j].value = Self.replacingLeadingDigits(objects[j].value, old.digits, with: pan.digits)
                    if objects[j].children != nil { swap(&objects[j].children!) }
                }
            }
            swap(&p.applications[i].gpoObjects)
            swap(&p.applications[i].getDataObjects)
            for r in p.applications[i].records.indices { swap(&p.applications[i].records[r].objects) }
        }
        return p
    }

    /// A copy whose data objects with `tag` hold `value` instead, wherever the applications
    /// hold them (the FCI's discretionary data, the GPO answer, the records, GET DATA): how a
    /// built-in that differs from its base by a few values says so.
    public func replacingObjects(_ tag: Tag, with value: [UInt8]) -> CardProfile {
        var p = self
        func replace(_ objects: inout [CardDataObject]) {
            for j in objects.indices {
                if objects[j].tag == tag && objects[j].children == nil { objects[j].value = value }
                if objects[j].children != nil { replace(&objects[j].children!) }
            }
        }
        for i in p.applications.indices {
            replace(&p.applications[i].fciIssuerDiscretionaryData)
            replace(&p.applications[i].gpoObjects)
            replace(&p.applications[i].getDataObjects)
            for r in p.applications[i].records.indices { replace(&p.applications[i].records[r].objects) }
        }
        return p
    }

    /// A copy whose data objects with `tag` hold `text` (ASCII), or the bytes of `hex`, instead.
    func replacingObjects(_ tag: Tag, text: String) -> CardProfile {
        replacingObjects(tag, with: Array(text.utf8))
    }

    func replacingObjects(_ tag: Tag, hex: String) -> CardProfile {
        replacingObjects(tag, with: Self.bytes(hex))
    }

    /// A copy whose application `index` is another product on the same personalisation: its AID,
    /// label and preferred name, and where given its kernel identifier (hex) and priority. How a
    /// built-in that is another scheme's card (or a second application) derives from a base.
    func relabelling(application index: Int = 0, aid: String, label: String, preferredName: String,
                     kernel: String? = nil, priority: UInt8? = nil) -> CardProfile {
        changing { p in
            p.applications[index].aid = Self.bytes(aid)
            p.applications[index].label = label
            p.applications[index].preferredName = preferredName
            if let kernel { p.applications[index].kernelIdentifier = Self.bytes(kernel) }
            if let priority { p.applications[index].priority = priority }
        }
    }

    /// A copy whose first application is another product of the same card: its own PAN, AID,
    /// label and priority. How a built-in with two applications (`two-apps`, `no-ppse-partial`)
    /// makes the ones it lists (`.applications[0]` of the result).
    func sibling(pan: String, aid: String, label: String, preferredName: String, priority: UInt8) -> CardProfile {
        variant(name: name, summary: summary, atc: atc, pan: PAN(pan)!)
            .relabelling(aid: aid, label: label, preferredName: preferredName, priority: priority)
    }

    /// A copy personalised by another issuer: its master key (hex) and, where given, the issuer
    /// application data (hex) of every application.
    func issued(masterKey: String, issuerApplicationData: String? = nil) -> CardProfile {
        changing { p in
            p.issuerMasterKey = Self.bytes(masterKey)
            if let issuerApplicationData {
                for i in p.applications.indices { p.applications[i].issuerApplicationData = Self.bytes(issuerApplicationData) }
            }
        }
    }

    /// A built-in's hex: ours, so a typo traps (and the tests load every built-in).
    private static func bytes(_ hex: String) -> [UInt8] {
        do { return try Hex.decode(hex) } catch { preconditionFailure("a built-in profile's hex does not read: \(error)") }
    }

    /// `value` with its leading BCD digits `old` replaced by `new` (same length); unchanged when
    /// it does not start with them.
    private static func replacingLeadingDigits(_ value: [UInt8], _ old: String, with new: String) -> [UInt8] {
        var nibbles = value.flatMap { [$0 >> 4, $0 & 0x0F] }
        let from = old.utf8.map { $0 - 0x30 }, to = new.utf8.map { $0 - 0x30 }
        guard nibbles.starts(with: from) else { return value }
        nibbles.replaceSubrange(0..<from.count, with: to)
        return stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }
}

/// One EMV application on a virtual card.
public struct CardApplication: Codable, Sendable, Hashable {
    /// Where the card returns its application cryptogram.
    public enum CryptogramSource: String, Codable, Sendable, Hashable {
        /// In the GET PROCESSING OPTIONS answer (Visa qVSDC): GPO answers in format 2 with 9F26,
        /// 9F27, 9F36, 9F10; the cryptogram input comes from the PDOL data.
        case getProcessingOptions = "gpo"
        /// In the GENERATE AC answer (M/Chip, Expresspay): the input comes from the CDOL1 data.
        case generateAC = "generateAC"
    }

    /// Response message template format: 1 (tag 80, values concatenated) or 2 (tag 77, TLV).
    public enum ResponseFormat: Int, Codable, Sendable, Hashable {
        case format1 = 1
        case format2 = 2
    }

    /// The AID (5...16 bytes).
    public var aid: [UInt8]
    /// Application label, tag 50 (1...16 ASCII characters).
    public var label: String
    /// Application preferred name, tag 9F12 (sent with issuer code table index 9F11 = 01).
    public var preferredName: String?
    /// Application priority indicator, tag 87 (its low nibble, 1 highest; bit 8: ask the cardholder).
    public var priority: UInt8?
    /// Kernel identifier, tag 9F2A, in the PPSE directory entry (e.g. `03` Visa, `02` Mastercard).
    public var kernelIdentifier: [UInt8]?
    /// Extended selection (9F29) in the PPSE entry: the terminal selects the AID followed by
    /// these bytes (EMV Contactless Book B §3.3.2.5); the card answers to that name.
    public var extendedSelection: [UInt8]?
    /// Language preference, tag 5F2D (e.g. `en`, `enfr`).
    public var languagePreference: String?
    /// PDOL, tag 9F38, as a DOL (tags and lengths). Empty: no PDOL, GPO takes `83 00`.
    public var pdol: [UInt8]
    /// Objects in the FCI issuer discretionary data (BF0C) of the application's FCI.
    public var fciIssuerDiscretionaryData: [CardDataObject]
    /// Application interchange profile, tag 82 (2 bytes).
    public var aip: [UInt8]
    /// Application file locator, tag 94: 4 bytes per entry (SFI << 3, first, last, ODA count).
    public var afl: [UInt8]
    /// The GPO answer's format. Format 1 holds only AIP and AFL.
    public var gpoFormat: ResponseFormat
    /// More objects in a format 2 GPO answer (e.g. 57, 5F34, 9F6C, 9F6E for qVSDC).
    public var gpoObjects: [CardDataObject]
    public var cryptogram: CryptogramSource
    /// CDOL1, tag 8C, as a DOL. Empty: the application does not know GENERATE AC (6D00).
    public var cdol1: [UInt8]
    /// The GENERATE AC answer's format: 2 (77{9F27, 9F36, 9F26, 9F10}) or 1 (80: CID ATC AC IAD).
    public var generateACFormat: ResponseFormat
    /// The PAN the keys are derived from (must match 5A and 57 in the records).
    public var pan: PAN
    /// The PAN sequence number 0...99 (tag 5F34 '01' is 1) the keys are derived from.
    public var panSequenceNumber: UInt8
    /// Issuer application data, tag 9F10, returned with the cryptogram (holds the CVR).
    public var issuerApplicationData: [UInt8]
    /// The card transaction qualifiers (9F6C) the card answers instead of the ones in
    /// ``gpoObjects`` when the reader's TTQ (9F66 in the PDOL data) says "CVM required"
    /// (byte 2 bit 7) — e.g. `8000` asks for online PIN above the reader's CVM limit.
    public var cardTransactionQualifiersWhenCVMRequired: [UInt8]?
    /// The records, each answered as `70 { objects }`.
    public var records: [CardRecord]
    /// Objects GET DATA answers (80 CA P1P2), besides the ATC (9F36) which it always knows.
    public var getDataObjects: [CardDataObject]
    /// Offline data authentication: the method and the fault the card is personalised with.
    public var oda: CardODA? = nil

    public init(aid: [UInt8], label: String, preferredName: String? = nil, priority: UInt8? = nil,
                kernelIdentifier: [UInt8]? = nil, languagePreference: String? = nil, pdol: [UInt8] = [],
                fciIssuerDiscretionaryData: [CardDataObject] = [], aip: [UInt8], afl: [UInt8],
                gpoFormat: ResponseFormat = .format2, gpoObjects: [CardDataObject] = [],
                cryptogram: CryptogramSource, cdol1: [UInt8] = [], generateACFormat: ResponseFormat = .format2,
                pan: PAN, panSequenceNumber: UInt8 = 0, issuerApplicationData: [UInt8],
                cardTransactionQualifiersWhenCVMRequired: [UInt8]? = nil, records: [CardRecord],
                getDataObjects: [CardDataObject] = []) {
        self.aid = aid
        self.label = label
        self.preferredName = preferredName
        self.priority = priority
        self.kernelIdentifier = kernelIdentifier
        self.extendedSelection = nil
        self.languagePreference = languagePreference
        self.pdol = pdol
        self.fciIssuerDiscretionaryData = fciIssuerDiscretionaryData
        self.aip = aip
        self.afl = afl
        self.gpoFormat = gpoFormat
        self.gpoObjects = gpoObjects
        self.cryptogram = cryptogram
        self.cdol1 = cdol1
        self.generateACFormat = generateACFormat
        self.pan = pan
        self.panSequenceNumber = panSequenceNumber
        self.issuerApplicationData = issuerApplicationData
        self.cardTransactionQualifiersWhenCVMRequired = cardTransactionQualifiersWhenCVMRequired
        self.records = records
        self.getDataObjects = getDataObjects
    }

    /// The record `number` of short file `sfi`, if the card has it.
    public func record(sfi: UInt8, number: UInt8) -> CardRecord? {
        records.first { $0.sfi == sfi && $0.number == number }
    }
}

/// One record of an application's short file.
public struct CardRecord: Codable, Sendable, Hashable {
    /// Short file identifier 1...30.
    public var sfi: UInt8
    /// Record number 1...255.
    public var number: UInt8
    /// The objects of the record template (70).
    public var objects: [CardDataObject]
    /// When set, READ RECORD answers these bytes (without SW) verbatim instead of `70 { objects }`
    /// — for cards that break the rules.
    public var raw: [UInt8]?

    public init(sfi: UInt8, number: UInt8, objects: [CardDataObject], raw: [UInt8]? = nil) {
        self.sfi = sfi
        self.number = number
        self.objects = objects
        self.raw = raw
    }

    /// The record as READ RECORD returns it.
    public var encoded: [UInt8] {
        raw ?? TLV(tag: .readRecordResponseTemplate, children: objects.map(\.tlv)).encoded
    }
}

/// A data object in a profile: primitive (hex or text value) or constructed (children).
///
/// JSON: `{"tag": "5F20", "text": "TEST/CARD"}`, `{"tag": "57", "hex": "4761…"}` or
/// `{"tag": "BF0C", "objects": [ … ]}`.
public struct CardDataObject: Codable, Sendable, Hashable {
    public var tag: Tag
    /// The value bytes (for a constructed object given as hex, its encoded children verbatim).
    public var value: [UInt8]
    /// The children of a constructed object given as objects; nil otherwise.
    public var children: [CardDataObject]?

    public init(_ tag: Tag, _ value: [UInt8]) {
        self.tag = tag
        self.value = value
        self.children = nil
    }

    public init(_ tag: Tag, text: String) {
        self.init(tag, Array(text.utf8))
    }

    public init(_ tag: Tag, children: [CardDataObject]) {
        self.tag = tag
        self.children = children
        self.value = TLV(tag: tag, children: children.map(\.tlv)).valueBytes
    }

    /// The object as TLV.
    public var tlv: TLV {
        if let children { return TLV(tag: tag, children: children.map(\.tlv)) }
        return TLV(tag: tag, value: value)
    }
}

/// How a virtual card behaves beyond answering correctly.
public struct CardBehaviour: Codable, Sendable, Hashable {
    /// Answer commands that carry data (SELECT, GPO, GENERATE AC) with `61xx` and hand the data
    /// out through GET RESPONSE, as a T=0 card does.
    public var answersThroughGetResponse: Bool
    /// Answer `6Cxx` (resend with Le = xx) whenever Le differs from the length of the data,
    /// as a T=0 card does; the command is not executed (no state change).
    public var demandsExactLe: Bool
    /// The issuer's card risk management declines offline: every cryptogram is an AAC (CID 00).
    public var declinesOffline: Bool
    /// Time the card spends on each command.
    public var cardTime: Duration
    /// Time per instruction byte, instead of ``cardTime`` (e.g. GPO `A8` slower).
    public var cardTimeByInstruction: [UInt8: Duration]
    /// Leave the field after answering this many exchanges (exchange n + 1 is ``CardReply/removed``).
    public var tearAfterExchange: Int?
    /// Never answer this exchange (1-based), and stay mute until powered on again.
    public var muteAtExchange: Int?
    /// Commands answered verbatim, first match wins (see ``CardProfile/withScriptedResponse(commandPrefix:response:)``).
    public var scriptedResponses: [ScriptedResponse]

    public init(answersThroughGetResponse: Bool = false, demandsExactLe: Bool = false, declinesOffline: Bool = false,
                cardTime: Duration = .zero, cardTimeByInstruction: [UInt8: Duration] = [:],
                tearAfterExchange: Int? = nil, muteAtExchange: Int? = nil, scriptedResponses: [ScriptedResponse] = []) {
        self.answersThroughGetResponse = answersThroughGetResponse
        self.demandsExactLe = demandsExactLe
        self.declinesOffline = declinesOffline
        self.cardTime = cardTime
        self.cardTimeByInstruction = cardTimeByInstruction
        self.tearAfterExchange = tearAfterExchange
        self.muteAtExchange = muteAtExchange
        self.scriptedResponses = scriptedResponses
    }

    /// The time the card spends on instruction `ins`.
    public func cardTime(forInstruction ins: UInt8) -> Duration {
        cardTimeByInstruction[ins] ?? cardTime
    }
}

/// A command prefix and the response (data + SW1 SW2) a card gives it verbatim.
public struct ScriptedResponse: Codable, Sendable, Hashable {
    public var commandPrefix: [UInt8]
    public var response: [UInt8]

    public init(commandPrefix: [UInt8], response: [UInt8]) {
        self.commandPrefix = commandPrefix
        self.response = response
    }
}
