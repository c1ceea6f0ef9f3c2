import BERTLV
public import PaymentRules
import Foundation
import ISO7816
import StrictJSON
#if canImport(Glibc)
import Glibc
#endif

extension CardProfile {
    /// Loads a user profile file (JSON) and checks it makes a card.
    ///
    /// Throws `.unreadableFile`, `.malformedJSON`, `.invalidProfile` or `.inconsistentProfile`.
    public static func load(contentsOf path: String) throws(VirtualCardError) -> CardProfile {
        // A device, a FIFO or a socket is no profile file, whatever it holds: `/dev/zero` never
        // ends and a FIFO may block, so they are refused by their type before any read.
        if let kind = nonRegularKind(path) {
            throw VirtualCardError(.unreadableFile, "cannot read the profile file \(path): it is \(kind), not a regular file (a profile is a JSON file: see `tapemu cards schema`)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            var isDirectory: ObjCBool = false
            let why = !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) ? "no such file"
                : isDirectory.boolValue ? "it is a directory" : "permission denied or an I/O error"
            throw VirtualCardError(.unreadableFile, "cannot read the profile file \(path): \(why)")
        }
        return try decode(json: Array(data), source: path)
    }

    /// What `path` is when it exists and is neither a regular file nor a directory (symbolic
    /// links followed): "a character device", "a block device", "a FIFO", "a socket".
    static func nonRegularKind(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        switch st.st_mode & S_IFMT {
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        default: return nil
        }
    }

    /// Decodes a profile from JSON text and checks it makes a card.
    public static func decode(json: some Collection<UInt8>, source: String = "profile") throws(VirtualCardError) -> CardProfile {
        let profile: CardProfile
        // A profile is a few levels deep; thousands of brackets are no profile, and the decoder
        // would only say "not valid JSON".
        let depth = maximumNesting(json)
        guard depth <= maximumProfileNesting else {
            throw VirtualCardError(.malformedJSON, "\(source): not a card profile: arrays or objects nested \(depth) deep (a profile needs about 6, at most \(maximumProfileNesting) are read)")
        }
        // The one strict reader (StrictJSON): a key given twice is refused, not read as whichever
        // copy Foundation's decoder keeps, and 1.0 is not an integer.
        do throws(StrictJSONError) {
            profile = try StrictJSONReader.decode(CardProfile.self, from: json, maxDepth: maximumProfileNesting)
        } catch {
            switch error {
            case .syntax(let e):
                if let key = e.duplicateKey {
                    throw VirtualCardError(.malformedJSON, "\(source): the key \"\(key)\" appears more than once in one object (at byte \(e.offset))")
                }
                throw VirtualCardError(.malformedJSON, "\(source): not JSON (\(e))")
            case .shape(let error):
                // Valid JSON, not a profile.
                if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                    throw VirtualCardError(.invalidProfile, "\(source): \(context.debugDescription)")
                }
                throw describe(error, source: source)
            }
        }
        if let (path, reason) = profile.firstInconsistency() {
            throw VirtualCardError(.inconsistentProfile, "\(source): \(path): \(reason)")
        }
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

    static let maximumProfileNesting = 64

    /// How deep `[` and `{` nest in JSON text (outside strings).
    static func maximumNesting(_ json: some Collection<UInt8>) -> Int {
        var depth = 0, deepest = 0, inString = false, escaped = false
        for b in json {
            if inString {
                if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch b {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                deepest = max(deepest, depth)
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return deepest
    }

    /// A Swift type as the JSON kind a profile author knows: "a JSON object", not
    /// `Dictionary<String, Any>`.
    private static func jsonKind(_ type: Any.Type) -> String {
        let name = String(describing: type)
        if name.hasPrefix("Dictionary") || name.hasPrefix("[String") { return "a JSON object" }
        if name.hasPrefix("Array") || name.hasPrefix("[") { return "a JSON array" }
        if name == "String" || name == "Substring" { return "a string" }
        if name == "Bool" { return "true or false" }
        if ["Int", "UInt8", "UInt16", "UInt32", "Int64", "UInt64", "Double"].contains(name) { return "a number" }
        return "a value of another kind"
    }

    private static func describe(_ error: DecodingError, source: String) -> VirtualCardError {
        func path(_ context: DecodingError.Context) -> String {
            let p = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return p.isEmpty ? "top level" : String(p.dropFirst(p.hasPrefix(".") ? 1 : 0))
        }
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            let underlying = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            let why = underlying ?? context.debugDescription
            if why.localizedCaseInsensitiveContains("nest") || why.localizedCaseInsensitiveContains("depth") {
                return VirtualCardError(.malformedJSON, "\(source): not a JSON profile: arrays or objects nested too deeply (\(why))")
            }
            return VirtualCardError(.malformedJSON, "\(source): not JSON (\(why))")
        case .dataCorrupted(let context):
            var why = context.debugDescription
            // "Cannot initialize CryptogramSource from invalid String value x": say which values are.
            if why.hasPrefix("Cannot initialize "), let value = why.components(separatedBy: "invalid String value ").last {
                why = "'\(value)' is not one of the values this field takes"
                if context.codingPath.last?.stringValue == "cryptogram" { why += " (gpo, generateAC)" }
            }
            return VirtualCardError(.invalidProfile, "\(source): \(path(context)): \(why)")
        case .keyNotFound(let key, let context):
            let at = context.codingPath.isEmpty ? "" : " in \(path(context))"
            return VirtualCardError(.invalidProfile, "\(source): missing field '\(key.stringValue)'\(at)")
        case .typeMismatch(let type, let context):
            return VirtualCardError(.invalidProfile, "\(source): \(path(context)): expected \(jsonKind(type))")
        case .valueNotFound(let type, let context):
            return VirtualCardError(.invalidProfile, "\(source): \(path(context)): expected \(jsonKind(type)), found null")
        @unknown default:
            return VirtualCardError(.invalidProfile, "\(source): not a card profile")
        }
    }

    /// Checks the profile makes a card: sizes, DOLs, AFL against the records, PANs (Luhn, and
    /// the same in 5A and 57), behaviour numbers. Throws `.inconsistentProfile` naming the field
    /// by its JSON path: `profile 'mine': applications[0].records[2].objects[1].hex: …`.
    public func validate() throws(VirtualCardError) {
        if let (path, reason) = firstInconsistency() {
            throw VirtualCardError(.inconsistentProfile, "profile '\(name)': \(path): \(reason)")
        }
    }

    /// The first field that does not make a card: its JSON path and what is wrong.
    func firstInconsistency() -> (path: String, reason: String)? {
        guard !name.isEmpty, !name.contains(where: \.isWhitespace) else { return ("name", "the name is empty or has spaces") }
        guard issuerMasterKey.count == 16 else {
            return ("issuerMasterKey", "\(issuerMasterKey.count) bytes; a double-length 3DES key has 16")
        }
        guard atrHistoricalBytes.count <= 15 else { return ("atrHistoricalBytes", "an ATR holds at most 15 historical bytes") }
        guard !applications.isEmpty else { return ("applications", "no applications") }
        var aids = Set<[UInt8]>()
        for (index, app) in applications.enumerated() {
            let at = "applications[\(index)]"
            guard (5...16).contains(app.aid.count) else { return ("\(at).aid", "an AID has 5 to 16 bytes") }
            guard aids.insert(app.aid).inserted else { return ("\(at).aid", "the AID \(Hex.encode(app.aid)) appears twice") }
            guard (1...16).contains(app.label.utf8.count), app.label.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
                return ("\(at).label", "the label has 1 to 16 printable ASCII characters")
            }
            if let name = app.preferredName, !(1...16).contains(name.utf8.count) {
                return ("\(at).preferredName", "the preferred name has 1 to 16 characters")
            }
            if let k = app.kernelIdentifier, !(1...8).contains(k.count) {
                return ("\(at).kernelIdentifier", "a kernel identifier has 1 to 8 bytes")
            }
            if let e = app.extendedSelection, e.isEmpty || app.aid.count + e.count > 16 {
                return ("\(at).extendedSelection", "the extended selection has 1 byte or more, and with the AID at most 16")
            }
            if let lang = app.languagePreference,
               lang.isEmpty || lang.utf8.count % 2 != 0 || lang.utf8.count > 8 || !lang.allSatisfy(\.isASCII) {
                return ("\(at).languagePreference", "the language preference is 1 to 4 two-letter codes")
            }
            guard app.aip.count == 2 else { return ("\(at).aip", "the AIP has 2 bytes") }
            let pdol: DataObjectList
            do { pdol = try DataObjectList(bytes: app.pdol) } catch { return ("\(at).pdol", "PDOL: \(error.reason)") }
            guard pdol.dataLength <= 252 else { return ("\(at).pdol", "the PDOL asks for more than 252 bytes") }
            let cdol: DataObjectList
            do { cdol = try DataObjectList(bytes: app.cdol1) } catch { return ("\(at).cdol1", "CDOL1: \(error.reason)") }
            guard cdol.dataLength <= 255 else { return ("\(at).cdol1", "CDOL1 asks for more than 255 bytes") }
            switch app.cryptogram {
            case .generateAC:
                guard !app.cdol1.isEmpty else { return ("\(at).cdol1", "a GENERATE AC application needs a CDOL1") }
            case .getProcessingOptions:
                guard app.gpoFormat == .format2 else {
                    return ("\(at).gpoFormat", "a cryptogram in the GPO answer needs format 2")
                }
            }
            if let ctq = app.cardTransactionQualifiersWhenCVMRequired, ctq.count != 2 {
                return ("\(at).cardTransactionQualifiersWhenCVMRequired", "card transaction qualifiers have 2 bytes")
            }
            guard app.pan.isLuhnValid else { return ("\(at).pan", "the PAN \(app.pan) fails the Luhn check") }
            guard app.panSequenceNumber <= 99 else { return ("\(at).panSequenceNumber", "the PAN sequence number is 0 to 99") }
            guard app.issuerApplicationData.count <= 32 else {
                return ("\(at).issuerApplicationData", "the IAD has at most 32 bytes")
            }
            var keys = Set<[UInt8]>()
            for (r, record) in app.records.enumerated() {
                let rat = "\(at).records[\(r)]"
                guard (1...30).contains(record.sfi) else { return ("\(rat).sfi", "SFI \(record.sfi) is not 1 to 30") }
                guard record.number >= 1 else { return ("\(rat).record", "record number 0 (records count from 1)") }
                guard keys.insert([record.sfi, record.number]).inserted else {
                    return (rat, "SFI \(record.sfi) record \(record.number) appears twice")
                }
                guard record.encoded.count <= 256 - 2 else {
                    return (rat, "SFI \(record.sfi) record \(record.number) is longer than a short response")
                }
            }
            guard app.afl.count % 4 == 0, app.afl.count <= 252 else {
                return ("\(at).afl", "the AFL is 4 bytes per entry")
            }
            for start in stride(from: 0, to: app.afl.count, by: 4) {
                let sfi = app.afl[start] >> 3, first = app.afl[start + 1], last = app.afl[start + 2]
                let oda = app.afl[start + 3]
                let entry = "AFL entry \(start / 4 + 1) (\(Hex.encode(app.afl[start..<(start + 4)])))"
                guard app.afl[start] & 0x07 == 0, (1...30).contains(sfi), first >= 1, last >= first,
                      Int(oda) <= Int(last) - Int(first) + 1 else {
                    return ("\(at).afl", "\(entry) is malformed")
                }
                for n in first...last where app.record(sfi: sfi, number: n) == nil {
                    return ("\(at).afl", "\(entry) names SFI \(sfi) record \(n), which the card does not have")
                }
            }
            // The PAN in 5A and 57, wherever they are, is the one the keys belong to.
            var placed: [(path: String, object: CardDataObject)] = []
            for (r, record) in app.records.enumerated() where record.raw == nil {
                placed += record.objects.enumerated().map { ("\(at).records[\(r)].objects[\($0.offset)]", $0.element) }
            }
            placed += app.gpoObjects.enumerated().map { ("\(at).gpoObjects[\($0.offset)]", $0.element) }
            for (path, object) in placed {
                if let problem = Self.panMismatch(in: object, at: path, pan: app.pan) { return problem }
            }
        }
        if let n = behaviour.tearAfterExchange, n < 0 { return ("behaviour.tearAfterExchange", "negative") }
        if let n = behaviour.muteAtExchange, n < 1 { return ("behaviour.muteAtExchange", "exchanges count from 1") }
        guard behaviour.cardTime >= .zero else { return ("behaviour.cardTimeMs", "a card time is negative") }
        guard behaviour.cardTimeByInstruction.values.allSatisfy({ $0 >= .zero }) else {
            return ("behaviour.cardTimeMsByInstruction", "a card time is negative")
        }
        for (i, script) in behaviour.scriptedResponses.enumerated() {
            guard !script.commandPrefix.isEmpty, script.response.count >= 2 else {
                return ("behaviour.scriptedResponses[\(i)]", "a scripted response needs a command prefix and at least SW1 SW2")
            }
        }
        return nil
    }

    /// Where `object` (at JSON path `path`), or an object inside it, holds a PAN in 5A or track 2
    /// (57) other than `pan`.
    private static func panMismatch(in object: CardDataObject, at path: String, pan: PAN) -> (path: String, reason: String)? {
        if let children = object.children {
            for (i, child) in children.enumerated() {
                if let problem = panMismatch(in: child, at: "\(path).objects[\(i)]", pan: pan) { return problem }
            }
            return nil
        }
        // A primitive, or a constructed object given as hex: look inside its bytes.
        let field = "\(path).hex"
        for node in [object.tlv].flattened {
            if node.tag == .pan {
                guard let p = try? PAN(bcd: node.value), p == pan else {
                    return (field, "the PAN in 5A differs from the application's PAN")
                }
            } else if node.tag == .track2EquivalentData {
                guard let t = try? Track2(bytes: node.value), t.pan == pan else {
                    return (field, "the PAN in track 2 (57) differs from the application's PAN")
                }
            }
        }
        return nil
    }
}
