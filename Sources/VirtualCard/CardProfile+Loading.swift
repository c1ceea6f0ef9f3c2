import BERTLV
import Foundation
import ISO7816

extension CardProfile {
    /// Loads a user profile file (JSON) and checks it makes a card.
    ///
    /// Throws `.unreadableFile`, `.malformedJSON`, `.invalidProfile` or `.inconsistentProfile`.
    public static func load(contentsOf path: String) throws(VirtualCardError) -> CardProfile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw VirtualCardError(.unreadableFile, "cannot read the profile file \(path)")
        }
        return try decode(json: Array(data), source: path)
    }

    /// Decodes a profile from JSON text and checks it makes a card.
    public static func decode(json: some Collection<UInt8>, source: String = "profile") throws(VirtualCardError) -> CardProfile {
        let profile: CardProfile
        do {
            profile = try JSONDecoder().decode(CardProfile.self, from: Data(json))
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty,
               (try? JSONSerialization.jsonObject(with: Data(json), options: [.fragmentsAllowed])) != nil {
                throw VirtualCardError(.invalidProfile, "\(source): \(context.debugDescription)")
            }
            throw describe(error, source: source)
        } catch {
            throw VirtualCardError(.malformedJSON, "\(source): not JSON")
        }
        try profile.validate()
        return profile
    }

    /// Decodes a profile from JSON text (see ``decode(json:source:)``).
    public static func decode(jsonText: String, source: String = "profile") throws(VirtualCardError) -> CardProfile {
        try decode(json: Array(jsonText.utf8), source: source)
    }

    /// The profile as JSON text (pretty, keys sorted), loadable with ``load(contentsOf:)``.
    public var jsonText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    private static func describe(_ error: DecodingError, source: String) -> VirtualCardError {
        func path(_ context: DecodingError.Context) -> String {
            let p = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return p.isEmpty ? "top level" : String(p.dropFirst(p.hasPrefix(".") ? 1 : 0))
        }
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return VirtualCardError(.malformedJSON, "\(source): not JSON (\(context.debugDescription))")
        case .dataCorrupted(let context):
            return VirtualCardError(.invalidProfile, "\(source): \(path(context)): \(context.debugDescription)")
        case .keyNotFound(let key, let context):
            let at = context.codingPath.isEmpty ? "" : " in \(path(context))"
            return VirtualCardError(.invalidProfile, "\(source): missing field '\(key.stringValue)'\(at)")
        case .typeMismatch(let type, let context):
            return VirtualCardError(.invalidProfile, "\(source): \(path(context)): expected \(type)")
        case .valueNotFound(let type, let context):
            return VirtualCardError(.invalidProfile, "\(source): \(path(context)): expected \(type), found null")
        @unknown default:
            return VirtualCardError(.invalidProfile, "\(source): not a card profile")
        }
    }

    /// Checks the profile makes a card: sizes, DOLs, AFL against the records, PANs (Luhn, and
    /// the same in 5A and 57), behaviour numbers. Throws `.inconsistentProfile` naming the field.
    public func validate() throws(VirtualCardError) {
        func fail(_ reason: String) -> VirtualCardError {
            VirtualCardError(.inconsistentProfile, "profile '\(name)': \(reason)")
        }
        guard !name.isEmpty, !name.contains(where: \.isWhitespace) else { throw fail("the name is empty or has spaces") }
        guard issuerMasterKey.count == 16 else {
            throw fail("issuerMasterKey has \(issuerMasterKey.count) bytes; a double-length 3DES key has 16")
        }
        guard atrHistoricalBytes.count <= 15 else { throw fail("an ATR holds at most 15 historical bytes") }
        guard !applications.isEmpty else { throw fail("no applications") }
        var aids = Set<[UInt8]>()
        for (index, app) in applications.enumerated() {
            let where_ = "application \(index + 1) (\(Hex.encode(app.aid)))"
            guard (5...16).contains(app.aid.count) else { throw fail("\(where_): an AID has 5 to 16 bytes") }
            guard aids.insert(app.aid).inserted else { throw fail("\(where_): the AID appears twice") }
            guard (1...16).contains(app.label.utf8.count), app.label.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
                throw fail("\(where_): the label has 1 to 16 printable ASCII characters")
            }
            if let name = app.preferredName, !(1...16).contains(name.utf8.count) {
                throw fail("\(where_): the preferred name has 1 to 16 characters")
            }
            if let k = app.kernelIdentifier, !(1...8).contains(k.count) {
                throw fail("\(where_): a kernel identifier has 1 to 8 bytes")
            }
            if let e = app.extendedSelection, e.isEmpty || app.aid.count + e.count > 16 {
                throw fail("\(where_): the extended selection has 1 byte or more, and with the AID at most 16")
            }
            if let lang = app.languagePreference,
               lang.isEmpty || lang.utf8.count % 2 != 0 || lang.utf8.count > 8 || !lang.allSatisfy(\.isASCII) {
                throw fail("\(where_): the language preference is 1 to 4 two-letter codes")
            }
            guard app.aip.count == 2 else { throw fail("\(where_): the AIP has 2 bytes") }
            let pdol: DataObjectList
            do { pdol = try DataObjectList(bytes: app.pdol) } catch { throw fail("\(where_): PDOL: \(error.reason)") }
            guard pdol.dataLength <= 252 else { throw fail("\(where_): the PDOL asks for more than 252 bytes") }
            let cdol: DataObjectList
            do { cdol = try DataObjectList(bytes: app.cdol1) } catch { throw fail("\(where_): CDOL1: \(error.reason)") }
            guard cdol.dataLength <= 255 else { throw fail("\(where_): CDOL1 asks for more than 255 bytes") }
            switch app.cryptogram {
            case .generateAC:
                guard !app.cdol1.isEmpty else { throw fail("\(where_): a GENERATE AC application needs a CDOL1") }
            case .getProcessingOptions:
                guard app.gpoFormat == .format2 else {
                    throw fail("\(where_): a cryptogram in the GPO answer needs format 2")
                }
            }
            if let ctq = app.cardTransactionQualifiersWhenCVMRequired, ctq.count != 2 {
                throw fail("\(where_): card transaction qualifiers have 2 bytes")
            }
            guard app.pan.isLuhnValid else { throw fail("\(where_): the PAN \(app.pan) fails the Luhn check") }
            guard app.panSequenceNumber <= 99 else { throw fail("\(where_): the PAN sequence number is 0 to 99") }
            guard app.issuerApplicationData.count <= 32 else { throw fail("\(where_): the IAD has at most 32 bytes") }
            var keys = Set<[UInt8]>()
            for record in app.records {
                guard (1...30).contains(record.sfi) else { throw fail("\(where_): record SFI \(record.sfi) is not 1 to 30") }
                guard record.number >= 1 else { throw fail("\(where_): record number 0 in SFI \(record.sfi)") }
                guard keys.insert([record.sfi, record.number]).inserted else {
                    throw fail("\(where_): SFI \(record.sfi) record \(record.number) appears twice")
                }
                guard record.encoded.count <= 256 - 2 else {
                    throw fail("\(where_): SFI \(record.sfi) record \(record.number) is longer than a short response")
                }
            }
            guard app.afl.count % 4 == 0, app.afl.count <= 252 else {
                throw fail("\(where_): the AFL is 4 bytes per entry")
            }
            for start in stride(from: 0, to: app.afl.count, by: 4) {
                let sfi = app.afl[start] >> 3, first = app.afl[start + 1], last = app.afl[start + 2]
                let oda = app.afl[start + 3]
                guard app.afl[start] & 0x07 == 0, (1...30).contains(sfi), first >= 1, last >= first,
                      Int(oda) <= Int(last) - Int(first) + 1 else {
                    throw fail("\(where_): AFL entry \(Hex.encode(app.afl[start..<(start + 4)])) is malformed")
                }
                for n in first...last where app.record(sfi: sfi, number: n) == nil {
                    throw fail("\(where_): the AFL names SFI \(sfi) record \(n), which the card does not have")
                }
            }
            // The PAN in 5A and 57, wherever they are, is the one the keys belong to.
            let objects = app.records.flatMap { $0.raw == nil ? $0.objects.map(\.tlv) : [] } + app.gpoObjects.map(\.tlv)
            for node in objects.flattened {
                if node.tag == .pan {
                    guard let p = try? PAN(bcd: node.value), p == app.pan else {
                        throw fail("\(where_): the PAN in 5A differs from the application's PAN")
                    }
                } else if node.tag == .track2EquivalentData {
                    guard let t = try? Track2(bytes: node.value), t.pan == app.pan else {
                        throw fail("\(where_): the PAN in track 2 (57) differs from the application's PAN")
                    }
                }
            }
        }
        if let n = behaviour.tearAfterExchange, n < 0 { throw fail("tearAfterExchange is negative") }
        if let n = behaviour.muteAtExchange, n < 1 { throw fail("muteAtExchange counts from 1") }
        guard behaviour.cardTime >= .zero, behaviour.cardTimeByInstruction.values.allSatisfy({ $0 >= .zero }) else {
            throw fail("a card time is negative")
        }
        for script in behaviour.scriptedResponses {
            guard !script.commandPrefix.isEmpty, script.response.count >= 2 else {
                throw fail("a scripted response needs a command prefix and at least SW1 SW2")
            }
        }
    }
}
