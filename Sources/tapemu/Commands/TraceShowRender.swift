import APDUTrace
import Timing
import BERTLV
import PaymentRules
import CardChannel
import EMVKernel
import Foundation
import ISO7816

enum TraceShowRender {
    static func text(_ trace: APDUTrace, hex: Bool) -> String {
        var s = ""
        let pans = knownPANs(trace)
        for c in trace.comments { s += "# \(masked(c, knownPANs: pans))\n" }
        let headers = trace.headers.map { (key: masked($0.key, knownPANs: pans), value: masked($0.value, knownPANs: pans)) }
        let width = headers.map(\.key.count).max() ?? 0
        for h in headers { s += "\(h.key)\(String(repeating: " ", count: width - h.key.count))  \(h.value)\n" }
        s += "\n"
        var number = 0
        var pending: (bytes: [UInt8], time: Duration)?
        for e in trace.entries {
            switch e.kind {
            case .command(let bytes):
                pending = (bytes, e.time)
            case .response(let r):
                guard let p = pending else { continue }
                number += 1
                s += line(number, p.time, e.time - p.time, p.bytes,
                          "\(r.statusWord.hex) \(r.statusWord.name)\(r.data.isEmpty ? "" : " (\(r.data.count) bytes)")")
                if hex {
                    s += "      > \(SensitiveData.displayHex(p.bytes, knownPANs: pans))\n"
                    s += "      < \(SensitiveData.displayHex(r.bytes, knownPANs: pans))\n"
                }
                pending = nil
            case .event(let ev):
                if let p = pending {
                    number += 1
                    s += line(number, p.time, e.time - p.time, p.bytes, "! \(masked(ev.description, knownPANs: pans))")
                    if hex { s += "      > \(SensitiveData.displayHex(p.bytes, knownPANs: pans))\n" }
                    pending = nil
                } else {
                    s += "    \(pad(APDUTrace.formatTime(e.time), 12))            ! \(masked(ev.description, knownPANs: pans))\n"
                }
            }
        }
        if trace.entries.isEmpty { s += "(no exchange: the trace holds headers only)\n" }
        return s
    }

    /// The trace as one JSON document (see `tapemu help trace show`).
    static func json(_ trace: APDUTrace, file: String) -> JSONValue {
        let pans = knownPANs(trace)
        var exchanges: [JSONValue] = []
        var number = 0
        var pending: (bytes: [UInt8], time: Duration)?
        func exchange(_ p: (bytes: [UInt8], time: Duration), end: Duration) -> [String: JSONValue] {
            number += 1
            return ["number": .int(number), "time": .double(seconds(p.time)), "cardTime": .double(seconds(end - p.time)),
                    "command": .string(SensitiveData.displayHex(p.bytes, knownPANs: pans)), "instruction": .string(name(p.bytes))]
        }
        for e in trace.entries {
            switch e.kind {
            case .command(let bytes):
                pending = (bytes, e.time)
            case .response(let r):
                guard let p = pending else { continue }
                var x = exchange(p, end: e.time)
                x["response"] = .string(SensitiveData.displayHex(r.bytes, knownPANs: pans))
                x["sw"] = .string(r.statusWord.hex)
                x["status"] = .string(r.statusWord.name)
                exchanges.append(.object(x))
                pending = nil
            case .event(let ev):
                var x: [String: JSONValue]
                if let p = pending {
                    x = exchange(p, end: e.time)
                    pending = nil
                } else {
                    x = ["number": .null, "time": .double(seconds(e.time))]
                }
                x["event"] = .string(masked(ev.description, knownPANs: pans))
                exchanges.append(.object(x))
            }
        }
        return .object([
            "file": .string(file),
            "headers": .array(trace.headers.map {
                .object(["key": .string(masked($0.key, knownPANs: pans)), "value": .string(masked($0.value, knownPANs: pans))])
            }),
            "comments": .array(trace.comments.map { .string(masked($0, knownPANs: pans)) }),
            "exchanges": .array(exchanges),
        ])
    }

    private static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    private static func line(_ n: Int, _ t: Duration, _ card: Duration, _ command: [UInt8], _ outcome: String) -> String {
        let ms = Double(card.components.seconds) * 1000 + Double(card.components.attoseconds) / 1e15
        let cardText = String(Int((ms * 10).rounded())) .withDecimal
        return "\(pad(String(n), 3, right: true)) \(pad(APDUTrace.formatTime(t), 12)) \(pad(cardText + " ms", 10, right: true))  "
            + "\(pad(name(command), 38))  \(outcome)\n"
    }

    /// `SELECT 2PAY.SYS.DDF01`, `SELECT A0000000031010`, `READ RECORD 1 SFI 2`, `GENERATE AC ARQC`.
    static func name(_ bytes: [UInt8]) -> String {
        guard let c = try? CommandAPDU(bytes: bytes) else { return "(not an APDU)" }
        let base = Instruction.name(cla: c.instructionClass, ins: c.instructionCode)
            ?? "CLA \(Hex.encode([c.instructionClass])) INS \(Hex.encode([c.instructionCode]))"
        switch (c.instructionClass & 0xF0, c.instructionCode) {
        case (_, 0xA4) where c.p1Parameter == 0x04:
            if c.data.allSatisfy({ (0x20...0x7E).contains($0) }) && !c.data.isEmpty {
                return "SELECT \(String(decoding: c.data, as: UTF8.self))"
            }
            return "SELECT \(Hex.encode(c.data))\(c.p2Parameter & 0x02 != 0 ? " (next)" : "")"
        case (_, 0xB2):
            return "READ RECORD \(c.p1Parameter) SFI \(c.p2Parameter >> 3)"
        case (0x80, 0xAE):
            let kind = ["AAC", "TC", "ARQC", "RFU"][Int(c.p1Parameter >> 6)]
            return "GENERATE AC \(kind)\(c.p1Parameter & 0x10 != 0 ? " CDA" : "")"
        case (0x80, 0xCA), (0x00, 0xCA):
            return "GET DATA \(Hex.encode([c.p1Parameter, c.p2Parameter]))"
        default:
            return base
        }
    }

    /// A trace's text (a comment, a header's key or value, an event's detail) as shown: people and
    /// tools write it, so it can hold a card number too — masked by the one policy (any PAN-like
    /// digit run), and the trace's own PANs wherever they appear.
    static func masked(_ text: String, knownPANs: [PAN]) -> String {
        SensitiveData.maskedText(text, knownPANs: knownPANs)
    }

    /// The PANs the trace's responses hold, to mask them wherever they appear.
    static func knownPANs(_ trace: APDUTrace) -> [PAN] {
        var out: [PAN] = []
        for e in trace.entries {
            guard case .response(let r) = e.kind else { continue }
            for p in SensitiveData.pans(inTLV: r.data) where !out.contains(p) { out.append(p) }
        }
        return out
    }

    static func pad(_ s: String, _ n: Int, right: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, n - s.count))
        return right ? fill + s : s + fill
    }
}

private extension String {
    /// `41` → `4.1` (tenths).
    var withDecimal: String {
        var s = self
        while s.count < 2 { s = "0" + s }
        s.insert(".", at: s.index(before: s.endIndex))
        return s
    }
}
