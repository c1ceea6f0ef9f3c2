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
        for step in steps(trace) {
            switch step {
            case .exchange(let n, let command, let start, let end, .response(let r)):
                s += line(n, start, end - start, command,
                          "\(r.statusWord.hex) \(r.statusWord.name)\(r.data.isEmpty ? "" : " (\(r.data.count) bytes)")")
                if hex {
                    s += "      > \(SensitiveData.displayHex(command, knownPANs: pans))\n"
                    s += "      < \(SensitiveData.displayHex(r.bytes, knownPANs: pans))\n"
                }
            case .exchange(let n, let command, let start, let end, .event(let ev)):
                s += line(n, start, end - start, command, "! \(masked(ev.description, knownPANs: pans))")
                if hex { s += "      > \(SensitiveData.displayHex(command, knownPANs: pans))\n" }
            case .event(let time, let ev):
                s += "    \(pad(APDUTrace.formatTime(time), 12))            ! \(masked(ev.description, knownPANs: pans))\n"
            }
        }
        if trace.entries.isEmpty { s += "(no exchange: the trace holds headers only)\n" }
        return s
    }

    /// The trace as one JSON document (see `tapemu help trace show`).
    static func json(_ trace: APDUTrace, file: String) -> JSONValue {
        let pans = knownPANs(trace)
        let exchanges: [JSONValue] = steps(trace).map { step in
            var x: [String: JSONValue]
            switch step {
            case .exchange(let n, let command, let start, let end, let answer):
                x = ["number": .int(n), "time": .double(seconds(start)), "cardTime": .double(seconds(end - start)),
                     "command": .string(SensitiveData.displayHex(command, knownPANs: pans)), "instruction": .string(name(command))]
                switch answer {
                case .response(let r):
                    x["response"] = .string(SensitiveData.displayHex(r.bytes, knownPANs: pans))
                    x["sw"] = .string(r.statusWord.hex)
                    x["status"] = .string(r.statusWord.name)
                case .event(let ev):
                    x["event"] = .string(masked(ev.description, knownPANs: pans))
                }
            case .event(let time, let ev):
                x = ["number": .null, "time": .double(seconds(time)), "event": .string(masked(ev.description, knownPANs: pans))]
            }
            return .object(x)
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

    /// What ended a command: the card's response, or an event (card-removed, timeout, …).
    private enum Answer {
        case response(ResponseAPDU)
        case event(TraceEvent)
    }

    /// One row of `trace show`, text and JSON alike.
    private enum Step {
        /// Command `number` (from 1), sent at `start`, and what ended it at `end`.
        case exchange(number: Int, command: [UInt8], start: Duration, end: Duration, Answer)
        /// An event no command was waiting for.
        case event(time: Duration, TraceEvent)
    }

    /// The trace's rows: each command paired with the response or event that follows it. A
    /// command nothing answered before the next command or the end, and a response with no
    /// command before it, are not rows.
    private static func steps(_ trace: APDUTrace) -> [Step] {
        var steps: [Step] = []
        var number = 0
        var pending: (bytes: [UInt8], time: Duration)?
        for e in trace.entries {
            let answer: Answer
            switch e.kind {
            case .command(let bytes):
                pending = (bytes, e.time)
                continue
            case .response(let r):
                answer = .response(r)
            case .event(let ev):
                answer = .event(ev)
            }
            if let p = pending {
                number += 1
                steps.append(.exchange(number: number, command: p.bytes, start: p.time, end: e.time, answer))
                pending = nil
            } else if case .event(let ev) = answer {
                steps.append(.event(time: e.time, ev))
            }
        }
        return steps
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
