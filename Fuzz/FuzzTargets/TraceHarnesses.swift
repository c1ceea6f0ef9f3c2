import BERTLV
import PaymentRules
import CardChannel
import EMVKernel
import ISO7816
import APDUTrace
import BenchTiming

/// Trace files and the captures the importers read.
enum TraceHarnesses {
    /// Input: an `.apdu` trace file (any bytes; UTF-8 is checked by the parser).
    ///
    /// A trace that parses is written and re-parsed to an equal trace; its exchanges, terminal
    /// data and replay set-up are derived; its redacted form holds none of its PANs and parses
    /// again; its responder plays the recorded commands back under every matching mode.
    @Sendable static func trace(_ input: [UInt8]) throws(FuzzFailure) {
        guard let trace = try? APDUTrace(parsing: input, path: "fuzz.apdu") else { return }
        try checkRoundTrip(trace, "a parsed trace")
        for x in trace.exchanges { _ = (x.commandAPDU, x.cardTime) }
        _ = TraceReplaySetup(trace: trace)
        try checkRedaction(trace)
        for mode in TraceMatchMode.allCases {
            var responder = TraceResponder(trace: trace, matching: TraceMatching(mode: mode, overridesAmount: mode == .masked))
            for x in trace.exchanges.prefix(64) {
                _ = responder.maskedRanges(ofCommand: x.number)
                switch responder.respond(to: x.command) {
                case .response, .event, .mismatch: continue
                case .ended: break
                }
            }
        }
    }

    /// Input: a pcsc-spy log, raw or as `pcsc-spy` prints it.
    @Sendable static func pcscSpy(_ input: [UInt8]) throws(FuzzFailure) {
        guard let text = String(validating: input, as: UTF8.self) else { return }
        for redact in [false, true] {
            guard let trace = try? PCSCSpyImporter.importLog(text, name: "fuzz.spylog", redact: redact) else { return }
            try checkImported(trace, redacted: redact, importer: "pcsc-spy")
        }
    }

    /// Input: a Proxmark3 tracelog (binary).
    @Sendable static func proxmark3(_ input: [UInt8]) throws(FuzzFailure) {
        for redact in [false, true] {
            guard let trace = try? Proxmark3Importer.importTrace(input, name: "fuzz.trace", redact: redact) else { return }
            try checkImported(trace, redacted: redact, importer: "Proxmark3")
        }
    }

    /// An imported trace is a trace: it reads back equal, and redacted it holds no PAN.
    static func checkImported(_ trace: APDUTrace, redacted: Bool, importer: String) throws(FuzzFailure) {
        try checkRoundTrip(trace, "the \(importer) importer's trace")
        if !redacted { try checkRedaction(trace) }
        _ = TraceReplaySetup(trace: trace)
    }

    /// `trace` written as text and parsed again is `trace`.
    static func checkRoundTrip(_ trace: APDUTrace, _ what: String) throws(FuzzFailure) {
        let again: APDUTrace
        do { again = try APDUTrace(parsing: trace.text) } catch {
            throw FuzzFailure("\(what), written as text, does not parse: \(error)")
        }
        try expect(again.entries == trace.entries, "\(what), written and parsed again, has other entries")
        try expect(again.headers == trace.headers, "\(what), written and parsed again, has other headers")
        try expect(again.comments == trace.comments, "\(what), written and parsed again, has other comments")
    }

    /// The PANs a trace's responses hold (5A, or the PAN of a track 2), as the redactor reads them.
    static func pans(in trace: APDUTrace) -> Set<String> {
        var out: Set<String> = []
        for e in trace.entries {
            guard case .response(let r) = e.kind, let nodes = try? BERTLV.parse(r.data) else { continue }
            for n in nodes.flattened where !n.isConstructed {
                if n.tag == .pan, let p = try? PAN(bcd: n.value) { out.insert(p.digits) }
                if n.tag == .track2EquivalentData, let t = try? Track2(bytes: n.value) { out.insert(t.pan.digits) }
            }
        }
        return out
    }

    /// The redacted trace parses again, says `@redacted yes`, and none of the original PANs
    /// occurs in its text, as BCD digits or as ASCII.
    static func checkRedaction(_ trace: APDUTrace) throws(FuzzFailure) {
        let pans = pans(in: trace)
        let redacted = trace.redacted()
        try expect(redacted.isRedacted, "a redacted trace does not say @redacted yes")
        try checkRoundTrip(redacted, "a redacted trace")
        guard !pans.isEmpty else { return }
        // Every substring of a PAN's length looked up, not every PAN searched for: a trace may
        // hold thousands of PANs, and the check must stay linear as the redactor is.
        let text = Array(redacted.text.utf8)
        let digits = Set(pans.map { ArraySlice($0.utf8) })
        let ascii = Set(pans.map { ArraySlice(Hex.encode(Array($0.utf8)).utf8) })
        for (needles, what) in [(digits, "a PAN"), (ascii, "a PAN in ASCII")] {
            for length in Set(needles.map(\.count)) where length <= text.count {
                for start in 0...(text.count - length) {
                    let piece = text[start..<(start + length)]
                    if needles.contains(piece) {
                        let shown = String(decoding: piece.prefix(6), as: UTF8.self)
                        throw FuzzFailure("the redacted trace still holds \(what) (\(shown)…, \(length) characters)")
                    }
                }
            }
        }
    }
}
