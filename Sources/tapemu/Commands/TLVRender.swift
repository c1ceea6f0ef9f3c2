import EMVDisplay
import BERTLV
import PaymentRules
import ISO7816

/// How a TLV tree is shown, in text and JSON. Shared by `tlv decode` and `apdu decode`.
enum TLVRender {
    /// One line per object: `9F02 Amount, Authorised (Numeric) [6] 000000001234 = 12.34 EUR`,
    /// children indented by two spaces, details of a decoded value further indented.
    static func text(_ objects: [TLV], indent: Int = 0, context: EMVValueDecoder.Context? = nil) -> String {
        let context = context ?? EMVValueDecoder.Context(objects)
        var s = ""
        for o in objects {
            let pad = String(repeating: "  ", count: indent)
            let name = EMVValueDecoder.name(of: o.tag, in: context) ?? "unknown tag"
            var line = "\(pad)\(o.tag.hex) \(name) [\(o.value.count)]"
            let decoded = EMVValueDecoder.decode(o, in: context)
            if !o.isConstructed {
                if !EMVValueDecoder.isSensitive(o.tag), !o.value.isEmpty {
                    line += " \(SensitiveData.maskedHex(Array(o.value), tag: o.tag))"
                }
                if let decoded { line += " = \(SensitiveData.maskedText(decoded.text))" }
            }
            s += line + "\n"
            if !o.isConstructed, let decoded {
                for d in decoded.details { s += "\(pad)    \(SensitiveData.maskedText(d))\n" }
            }
            if o.isConstructed { s += text(o.children, indent: indent + 1, context: context) }
        }
        return s
    }

    static func json(_ objects: [TLV], context: EMVValueDecoder.Context? = nil) -> JSONValue {
        let context = context ?? EMVValueDecoder.Context(objects)
        return .array(objects.map { node($0, context: context) })
    }

    private static func node(_ o: TLV, context: EMVValueDecoder.Context) -> JSONValue {
        var d: [String: JSONValue] = [
            "tag": .string(o.tag.hex),
            "name": EMVValueDecoder.name(of: o.tag, in: context).map { .string($0) } ?? .null,
            "length": .int(o.value.count),
            "constructed": .bool(o.isConstructed),
        ]
        if let info = EMVTagDictionary.info(o.tag) {
            d["format"] = .string(info.format.rawValue)
            d["source"] = .string(info.source.rawValue)
        }
        // A constructed value is its children (which may hold a PAN): only primitives carry hex.
        if EMVValueDecoder.isSensitive(o.tag) {
            d["redacted"] = .bool(true)
        } else if !o.isConstructed {
            d["value"] = .string(SensitiveData.maskedHex(Array(o.value), tag: o.tag))
        }
        if o.isConstructed {
            d["children"] = .array(o.children.map { node($0, context: context) })
        } else if let decoded = EMVValueDecoder.decode(o, in: context) {
            d["decoded"] = json(decoded)
        }
        return .object(d)
    }

    static func json(_ v: DecodedValue) -> JSONValue {
        var d: [String: JSONValue] = ["text": .string(SensitiveData.maskedText(v.text))]
        if !v.details.isEmpty { d["details"] = .array(v.details.map { .string(SensitiveData.maskedText($0)) }) }
        if let f = v.fields { d["fields"] = json(f) }
        return .object(d)
    }

    static func json(_ v: StructuredValue) -> JSONValue {
        switch v {
        case .string(let s): return .string(SensitiveData.maskedText(s))
        case .int(let i): return .int(i)
        case .bool(let b): return .bool(b)
        case .array(let a): return .array(a.map(json))
        case .object(let o): return .object(o.mapValues(json))
        }
    }
}
