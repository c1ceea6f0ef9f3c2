import EMVKernel
import BERTLV
import PaymentRules
import ISO7816
import EMVDisplay

/// Explanations of APDUs in text and JSON, shared by `apdu decode` and trace views.
enum APDUExplainer {
    // MARK: Commands

    static func claMeaning(_ cla: UInt8) -> String {
        if cla == 0xFF { return "PC/SC reader pseudo-APDU" }
        if cla & 0x80 != 0 {
            return cla & 0x0C != 0 ? "proprietary (EMV), secure messaging" : "proprietary (EMV payment command)"
        }
        var s = "interindustry"
        if cla & 0x10 != 0 { s += ", command chaining (not the last)" }
        if cla & 0x0C != 0 { s += ", secure messaging" }
        if cla & 0x03 != 0 { s += ", logical channel \(cla & 0x03)" }
        return s
    }

    static func leMeaning(_ c: CommandAPDU) -> String? {
        switch c.expectedResponseLength {
        case -1: return nil
        case 256 where !c.needsExtendedLength: return "00 (256: as many bytes as the card has, up to 256)"
        case 65536: return "0000 (65536: as many bytes as the card has)"
        case let n: return "\(c.needsExtendedLength ? Hex.encode([UInt8(n >> 8), UInt8(n & 0xFF)]) : Hex.encode([UInt8(n)])) (\(n) bytes)"
        }
    }

    /// The command data decoded as TLV, when this instruction carries TLV (GET PROCESSING
    /// OPTIONS' 83 template, PUT DATA-like objects) or when it is unmistakably TLV.
    static func dataTLV(_ c: CommandAPDU) -> [TLV]? {
        guard !c.data.isEmpty else { return nil }
        switch (c.instructionClass & 0xF0, c.instructionCode) {
        case (_, 0xA4), (0x80, 0xAE), (_, 0x20), (_, 0x88), (_, 0x82), (0x80, 0x2A), (0x80, 0xEA):
            return nil  // DF names, CDOL data, PINs, authentication data: not TLV.
        default:
            guard let objects = try? BERTLV.parse(c.data, rules: .strict), !objects.isEmpty,
                  objects.allSatisfy({ EMVTagDictionary.info($0.tag) != nil }) else { return nil }
            return objects
        }
    }

    static func dataMeaning(_ c: CommandAPDU) -> String? {
        switch c.instructionCode {
        case 0xA4 where c.p1Parameter == 0x04:
            let tlv = TLV(tag: .dedicatedFileName, value: c.data)
            return EMVValueDecoder.decode(tlv)?.text
        case 0xAE where c.instructionClass & 0xF0 == 0x80:
            return "CDOL data (values of the card's CDOL, concatenated without tags)"
        case 0x20:
            return "PIN block (not shown)"
        default:
            return nil
        }
    }

    /// VERIFY and CHANGE REFERENCE DATA carry PIN blocks: their data is never shown.
    static func isSecret(_ c: CommandAPDU) -> Bool { c.instructionCode == 0x20 || c.instructionCode == 0x24 }

    /// Command data that is not TLV, as hex, with any PAN in it masked (``SensitiveData``).
    static func plainData(_ c: CommandAPDU) -> String {
        SensitiveData.maskedHex(c.data)
    }

    static func text(_ c: CommandAPDU) -> String {
        var s = "Command APDU, case \(c.isoCase) (\(c.needsExtendedLength ? "extended" : "short") length): \(summary(c))\n"
        s += "  CLA  \(Hex.encode([c.instructionClass]))  \(claMeaning(c.instructionClass))\n"
        s += "  INS  \(Hex.encode([c.instructionCode]))  \(c.instructionName)\n"
        let meanings = c.parameterMeanings
        if meanings.isEmpty {
            s += "  P1   \(Hex.encode([c.p1Parameter]))\n"
            s += "  P2   \(Hex.encode([c.p2Parameter]))\n"
        } else {
            for m in meanings { s += "  \(m)\n" }
        }
        if let tagName = getDataName(c) { s += "         \(tagName)\n" }
        if !c.data.isEmpty {
            let lc = c.needsExtendedLength
                ? Hex.encode([0, UInt8(c.data.count >> 8), UInt8(c.data.count & 0xFF)]) : Hex.encode([UInt8(c.data.count)])
            s += "  Lc   \(lc) (\(c.data.count) byte\(c.data.count == 1 ? "" : "s"))\n"
            if isSecret(c) {
                s += "  Data (not shown)\n"
            } else if let tlv = dataTLV(c) {
                s += "  Data (TLV):\n"
                s += TLVRender.text(tlv, indent: 2)
            } else {
                s += "  Data \(plainData(c))\n"
                if let m = dataMeaning(c) { s += "       \(m)\n" }
            }
        }
        if let le = leMeaning(c) { s += "  Le   \(le)\n" }
        return s
    }

    static func summary(_ c: CommandAPDU) -> String {
        var s = c.summary
        if let name = getDataName(c) { s += " (\(name))" }
        return s
    }

    static func getDataName(_ c: CommandAPDU) -> String? {
        guard c.instructionCode == 0xCA, c.instructionClass & 0xF0 != 0xF0 else { return nil }
        let tag = Tag(UInt32(c.p1Parameter) << 8 | UInt32(c.p2Parameter))
        return EMVTagDictionary.info(tag)?.name
    }

    static func json(_ c: CommandAPDU) -> JSONValue {
        var d: [String: JSONValue] = [
            "kind": .string("command"),
            "case": .int(c.isoCase),
            "extended": .bool(c.needsExtendedLength),
            "summary": .string(summary(c)),
            "cla": .string(Hex.encode([c.instructionClass])),
            "claMeaning": .string(claMeaning(c.instructionClass)),
            "ins": .string(Hex.encode([c.instructionCode])),
            "instruction": .string(c.instructionName),
            "p1": .string(Hex.encode([c.p1Parameter])),
            "p2": .string(Hex.encode([c.p2Parameter])),
            "parameters": .array(c.parameterMeanings.map(JSONValue.string)),
            "le": c.expectedResponseLength == -1 ? .null : .int(c.expectedResponseLength),
        ]
        if !c.data.isEmpty {
            d["lc"] = .int(c.data.count)
            if isSecret(c) {
                d["redacted"] = .bool(true)
            } else {
                if let tlv = dataTLV(c) {
                    d["tlv"] = TLVRender.json(tlv)
                    // The bytes, masked by the one policy (sensitive tags, PANs by content).
                    if tlv.flattened.contains(where: { EMVValueDecoder.isSensitive($0.tag) }) { d["redacted"] = .bool(true) }
                    d["data"] = .string(SensitiveData.displayHex(c.data))
                } else {
                    d["data"] = .string(plainData(c))
                }
                if let m = dataMeaning(c) { d["dataMeaning"] = .string(m) }
            }
        } else {
            d["lc"] = .null
        }
        return .object(d)
    }

    // MARK: Responses

    static func text(_ r: ResponseAPDU) -> String {
        var s = "Response APDU: \(r.data.count) data byte\(r.data.count == 1 ? "" : "s"), status \(r.statusWord)\n"
        if !r.data.isEmpty {
            switch parseData(r.data) {
            case .success(let tlv):
                s += "  Data (TLV):\n"
                s += TLVRender.text(tlv, indent: 2)
            case .failure(let error):
                s += "  Data \(SensitiveData.maskedHex(r.data))\n"
                s += "       (not BER-TLV: \(error))\n"
            }
        }
        s += "  SW1 SW2  \(r.statusWord.hex)  \(r.statusWord.name)\n"
        return s
    }

    static func json(_ r: ResponseAPDU) -> JSONValue {
        var d: [String: JSONValue] = [
            "kind": .string("response"),
            "length": .int(r.data.count),
            "sw": .string(r.statusWord.hex),
            "status": .string(r.statusWord.name),
            "success": .bool(r.statusWord.isSuccess),
        ]
        if !r.data.isEmpty {
            switch parseData(r.data) {
            case .success(let tlv):
                d["tlv"] = TLVRender.json(tlv)
                if tlv.flattened.contains(where: { EMVValueDecoder.isSensitive($0.tag) }) { d["redacted"] = .bool(true) }
                d["data"] = .string(SensitiveData.displayHex(r.data))
            case .failure(let error):
                d["data"] = .string(SensitiveData.maskedHex(r.data))
                d["tlvError"] = .string(error.description)
            }
        }
        return .object(d)
    }

    static func parseData(_ data: [UInt8]) -> Result<[TLV], TLVError> {
        do { return .success(try BERTLV.parse(data)) } catch { return .failure(error) }
    }
}
