import BERTLV
import PaymentRules
import ISO7816
import EMVDisplay

/// The byte-level parsers: BER-TLV with the EMV value decoder, data object lists, APDUs.
enum ParserHarnesses {
    static let schemes: [EMVValueDecoder.Scheme?] = [nil, .visa, .mastercard, .amex, .discover, .jcb, .unionpay]

    /// Input: BER-TLV bytes, as a card or `tapemu tlv decode` gives them.
    ///
    /// Under `.emv` and `.strict` rules: a parse that succeeds re-encodes to bytes that parse
    /// again to the same objects; every node's value is decoded in the context of the whole
    /// input (as `tapemu tlv decode` does), once with the scheme its AIDs tell and once as one
    /// scheme chosen by the input's length; sensitive tags always decode to something masked.
    @Sendable static func tlv(_ input: [UInt8]) throws(FuzzFailure) {
        for rules in [EncodingRules.emv, .strict] {
            if let objects = try? BERTLV.parse(input, rules: rules) {
                let encoded = objects.encoded
                let again: [TLV]
                do { again = try BERTLV.parse(encoded, rules: rules) } catch {
                    throw FuzzFailure("the re-encoding of parsed TLV does not parse: \(error)")
                }
                try expect(again == objects, "parse(encode(parse(x))) differs from parse(x)")
                try decodeEveryNode(objects)
            }
            if let single = try? BERTLV.parseSingle(input, rules: rules) {
                try expect(single.encoded.count <= input.count, "one object re-encodes longer than its input")
            }
        }
    }

    static func decodeEveryNode(_ objects: [TLV]) throws(FuzzFailure) {
        let scheme = schemes[objects.count % schemes.count]
        for ctx in [EMVValueDecoder.Context(objects), EMVValueDecoder.Context(objects, scheme: scheme)] {
            for node in objects.flattened {
                _ = EMVValueDecoder.name(of: node.tag, in: ctx)
                let decoded = EMVValueDecoder.decode(node, in: ctx)
                if let decoded {
                    _ = decoded.description
                    _ = decoded.fields
                }
                if EMVValueDecoder.isSensitive(node.tag) && !node.isConstructed {
                    try expect(decoded != nil, "sensitive tag \(node.tag.hex) decoded to nothing (its hex would show)")
                    if let pan = try? PAN(bcd: node.value) {
                        try expect(!contains(decoded?.description ?? "", pan.digits),
                                   "the decode of \(node.tag.hex) shows a full PAN")
                    }
                }
            }
        }
    }

    /// Input: a data object list (PDOL, CDOL1, …) as a card sends it.
    ///
    /// A list that parses re-encodes to a list that parses to the same entries; the data built
    /// for it has its announced length and splits back into one value per entry; the value
    /// decoder describes it.
    @Sendable static func dol(_ input: [UInt8]) throws(FuzzFailure) {
        _ = EMVValueDecoder.decode(TLV(tag: .pdol, value: input))
        guard let list = try? DataObjectList(bytes: input) else { return }
        let again: DataObjectList
        do { again = try DataObjectList(bytes: list.bytes) } catch {
            throw FuzzFailure("the re-encoding of a parsed DOL does not parse: \(error)")
        }
        try expect(again == list, "parse(encode(parse(dol))) differs from parse(dol)")
        // Values of every length around the asked one, in every format.
        let data = list.build { tag in
            let n = Int(tag.rawValue % 7)
            return n == 0 ? nil : Array(input.prefix(n)) + Array(repeating: 0x42, count: max(0, n - input.count))
        }
        try expect(data.count == list.dataLength, "built \(data.count) bytes for a DOL of \(list.dataLength)")
        guard let values = list.split(data) else { throw FuzzFailure("a DOL's own data does not split") }
        // A tag named twice keeps its last value.
        var lengths: [Tag: Int] = [:]
        for e in list.entries { lengths[e.tag] = e.length }
        for (tag, length) in lengths {
            try expect(values[tag]?.count == length, "split gave \(tag.hex) a value of the wrong length")
        }
        try expect(list.split(data.dropLast()) == nil || list.dataLength == 0, "short data split")
        for format in DataFormat.allCases {
            for e in list.entries.prefix(4) {
                try expect(DataObjectList.fit(input, to: e.length, format: format).count == e.length,
                           "fit(_:to:format:) gave the wrong length")
            }
        }
    }

    /// Input: the bytes of a command APDU, or of a response APDU, or hex text of either.
    ///
    /// A command that parses re-encodes to a command that parses to the same values, and is
    /// explained (name, summary, P1/P2 meanings; TLV data decoded); a response keeps its bytes
    /// and names its status word; hex that decodes re-encodes to the same bytes.
    @Sendable static func apdu(_ input: [UInt8]) throws(FuzzFailure) {
        if let c = try? CommandAPDU(bytes: input) {
            let again: CommandAPDU
            do { again = try CommandAPDU(bytes: c.bytes) } catch {
                throw FuzzFailure("the encoding of a parsed command does not parse: \(error)")
            }
            try expect(again == c, "parse(encode(parse(command))) differs from parse(command)")
            try expect(c.bytes.count <= input.count, "a command re-encodes longer than its input")
            do {
                var checked = try CommandAPDU(validatingClass: c.instructionClass, instruction: c.instructionCode,
                                              p1: c.p1Parameter, p2: c.p2Parameter, data: c.data,
                                              expectedResponseLength: c.expectedResponseLength)
                // The same command; its encoding (short or extended) is the input's choice.
                checked.usesExtendedLength = c.usesExtendedLength
                try expect(checked == c, "the validating initialiser builds another command")
            } catch {
                throw FuzzFailure("a parsed command fails the validating initialiser: \(error)")
            }
            _ = (c.summary, c.parameterMeanings, c.instructionName, c.isoCase, c.needsExtendedLength, c.description)
            if let objects = try? BERTLV.parse(c.data, rules: .strict) { try decodeEveryNode(objects) }
        }
        if let r = try? ResponseAPDU(bytes: input) {
            try expect(r.bytes == input, "a response's bytes differ from those it was parsed from")
            _ = (r.statusWord.name, r.statusWord.description, r.description, r.debugDescription)
            try expect(r.data.count < 4 || !contains(r.description, Hex.encode(r.data)),
                       "a response's description shows its data")
            if let objects = try? BERTLV.parse(r.data, rules: .emv) { try decodeEveryNode(objects) }
        }
        let text = String(decoding: input, as: UTF8.self)
        if let bytes = try? Hex.decode(text) {
            try expect((try? Hex.decode(Hex.encode(bytes))) == bytes, "Hex.decode(Hex.encode(b)) != b")
            _ = try? CommandAPDU(bytes: bytes)
        }
    }
}
