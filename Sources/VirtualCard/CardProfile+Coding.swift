import BERTLV
public import PaymentRules
import ISO7816

// The JSON shape of profiles. Hand-written so bytes read as hex strings, optional fields have
// defaults, and a misspelt field is an error instead of being ignored.

struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue; self.intValue = nil }
    init?(intValue: Int) { self.stringValue = "\(intValue)"; self.intValue = intValue }
}

extension Decoder {
    /// Throws for any field not among `keys`.
    func rejectUnknownKeys<K: CodingKey & CaseIterable>(_ keys: K.Type) throws {
        let container = try container(keyedBy: AnyCodingKey.self)
        let known = Set(K.allCases.map(\.stringValue))
        for key in container.allKeys where !known.contains(key.stringValue) {
            throw DecodingError.dataCorrupted(.init(
                codingPath: codingPath + [key],
                debugDescription: "unknown field '\(key.stringValue)' (known: \(K.allCases.map(\.stringValue).joined(separator: ", ")))"))
        }
    }
}

extension KeyedDecodingContainer {
    func hex(_ key: Key) throws -> [UInt8] {
        let text = try decode(String.self, forKey: key)
        do {
            return try Hex.decode(text)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "not hex: \(error.reason)")
        }
    }

    func hexIfPresent(_ key: Key) throws -> [UInt8]? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        return try hex(key)
    }

    func tag(_ key: Key) throws -> Tag {
        let bytes = try hex(key)
        guard let tag = Tag(bytes: bytes), let (read, end) = try? BERTLV.readTag(bytes[...], at: 0),
              end == bytes.count, read == tag else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self,
                                                   debugDescription: "not a BER-TLV tag of 1 to 4 bytes")
        }
        return tag
    }

    /// An integer of type `T`, range-checked here (so an out-of-range number names its field).
    func integer<T: FixedWidthInteger>(_ key: Key, as type: T.Type) throws -> T? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        let value = try decode(Double.self, forKey: key)
        guard let exact = T(exactly: value) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self,
                                                   debugDescription: "a whole number from \(T.min) to \(T.max)")
        }
        return exact
    }

    func milliseconds(_ key: Key) throws -> Duration? {
        guard let ms = try decodeIfPresent(Double.self, forKey: key) else { return nil }
        guard ms.isFinite, ms >= 0, ms <= 3_600_000 else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self,
                                                   debugDescription: "a time in milliseconds from 0 to 3600000")
        }
        return .nanoseconds(Int64((ms * 1_000_000).rounded()))
    }
}

extension Duration {
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}

extension CardProfile {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, summary, atrHistoricalBytes, ppse, issuerMasterKey, atc, applications, behaviour
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        summary = try c.decodeIfPresent(String.self, forKey: .summary) ?? ""
        atrHistoricalBytes = try c.hexIfPresent(.atrHistoricalBytes) ?? []
        hasPPSE = try c.decodeIfPresent(Bool.self, forKey: .ppse) ?? true
        issuerMasterKey = try c.hex(.issuerMasterKey)
        atc = try c.integer(.atc, as: UInt16.self) ?? 0
        applications = try c.decode([CardApplication].self, forKey: .applications)
        behaviour = try c.decodeIfPresent(CardBehaviour.self, forKey: .behaviour) ?? CardBehaviour()
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(summary, forKey: .summary)
        if !atrHistoricalBytes.isEmpty { try c.encode(Hex.encode(atrHistoricalBytes), forKey: .atrHistoricalBytes) }
        try c.encode(hasPPSE, forKey: .ppse)
        try c.encode(Hex.encode(issuerMasterKey), forKey: .issuerMasterKey)
        try c.encode(atc, forKey: .atc)
        try c.encode(applications, forKey: .applications)
        if behaviour != CardBehaviour() { try c.encode(behaviour, forKey: .behaviour) }
    }
}

extension CardApplication {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case aid, label, preferredName, priority, kernelIdentifier, extendedSelection, languagePreference, pdol
        case fciIssuerDiscretionaryData, aip, afl, gpoFormat, gpoObjects, cryptogram, cdol1, generateACFormat
        case pan, panSequenceNumber, issuerApplicationData, cardTransactionQualifiersWhenCVMRequired
        case records, getDataObjects, oda
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        aid = try c.hex(.aid)
        label = try c.decode(String.self, forKey: .label)
        preferredName = try c.decodeIfPresent(String.self, forKey: .preferredName)
        priority = try c.integer(.priority, as: UInt8.self)
        kernelIdentifier = try c.hexIfPresent(.kernelIdentifier)
        extendedSelection = try c.hexIfPresent(.extendedSelection)
        languagePreference = try c.decodeIfPresent(String.self, forKey: .languagePreference)
        pdol = try c.hexIfPresent(.pdol) ?? []
        fciIssuerDiscretionaryData = try c.decodeIfPresent([CardDataObject].self, forKey: .fciIssuerDiscretionaryData) ?? []
        aip = try c.hex(.aip)
        afl = try c.hexIfPresent(.afl) ?? []
        gpoFormat = try c.decodeIfPresent(ResponseFormat.self, forKey: .gpoFormat) ?? .format2
        gpoObjects = try c.decodeIfPresent([CardDataObject].self, forKey: .gpoObjects) ?? []
        cryptogram = try c.decode(CryptogramSource.self, forKey: .cryptogram)
        cdol1 = try c.hexIfPresent(.cdol1) ?? []
        generateACFormat = try c.decodeIfPresent(ResponseFormat.self, forKey: .generateACFormat) ?? .format2
        let digits = try c.decode(String.self, forKey: .pan)
        guard let pan = PAN(digits) else {
            throw DecodingError.dataCorruptedError(forKey: .pan, in: c, debugDescription: "not a PAN (12 to 19 digits)")
        }
        self.pan = pan
        let psn = try c.integer(.panSequenceNumber, as: UInt8.self) ?? 0
        guard psn <= 99 else {
            throw DecodingError.dataCorruptedError(forKey: .panSequenceNumber, in: c,
                                                   debugDescription: "a PAN sequence number is 0 to 99")
        }
        panSequenceNumber = psn
        issuerApplicationData = try c.hexIfPresent(.issuerApplicationData) ?? []
        cardTransactionQualifiersWhenCVMRequired = try c.hexIfPresent(.cardTransactionQualifiersWhenCVMRequired)
        records = try c.decodeIfPresent([CardRecord].self, forKey: .records) ?? []
        getDataObjects = try c.decodeIfPresent([CardDataObject].self, forKey: .getDataObjects) ?? []
        oda = try c.decodeIfPresent(CardODA.self, forKey: .oda)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Hex.encode(aid), forKey: .aid)
        try c.encode(label, forKey: .label)
        try c.encodeIfPresent(preferredName, forKey: .preferredName)
        try c.encodeIfPresent(priority, forKey: .priority)
        try c.encodeIfPresent(kernelIdentifier.map { Hex.encode($0) }, forKey: .kernelIdentifier)
        try c.encodeIfPresent(extendedSelection.map { Hex.encode($0) }, forKey: .extendedSelection)
        try c.encodeIfPresent(languagePreference, forKey: .languagePreference)
        if !pdol.isEmpty { try c.encode(Hex.encode(pdol), forKey: .pdol) }
        if !fciIssuerDiscretionaryData.isEmpty { try c.encode(fciIssuerDiscretionaryData, forKey: .fciIssuerDiscretionaryData) }
        try c.encode(Hex.encode(aip), forKey: .aip)
        try c.encode(Hex.encode(afl), forKey: .afl)
        try c.encode(gpoFormat, forKey: .gpoFormat)
        if !gpoObjects.isEmpty { try c.encode(gpoObjects, forKey: .gpoObjects) }
        try c.encode(cryptogram, forKey: .cryptogram)
        if !cdol1.isEmpty { try c.encode(Hex.encode(cdol1), forKey: .cdol1) }
        try c.encode(generateACFormat, forKey: .generateACFormat)
        try c.encode(pan.digits, forKey: .pan)
        try c.encode(panSequenceNumber, forKey: .panSequenceNumber)
        try c.encode(Hex.encode(issuerApplicationData), forKey: .issuerApplicationData)
        try c.encodeIfPresent(cardTransactionQualifiersWhenCVMRequired.map { Hex.encode($0) },
                              forKey: .cardTransactionQualifiersWhenCVMRequired)
        try c.encode(records, forKey: .records)
        if !getDataObjects.isEmpty { try c.encode(getDataObjects, forKey: .getDataObjects) }
        try c.encodeIfPresent(oda, forKey: .oda)
    }
}

extension CardRecord {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case sfi, record, objects, hex
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let sfi = try c.integer(.sfi, as: UInt8.self) else {
            throw DecodingError.keyNotFound(CodingKeys.sfi, .init(codingPath: c.codingPath, debugDescription: "no sfi"))
        }
        guard let number = try c.integer(.record, as: UInt8.self) else {
            throw DecodingError.keyNotFound(CodingKeys.record, .init(codingPath: c.codingPath, debugDescription: "no record"))
        }
        self.sfi = sfi
        self.number = number
        objects = try c.decodeIfPresent([CardDataObject].self, forKey: .objects) ?? []
        raw = try c.hexIfPresent(.hex)
        if raw != nil && !objects.isEmpty {
            throw DecodingError.dataCorruptedError(forKey: .hex, in: c,
                                                   debugDescription: "a record has either objects or hex, not both")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sfi, forKey: .sfi)
        try c.encode(number, forKey: .record)
        if let raw {
            try c.encode(Hex.encode(raw), forKey: .hex)
        } else {
            try c.encode(objects, forKey: .objects)
        }
    }
}

extension CardDataObject {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case tag, hex, text, objects
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let tag = try c.tag(.tag)
        let given = [c.contains(.hex), c.contains(.text), c.contains(.objects)].filter { $0 }.count
        guard given == 1 else {
            throw DecodingError.dataCorruptedError(forKey: .tag, in: c,
                                                   debugDescription: "tag \(tag.hex) needs exactly one of hex, text, objects")
        }
        if c.contains(.objects) {
            guard tag.isConstructed else {
                throw DecodingError.dataCorruptedError(forKey: .objects, in: c,
                                                       debugDescription: "tag \(tag.hex) is primitive; it cannot hold objects")
            }
            self = CardDataObject(tag, children: try c.decode([CardDataObject].self, forKey: .objects))
        } else if c.contains(.text) {
            let text = try c.decode(String.self, forKey: .text)
            guard text.unicodeScalars.allSatisfy({ $0.isASCII }) else {
                throw DecodingError.dataCorruptedError(forKey: .text, in: c, debugDescription: "text must be ASCII")
            }
            self = CardDataObject(tag, text: text)
        } else {
            self = CardDataObject(tag, try c.hex(.hex))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(tag.hex, forKey: .tag)
        if let children {
            try c.encode(children, forKey: .objects)
        } else if let format = EMVTagDictionary.info(tag)?.format, [.a, .an, .ans].contains(format),
                  value.allSatisfy({ (0x20...0x7E).contains($0) }) {
            try c.encode(String(decoding: value, as: UTF8.self), forKey: .text)
        } else {
            try c.encode(Hex.encode(value), forKey: .hex)
        }
    }
}

extension CardBehaviour {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case answersThroughGetResponse, demandsExactLe, declinesOffline, cardTimeMs, cardTimeMsByInstruction
        case tearAfterExchange, muteAtExchange, scriptedResponses
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        answersThroughGetResponse = try c.decodeIfPresent(Bool.self, forKey: .answersThroughGetResponse) ?? false
        demandsExactLe = try c.decodeIfPresent(Bool.self, forKey: .demandsExactLe) ?? false
        declinesOffline = try c.decodeIfPresent(Bool.self, forKey: .declinesOffline) ?? false
        cardTime = try c.milliseconds(.cardTimeMs) ?? .zero
        var byInstruction: [UInt8: Duration] = [:]
        if let table = try c.decodeIfPresent([String: Double].self, forKey: .cardTimeMsByInstruction) {
            for (key, ms) in table {
                guard let ins = try? Hex.decode(key), ins.count == 1 else {
                    throw DecodingError.dataCorruptedError(forKey: .cardTimeMsByInstruction, in: c,
                                                           debugDescription: "'\(key)' is not one instruction byte in hex")
                }
                guard ms.isFinite, ms >= 0, ms <= 3_600_000 else {
                    throw DecodingError.dataCorruptedError(forKey: .cardTimeMsByInstruction, in: c,
                                                           debugDescription: "a time in milliseconds from 0 to 3600000")
                }
                byInstruction[ins[0]] = .nanoseconds(Int64((ms * 1_000_000).rounded()))
            }
        }
        cardTimeByInstruction = byInstruction
        tearAfterExchange = try c.integer(.tearAfterExchange, as: Int.self)
        muteAtExchange = try c.integer(.muteAtExchange, as: Int.self)
        scriptedResponses = try c.decodeIfPresent([ScriptedResponse].self, forKey: .scriptedResponses) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if answersThroughGetResponse { try c.encode(true, forKey: .answersThroughGetResponse) }
        if demandsExactLe { try c.encode(true, forKey: .demandsExactLe) }
        if declinesOffline { try c.encode(true, forKey: .declinesOffline) }
        if cardTime != .zero { try c.encode(cardTime.milliseconds, forKey: .cardTimeMs) }
        if !cardTimeByInstruction.isEmpty {
            var table: [String: Double] = [:]
            for (ins, time) in cardTimeByInstruction { table[Hex.encode([ins])] = time.milliseconds }
            try c.encode(table, forKey: .cardTimeMsByInstruction)
        }
        try c.encodeIfPresent(tearAfterExchange, forKey: .tearAfterExchange)
        try c.encodeIfPresent(muteAtExchange, forKey: .muteAtExchange)
        if !scriptedResponses.isEmpty { try c.encode(scriptedResponses, forKey: .scriptedResponses) }
    }
}

extension ScriptedResponse {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case command, response
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        commandPrefix = try c.hex(.command)
        response = try c.hex(.response)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Hex.encode(commandPrefix), forKey: .command)
        try c.encode(Hex.encode(response), forKey: .response)
    }
}
