import BERTLV
public import CardChannel
public import ISO7816
import Synchronization

/// An EMV contactless card emulated from a ``CardProfile``: bytes in, reply out, synchronously.
///
/// It answers as a real card does: SELECT of the PPSE and of applications (full or partial name,
/// first or next occurrence), GET PROCESSING OPTIONS with the PDOL data in template 83, READ
/// RECORD, GENERATE AC with the CDOL1 data, GET DATA (ATC and the profile's objects) and GET
/// RESPONSE, with the status words of ISO 7816-4 and EMV: 6A82 unknown application, 6985 out
/// of order, 6700 wrong length, 6A86 wrong P1-P2, 6A80 bad data, 6A83 no such record, 6D00
/// unknown instruction, 6E00 unknown class. It keeps its ATC (one per application) across
/// power cycles; cryptograms are ``ApplicationCryptogram``s under the profile's issuer key.
///
/// Thread-safe: the state sits behind a mutex, and one command is processed at a time.
public final class EmulatedCard: Sendable {
    public let profile: CardProfile
    /// The profile as the card answers it: personalised for offline data authentication
    /// (``CardODA``).
    private let answering: CardProfile
    private let image: CardImage
    private let state: Mutex<CardState>

    public init(profile: CardProfile) {
        self.profile = profile
        let answering = profile.personalisedForODA()
        self.answering = answering
        self.image = CardImage(profile: answering)
        self.state = Mutex(CardState(atcs: profile.applications.map { _ in profile.atc }))
    }

    /// The ATR a PC/SC reader synthesises for this card (ISO 14443-4 type A).
    public var atr: [UInt8] { ContactlessATR.typeA(historicalBytes: profile.atrHistoricalBytes) }

    /// A cold or warm reset (the card enters the field again): nothing selected, no transaction
    /// in progress, back in the field and answering. The ATCs and the exchange count are kept.
    public func powerOn() {
        state.withLock { s in
            s.selection = .idle
            s.pending = []
            s.field = .present
        }
    }

    /// How many commands the card has received since it was made (power cycles included).
    public var exchangeCount: Int { state.withLock { $0.exchangeCount } }

    /// The ATC of application `index` (profile order): the last one a cryptogram carried.
    public func transactionCounter(application index: Int = 0) -> UInt16 {
        state.withLock { $0.atcs.indices.contains(index) ? $0.atcs[index] : 0 }
    }

    /// Processes one command APDU and returns the card's reply.
    public func process(_ command: CommandAPDU) -> CardReply {
        process(command.bytes)
    }

    /// Processes one command APDU (its bytes) and returns the card's reply.
    ///
    /// Never traps, whatever the bytes: anything that is not a valid short command APDU gets 6700.
    public func process(_ command: [UInt8]) -> CardReply {
        let behaviour = profile.behaviour
        return state.withLock { s in
            s.exchangeCount += 1
            let n = s.exchangeCount
            switch s.field {
            case .removed: return .removed
            case .mute: return .mute
            case .present: break
            }
            if let tear = behaviour.tearAfterExchange, n == tear + 1 {
                s.field = .removed
                s.selection = .idle
                s.pending = []
                return .removed
            }
            if let mute = behaviour.muteAtExchange, n == mute {
                s.field = .mute
                return .mute
            }
            let time = behaviour.cardTime(forInstruction: command.count > 1 ? command[1] : 0)
            if let script = behaviour.scriptedResponses.first(where: { command.starts(with: $0.commandPrefix) }) {
                return .response(script.response, cardTime: time)
            }
            // Work on a copy: a 6Cxx answer means the command was not executed.
            var next = s
            let bytes = next.respond(to: command, profile: answering, image: image)
            if !(bytes.count == 2 && bytes[0] == 0x6C) { s = next }
            return .response(bytes, cardTime: time)
        }
    }
}

/// What the card derives once from its profile.
struct CardImage: Sendable {
    static let ppseName: [UInt8] = Array("2PAY.SYS.DDF01".utf8)

    let ppseFCI: [UInt8]
    let applicationFCIs: [[UInt8]]
    /// Parsed DOLs; nil when the profile's bytes do not parse (an unvalidated profile).
    let pdols: [DataObjectList?]
    let cdols: [DataObjectList?]
    /// Each application's ICC master key, derived once (nil when the profile's issuer key or PSN
    /// cannot make one: the card then makes no cryptogram).
    let iccMasterKeys: [[UInt8]?]
    /// Each application's records as READ RECORD returns them, encoded once.
    let records: [[EncodedRecord]]
    /// Each application's GPO objects (format 2), encoded once.
    let gpoObjects: [[EncodedObject]]

    struct EncodedObject: Sendable {
        var tag: Tag
        var encoded: [UInt8]
    }

    struct EncodedRecord: Sendable {
        var sfi: UInt8
        var number: UInt8
        var bytes: [UInt8]
    }

    init(profile: CardProfile) {
        let entries = profile.applications.map { app -> TLV in
            var children = [TLV(tag: .applicationIdentifier, value: app.aid),
                            TLV(tag: .applicationLabel, value: Array(app.label.utf8))]
            if let p = app.priority { children.append(TLV(tag: .applicationPriorityIndicator, value: [p])) }
            if let k = app.kernelIdentifier { children.append(TLV(tag: .kernelIdentifier, value: k)) }
            if let e = app.extendedSelection { children.append(TLV(tag: .extendedSelection, value: e)) }
            return TLV(tag: 0x61, children: children)
        }
        ppseFCI = TLV(tag: .fciTemplate, children: [
            TLV(tag: .dedicatedFileName, value: Self.ppseName),
            TLV(tag: .fciProprietaryTemplate, children: [TLV(tag: .fciIssuerDiscretionaryData, children: entries)]),
        ]).encoded
        applicationFCIs = profile.applications.map { app in
            var proprietary = [TLV(tag: .applicationLabel, value: Array(app.label.utf8))]
            if let p = app.priority { proprietary.append(TLV(tag: .applicationPriorityIndicator, value: [p])) }
            if !app.pdol.isEmpty { proprietary.append(TLV(tag: .pdol, value: app.pdol)) }
            if let lang = app.languagePreference {
                proprietary.append(TLV(tag: .languagePreference, value: Array(lang.utf8)))
            }
            if let name = app.preferredName {
                proprietary.append(TLV(tag: .issuerCodeTableIndex, value: [0x01]))
                proprietary.append(TLV(tag: .applicationPreferredName, value: Array(name.utf8)))
            }
            if !app.fciIssuerDiscretionaryData.isEmpty {
                proprietary.append(TLV(tag: .fciIssuerDiscretionaryData, children: app.fciIssuerDiscretionaryData.map(\.tlv)))
            }
            return TLV(tag: .fciTemplate, children: [
                TLV(tag: .dedicatedFileName, value: app.aid),
                TLV(tag: .fciProprietaryTemplate, children: proprietary),
            ]).encoded
        }
        gpoObjects = profile.applications.map { app in
            app.gpoObjects.map { o in
                let tlv = o.tlv
                return EncodedObject(tag: tlv.tag, encoded: tlv.encoded)
            }
        }
        records = profile.applications.map { app in
            app.records.map { EncodedRecord(sfi: $0.sfi, number: $0.number, bytes: $0.encoded) }
        }
        pdols = profile.applications.map { try? DataObjectList(bytes: $0.pdol) }
        cdols = profile.applications.map { try? DataObjectList(bytes: $0.cdol1) }
        iccMasterKeys = profile.applications.map { app in
            guard profile.issuerMasterKey.count == 16, app.panSequenceNumber <= 99 else { return nil }
            return ApplicationCryptogram.iccMasterKey(issuerMasterKey: profile.issuerMasterKey, pan: app.pan,
                                                      panSequenceNumber: app.panSequenceNumber)
        }
    }
}

/// The card's mutable state.
struct CardState: Sendable {
    enum Field: Sendable { case present, removed, mute }

    /// Where the card is in a transaction; each phase carries the application it concerns.
    enum Selection: Sendable {
        /// Just powered on: nothing selected.
        case idle
        /// The PPSE is selected.
        case directory
        /// An application is selected; GPO not done.
        case selected(app: Int)
        /// GPO done, no cryptogram yet (M/Chip): records readable, GENERATE AC allowed.
        case initiated(app: Int)
        /// The cryptogram was produced: records still readable, nothing else.
        case completed(app: Int)

        var application: Int? {
            switch self {
            case .idle, .directory: return nil
            case .selected(let a), .initiated(let a), .completed(let a): return a
            }
        }
    }

    var exchangeCount = 0
    var field = Field.present
    var selection = Selection.idle
    /// Response data waiting for GET RESPONSE.
    var pending: [UInt8] = []
    /// The PDOL data of the last GPO (CDA's transaction data hash covers it).
    var gpoData: [UInt8] = []
    var atcs: [UInt16]

    init(atcs: [UInt16]) { self.atcs = atcs }

    /// A response: data and status word.
    struct Answer {
        var data: [UInt8]
        var sw: StatusWord
        init(_ data: [UInt8], _ sw: StatusWord = .success) { self.data = data; self.sw = sw }
        init(_ sw: StatusWord) { self.data = []; self.sw = sw }
    }

    mutating func respond(to raw: [UInt8], profile: CardProfile, image: CardImage) -> [UInt8] {
        // Short APDUs only; anything malformed, or extended, is a wrong length.
        guard let apdu = try? CommandAPDU(bytes: raw), !apdu.needsExtendedLength else {
            pending = []
            return StatusWord.wrongLength.bytes
        }
        let ins = apdu.instructionCode
        if ins != 0xC0 { pending = [] }
        let cla = apdu.instructionClass
        guard cla == 0x00 || cla == 0x80 else { return StatusWord.classNotSupported.bytes }
        let answer: Answer
        switch ins {
        case 0xA4:
            guard cla == 0x00 else { return StatusWord.classNotSupported.bytes }
            answer = select(apdu, profile: profile, image: image)
        case 0xA8:
            guard cla == 0x80 else { return StatusWord.classNotSupported.bytes }
            answer = getProcessingOptions(apdu, profile: profile, image: image)
        case 0xB2:
            guard cla == 0x00 else { return StatusWord.classNotSupported.bytes }
            answer = readRecord(apdu, image: image)
        case 0xAE:
            guard cla == 0x80 else { return StatusWord.classNotSupported.bytes }
            answer = generateAC(apdu, profile: profile, image: image)
        case 0xCA:
            answer = getData(apdu, profile: profile)
        case 0x88:
            guard cla == 0x00 else { return StatusWord.classNotSupported.bytes }
            answer = internalAuthenticate(apdu, profile: profile)
        case 0xC0:
            guard cla == 0x00 else { return StatusWord.classNotSupported.bytes }
            return getResponse(apdu, behaviour: profile.behaviour)
        default:
            return StatusWord.instructionNotSupported.bytes
        }
        return deliver(answer, for: apdu, behaviour: profile.behaviour)
    }

    /// Hands out response data as the profile's transmission behaviour says.
    mutating func deliver(_ answer: Answer, for apdu: CommandAPDU, behaviour: CardBehaviour) -> [UInt8] {
        let data = answer.data
        guard !data.isEmpty else { return answer.sw.bytes }
        if behaviour.answersThroughGetResponse && !apdu.data.isEmpty {
            pending = data
            return [0x61, UInt8(truncatingIfNeeded: min(data.count, 256))]
        }
        if behaviour.demandsExactLe {
            let le = max(apdu.expectedResponseLength, 0)
            if data.count <= 256 {
                if le != data.count { return [0x6C, UInt8(truncatingIfNeeded: data.count)] }
            } else {
                guard le == 256 else { return [0x6C, 0x00] }
                pending = Array(data[256...])
                return Array(data[..<256]) + [0x61, UInt8(truncatingIfNeeded: min(pending.count, 256))]
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 2)
        out += data
        out.append(answer.sw.sw1)
        out.append(answer.sw.sw2)
        return out
    }

    // MARK: Commands

    mutating func select(_ apdu: CommandAPDU, profile: CardProfile, image: CardImage) -> Answer {
        guard apdu.p1Parameter == 0x04 else { return Answer(.incorrectP1P2) }
        guard apdu.p2Parameter == 0x00 || apdu.p2Parameter == 0x02 else { return Answer(.incorrectP1P2) }
        let name = apdu.data
        guard (1...16).contains(name.count) else { return Answer(.wrongLength) }
        let next = apdu.p2Parameter == 0x02
        if name == CardImage.ppseName {
            guard profile.hasPPSE, !next else { return Answer(.fileNotFound) }
            selection = .directory
            return Answer(image.ppseFCI)
        }
        guard name.count >= 5 else { return Answer(.fileNotFound) }
        // A full or partial name (EMV Book 1 §12.3.3), or the AID followed by its extended
        // selection (Book B §3.3.2.5).
        let candidates = profile.applications.indices.filter {
            let app = profile.applications[$0]
            return app.aid.starts(with: name) || app.extendedSelection.map { app.aid + $0 == name } ?? false
        }
        let chosen: Int?
        if next, let current = selection.application, candidates.contains(current) {
            chosen = candidates.first { $0 > current }
        } else {
            chosen = candidates.first
        }
        guard let app = chosen else { return Answer(.fileNotFound) }
        selection = .selected(app: app)
        return Answer(image.applicationFCIs[app])
    }

    mutating func getProcessingOptions(_ apdu: CommandAPDU, profile: CardProfile, image: CardImage) -> Answer {
        guard apdu.p1Parameter == 0, apdu.p2Parameter == 0 else { return Answer(.incorrectP1P2) }
        let index: Int
        switch selection {
        case .idle, .initiated, .completed: return Answer(.conditionsOfUseNotSatisfied)
        case .directory: return Answer(.instructionNotSupported)
        case .selected(let a): index = a
        }
        let app = profile.applications[index]
        guard !apdu.data.isEmpty else { return Answer(.wrongLength) }
        // Template 83 holding exactly the PDOL data.
        let data = apdu.data[...]
        guard data[data.startIndex] == 0x83,
              let (length, valueStart) = try? BERTLV.readLength(data, at: data.startIndex + 1),
              valueStart + length == data.endIndex else {
            return Answer(.incorrectData)
        }
        guard let pdol = image.pdols[index] else { return Answer(.noPreciseDiagnosis) }
        guard let values = pdol.split(data[valueStart...]) else { return Answer(.wrongLength) }
        gpoData = Array(data[valueStart...])

        switch app.gpoFormat {
        case .format1:
            selection = app.cryptogram == .generateAC ? .initiated(app: index) : .completed(app: index)
            return Answer(TLV(tag: .responseMessageTemplateFormat1, value: app.aip + app.afl).encoded)
        case .format2:
            // Template 77's value: the children's encodings one after the other.
            var value: [UInt8] = []
            value.reserveCapacity(256)
            TLV(tag: .applicationInterchangeProfile, value: app.aip).encode(into: &value)
            if !app.afl.isEmpty { TLV(tag: .applicationFileLocator, value: app.afl).encode(into: &value) }
            if app.cryptogram == .getProcessingOptions {
                guard let c = makeCryptogram(app: index, values: values, requested: 0x80, profile: profile, image: image) else {
                    return Answer(.conditionsOfUseNotSatisfied)
                }
                TLV(tag: .applicationTransactionCounter, value: c.atcBytes).encode(into: &value)
                TLV(tag: .applicationCryptogram, value: c.ac).encode(into: &value)
                TLV(tag: .cryptogramInformationData, value: [c.cid]).encode(into: &value)
                TLV(tag: .issuerApplicationData, value: app.issuerApplicationData).encode(into: &value)
                if app.oda?.method == .fdda { Self.signForFDDA(c, values: values, app: app, into: &value) }
            }
            // The profile's GPO objects, the first CTQ replaced (or one added) when the reader
            // asks for a CVM and the profile says what the card then wants.
            var replacement: TLV?
            if let ctq = app.cardTransactionQualifiersWhenCVMRequired,
               let ttq = values[.terminalTransactionQualifiers], ttq.count >= 2, ttq[1] & 0x40 != 0 {
                replacement = TLV(tag: .cardTransactionQualifiers, value: ctq)
            }
            for o in image.gpoObjects[index] {
                if let r = replacement, o.tag == .cardTransactionQualifiers {
                    r.encode(into: &value)
                    replacement = nil
                } else {
                    value += o.encoded
                }
            }
            replacement?.encode(into: &value)
            selection = app.cryptogram == .generateAC ? .initiated(app: index) : .completed(app: index)
            return Answer(TLV(tag: .responseMessageTemplateFormat2, value: value).encoded)
        }
    }

    func readRecord(_ apdu: CommandAPDU, image: CardImage) -> Answer {
        let number = apdu.p1Parameter, sfi = apdu.p2Parameter >> 3
        guard number != 0, apdu.p2Parameter & 0x07 == 0x04, (1...30).contains(sfi) else { return Answer(.incorrectP1P2) }
        let index: Int
        switch selection {
        case .idle, .selected: return Answer(.conditionsOfUseNotSatisfied)
        case .directory: return Answer(.fileNotFound)
        case .initiated(let a), .completed(let a): index = a
        }
        let records = image.records[index]
        guard records.contains(where: { $0.sfi == sfi }) else { return Answer(.fileNotFound) }
        guard let record = records.first(where: { $0.sfi == sfi && $0.number == number }) else {
            return Answer(.recordNotFound)
        }
        return Answer(record.bytes)
    }

    mutating func generateAC(_ apdu: CommandAPDU, profile: CardProfile, image: CardImage) -> Answer {
        let p1 = apdu.p1Parameter
        guard apdu.p2Parameter == 0, p1 & 0x2F == 0, p1 & 0xC0 != 0xC0 else { return Answer(.incorrectP1P2) }
        let index: Int
        switch selection {
        case .idle: return Answer(.conditionsOfUseNotSatisfied)
        case .directory: return Answer(.instructionNotSupported)
        case .selected(let a), .completed(let a):
            guard profile.applications[a].cryptogram == .generateAC else { return Answer(.instructionNotSupported) }
            return Answer(.conditionsOfUseNotSatisfied)
        case .initiated(let a): index = a
        }
        let app = profile.applications[index]
        guard app.cryptogram == .generateAC else { return Answer(.instructionNotSupported) }
        guard let cdol = image.cdols[index] else { return Answer(.noPreciseDiagnosis) }
        guard !apdu.data.isEmpty, let values = cdol.split(apdu.data) else { return Answer(.wrongLength) }
        guard let c = makeCryptogram(app: index, values: values, requested: p1 & 0xC0, profile: profile, image: image) else {
            return Answer(.conditionsOfUseNotSatisfied)
        }
        selection = .completed(app: index)
        // A card that signs answers in format 2 (the signature is a data object), whatever its usual format.
        if p1 & 0x10 != 0, app.oda?.method == .cda,
           let answer = signedForCDA(c, values: values, cdolData: apdu.data, app: app) {
            return Answer(answer)
        }
        switch app.generateACFormat {
        case .format1:
            return Answer(TLV(tag: .responseMessageTemplateFormat1,
                              value: [c.cid] + c.atcBytes + c.ac + app.issuerApplicationData).encoded)
        case .format2:
            return Answer(TLV(tag: .responseMessageTemplateFormat2, children: [
                TLV(tag: .cryptogramInformationData, value: [c.cid]),
                TLV(tag: .applicationTransactionCounter, value: c.atcBytes),
                TLV(tag: .applicationCryptogram, value: c.ac),
                TLV(tag: .issuerApplicationData, value: app.issuerApplicationData),
            ]).encoded)
        }
    }

    /// INTERNAL AUTHENTICATE (Book 3 §6.5.9): a DDA card signs the DDOL data, after GPO and
    /// before GENERATE AC; any other card does not know the command.
    func internalAuthenticate(_ apdu: CommandAPDU, profile: CardProfile) -> Answer {
        guard apdu.p1Parameter == 0, apdu.p2Parameter == 0 else { return Answer(.incorrectP1P2) }
        guard case .initiated(let index) = selection else { return Answer(.conditionsOfUseNotSatisfied) }
        let app = profile.applications[index]
        guard let oda = app.oda, oda.method == .dda else { return Answer(.instructionNotSupported) }
        guard !apdu.data.isEmpty else { return Answer(.wrongLength) }
        if !oda.ddol.isEmpty, let ddol = try? DataObjectList(bytes: oda.ddol), ddol.dataLength != apdu.data.count {
            return Answer(.wrongLength)
        }
        return Answer(CardState.signedForDDA(ddolData: apdu.data, atc: atcs[index], app: app))
    }

    func getData(_ apdu: CommandAPDU, profile: CardProfile) -> Answer {
        guard let index = selection.application else { return Answer(.conditionsOfUseNotSatisfied) }
        let tag = apdu.p1Parameter == 0 ? Tag(UInt32(apdu.p2Parameter))
                                        : Tag(UInt32(apdu.p1Parameter) << 8 | UInt32(apdu.p2Parameter))
        if tag == .applicationTransactionCounter {
            let atc = atcs[index]
            return Answer(TLV(tag: tag, value: [UInt8(atc >> 8), UInt8(atc & 0xFF)]).encoded)
        }
        guard let object = profile.applications[index].getDataObjects.first(where: { $0.tag == tag }) else {
            return Answer(.referencedDataNotFound)
        }
        return Answer(object.tlv.encoded)
    }

    mutating func getResponse(_ apdu: CommandAPDU, behaviour: CardBehaviour) -> [UInt8] {
        guard apdu.p1Parameter == 0, apdu.p2Parameter == 0 else { return StatusWord.incorrectP1P2.bytes }
        guard !pending.isEmpty else { return StatusWord.conditionsOfUseNotSatisfied.bytes }
        guard apdu.expectedResponseLength > 0 else { return StatusWord.wrongLength.bytes }
        let le = apdu.expectedResponseLength
        if le < pending.count {
            let out = Array(pending.prefix(le))
            pending.removeFirst(le)
            return out + [0x61, UInt8(truncatingIfNeeded: min(pending.count, 256))]
        }
        if le > pending.count && behaviour.demandsExactLe {
            return [0x6C, UInt8(truncatingIfNeeded: pending.count)]
        }
        let out = pending
        pending = []
        return out + StatusWord.success.bytes
    }

    // MARK: Cryptogram

    struct Cryptogram {
        var cid: UInt8
        var atcBytes: [UInt8]
        var ac: [UInt8]
    }

    /// Increments the application's ATC and computes the cryptogram over the terminal values the
    /// card received. `requested`: P1 bits 8-7 (00 AAC, 40 TC, 80 ARQC). Nil when the ATC is spent.
    mutating func makeCryptogram(app index: Int, values: [Tag: [UInt8]], requested: UInt8,
                                 profile: CardProfile, image: CardImage) -> Cryptogram? {
        guard atcs[index] < 0xFFFF, let masterKey = image.iccMasterKeys[index] else { return nil }
        atcs[index] += 1
        let atc = atcs[index]
        let app = profile.applications[index]
        // An online-only card: a TC request gets an ARQC; the issuer's offline decline an AAC.
        let cid: UInt8 = profile.behaviour.declinesOffline || requested == 0x00 ? 0x00 : 0x80
        let data = ApplicationCryptogram.transactionData(values, aip: app.aip, atc: atc,
                                                         issuerApplicationData: app.issuerApplicationData)
        let ac = ApplicationCryptogram.compute(iccMasterKey: masterKey, atc: atc, data: data)
        return Cryptogram(cid: cid, atcBytes: [UInt8(atc >> 8), UInt8(atc & 0xFF)], ac: ac)
    }
}

extension StatusWord {
    var bytes: [UInt8] { [sw1, sw2] }
}
