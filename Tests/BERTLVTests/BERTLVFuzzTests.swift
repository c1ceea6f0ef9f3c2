import Testing
@testable import BERTLV
import PaymentRules
import struct BERTLV.Tag
import EMVDisplay
import TestSupport

/// Arbitrary bytes thrown at every parser and decoder: each either succeeds or throws a typed
/// error, never crashes or hangs. The generator is seeded, so a failure reproduces.
@Suite("Random input never crashes the BER-TLV layer")
struct BERTLVFuzzTests {
    /// Random bytes, biased towards what parsers branch on (tag and length bytes).
    static func randomBytes(_ rng: inout SplitMix64) -> [UInt8] {
        let interesting: [UInt8] = [0x00, 0x1F, 0x20, 0x5A, 0x57, 0x70, 0x77, 0x80, 0x81, 0x82, 0x83, 0x84, 0x9F,
                                    0xBF, 0xDF, 0xFF, 0x7F, 0x01, 0x0D, 0xD0, 0xF0]
        let count = Int.random(in: 0...48, using: &rng)
        return (0..<count).map { _ in
            Bool.random(using: &rng) ? interesting.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
        }
    }

    /// A valid fixture with a few bytes changed, dropped or inserted.
    static func mutated(_ rng: inout SplitMix64) -> [UInt8] {
        var b = Fixtures.all.randomElement(using: &rng)!.bytes
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            guard !b.isEmpty else { break }
            let i = Int.random(in: 0..<b.count, using: &rng)
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: b[i] = UInt8.random(in: 0...255, using: &rng)
            case 1: b.remove(at: i)
            default: b.insert(UInt8.random(in: 0...255, using: &rng), at: i)
            }
        }
        return b
    }

    static func exercise(_ input: [UInt8]) -> Int {
        var ok = 0
        for rules in [EncodingRules.emv, .strict] {
            if let objects = try? BERTLV.parse(input, rules: rules) {
                ok += 1
                #expect((try? BERTLV.parse(objects.encoded)) != nil)
                let ctx = EMVValueDecoder.Context(objects)
                for o in objects.flattened {
                    _ = EMVValueDecoder.name(of: o.tag, in: ctx)
                    if let d = EMVValueDecoder.decode(o, in: ctx) { _ = d.description }
                }
            }
            _ = try? BERTLV.parseSingle(input, rules: rules)
        }
        if let dol = try? DataObjectList(bytes: input) {
            ok += 1
            let data = dol.build { _ in input }
            #expect(data.count == dol.dataLength)
            #expect(dol.split(data) != nil)
        }
        if (try? Track2(bytes: input)) != nil { ok += 1 }
        if (try? PAN(bcd: input)) != nil { ok += 1 }
        _ = try? BCD.digits(input, allowingTrailingF: true)
        _ = BCD.value(input)
        return ok
    }

    @Test("4000 random inputs and 2000 mutated fixtures")
    func random() {
        var rng = SplitMix64(seed: 0x5EED_BE71)
        var accepted = 0
        for _ in 0..<4000 { accepted += Self.exercise(Self.randomBytes(&rng)) }
        for _ in 0..<2000 { accepted += Self.exercise(Self.mutated(&rng)) }
        // The generator must reach the success paths too, or the test proves little.
        #expect(accepted > 500)
    }

    @Test("every dictionary tag decodes arbitrary values without crashing")
    func decodersOnArbitraryValues() {
        var rng = SplitMix64(seed: 0xDEC0DE)
        let contexts: [[TLV]] = [
            [],
            [TLV(tag: 0x4F, value: bytes("A0000000031010")), TLV(tag: 0x5F2A, value: bytes("0978"))],
            [TLV(tag: 0x84, value: bytes("A0000000041010")), TLV(tag: 0x5F36, value: bytes("09"))],
            [TLV(tag: 0x84, value: bytes("A000000025010801")), TLV(tag: 0x5F2A, value: bytes("FFFF"))],
        ].map { $0 }
        for info in EMVTagDictionary.all where !info.tag.isConstructed {
            for ctx in contexts.map({ EMVValueDecoder.Context($0) }) {
                for length in [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 19, 32] {
                    let value = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
                    let tlv = TLV(tag: info.tag, value: value)
                    let d = EMVValueDecoder.decode(tlv, in: ctx)
                    if info.isSensitive { #expect(d != nil, "\(info.tag.hex) must always be masked") }
                }
            }
        }
    }
}
