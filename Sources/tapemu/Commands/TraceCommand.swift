import BERTLV
import CardChannel
import EMVKernel
import Foundation
import ISO7816

/// `tapemu trace import --from pcsc-spy|proxmark3 FILE -o OUT.apdu [--no-redact]`.
struct TraceImportCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace import",
        abstract: "Convert a pcsc-spy log or a Proxmark3 tracelog into a tapemu .apdu trace.",
        arguments: [Self.from, Self.outputFile, Self.noRedact] + OutputOptions.arguments + [Self.input],
        discussion: """
            pcsc-spy: the raw log libpcscspy writes to the ~/pcsc-spy FIFO (`cat ~/pcsc-spy > LOG` \
            while the program runs; wall-clock timing), or the printed output of `pcsc-spy -n LOG` \
            (call durations only). Every SCardTransmit becomes an exchange; a failed one an event.
            proxmark3: a tracelog (.trace) of an ISO 14443-A sniff. Polling and activation are \
            skipped, ISO-DEP framing and CRC stripped, chained blocks joined, waiting-time \
            extensions kept as card time; a response the sniffer lost becomes an event.
            The trace is redacted (PAN, track 2, cardholder name replaced by test values of the \
            same shape, `@redacted yes`): captures come from real cards. --no-redact keeps \
            everything; never commit such a trace.
            """,
        exitCodes: [(ExitCode.dataError, "the capture is malformed or holds no exchange"),
                    (ExitCode.noInput, "the capture cannot be read"),
                    (ExitCode.ioError, "the trace cannot be written")])

    enum Kind: String { case pcscSpy = "pcsc-spy", proxmark3 }

    static let input = Positional("<file>", help: "The capture to import.", missing: "<file> (the capture to import)")
    static let from = Option<Kind>(
        "--from", value: "pcsc-spy|proxmark3",
        help: "pcsc-spy or proxmark3 (default: proxmark3 for *.trace, pcsc-spy otherwise).") { text, _ throws(UsageError) in
        guard let k = Kind(rawValue: text) else { throw UsageError("--from is pcsc-spy or proxmark3, not '\(text)'") }
        return k
    }
    static let outputFile = Option<String>("-o", "--output", value: "<file>", help: "Where to write the trace (default: stdout).")
    static let noRedact = Flag("--no-redact", help: "Keep the PAN, track 2 and name as captured.")

    var input: String
    var kind: Kind?
    var outputPath: String?
    var redact: Bool
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        redact = !arguments.isSet(Self.noRedact)
        kind = try arguments.value(Self.from)
        outputPath = try arguments.value(Self.outputFile)
        input = try arguments.value(Self.input)
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        if output.json && (outputPath == nil || outputPath == "-") {
            throw UsageError("--json prints a summary: give the trace a file with -o")
        }
        if let out = outputPath, out != "-", SamePath.same(out, input) {
            throw UsageError("-o \(out) is the capture being imported: it would be overwritten; write the trace elsewhere")
        }
    }

    func run(_ console: Console) async throws -> Int32 {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: input)))
        } catch {
            throw CommandFailure.noInput("\(input): cannot read the capture")
        }
        let kind = self.kind ?? (input.hasSuffix(".trace") ? .proxmark3 : .pcscSpy)
        var trace: APDUTrace
        do {
            switch kind {
            case .proxmark3:
                trace = try Proxmark3Importer.importTrace(bytes, name: input, redact: false)
            case .pcscSpy:
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw TraceError(.badCapture, "not text: a pcsc-spy log is text (binary file? try --from proxmark3)",
                                     path: input)
                }
                trace = try PCSCSpyImporter.importLog(text, name: input, redact: false)
            }
        } catch let error as TraceError {
            throw CommandFailure.dataError("\(error)")
        }
        var pans = 0, names = 0
        if redact {
            let r = TraceRedactor.redact(trace)
            trace = r.trace
            pans = r.panCount
            names = r.nameCount
        }
        if let path = outputPath, path != "-" {
            do {
                try trace.write(toFile: path)
            } catch {
                throw CommandFailure(exitCode: ExitCode.ioError, "\(error)")
            }
        } else {
            console.write(trace.text)
        }
        let x = trace.exchanges
        let events = x.filter { if case .event? = $0.reply { return true } else { return false } }.count
        if output.json {
            try JSONOutput.print(JSONValue.object([
                "input": .string(input), "from": .string(kind.rawValue), "output": .string(outputPath ?? "-"),
                "exchanges": .int(x.count), "events": .int(events), "redacted": .bool(redact),
                "pansReplaced": .int(pans), "namesReplaced": .int(names),
                "notes": .array(trace.comments.dropFirst().map(JSONValue.string)),
            ]), to: console)
        } else {
            let summary = "imported \(x.count) exchange(s)\(events > 0 ? ", \(events) ending in an event" : "") from \(input)"
                + (redact ? "; redacted: \(pans) PAN(s), \(names) name(s) replaced" : "; NOT redacted")
            // With the trace on stdout, the summary goes to stderr.
            if outputPath == nil || outputPath == "-" { console.printError("tapemu: \(summary)") } else { console.print(summary) }
            for note in trace.comments.dropFirst() { console.printError("tapemu: note: \(note)") }
        }
        return ExitCode.success
    }
}

/// `tapemu trace show FILE`: a trace as a table with instruction names and status meanings.
struct TraceShowCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace show",
        abstract: "Show a .apdu trace: headers, then each exchange with its instruction, status and timing.",
        arguments: [Self.hex] + OutputOptions.arguments + [Self.path],
        discussion: """
            Each line: exchange number, time since connect, the card's time, the instruction \
            (SELECT PPSE, GET PROCESSING OPTIONS, READ RECORD 1 SFI 2, …) and the status word with \
            its meaning, or the recorded event. PANs in the bytes are shown masked (first 6, last 4).
            With --json: one document with `headers` (in order), `comments` and `exchanges`, each \
            with `number`, `time` and `cardTime` (seconds), `command`, `instruction`, and \
            `response`, `sw`, `status` — or the recorded `event`; bytes are hex, PANs masked.
            """,
        exitCodes: [(ExitCode.dataError, "the trace is malformed (the error names the line)"),
                    (ExitCode.noInput, "the trace file does not exist"),
                    (ExitCode.ioError, "the trace file cannot be read (a directory, no permission)")])

    static let path = Positional("<file>", help: "The trace.", missing: "<file> (the trace to show)")
    static let hex = Flag("--hex", help: "Also show the command and response bytes (PANs masked).")

    var path: String
    var hex: Bool
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        hex = arguments.isSet(Self.hex)
        path = try arguments.value(Self.path)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let trace = try TraceFiles.load(path)
        if output.json {
            try JSONOutput.print(TraceShowRender.json(trace, file: path), to: console)
        } else {
            console.write(TraceShowRender.text(trace, hex: hex))
        }
        return ExitCode.success
    }
}

/// Reading traces for commands, with the exit statuses of the CLI.
enum TraceFiles {
    static func load(_ path: String) throws -> APDUTrace {
        do {
            return try APDUTrace(contentsOfFile: path)
        } catch {
            throw error.code == .unreadable ? CommandFailure.unreadable(path, "\(error)") : CommandFailure.dataError("\(error)")
        }
    }
}

enum TraceShowRender {
    static func text(_ trace: APDUTrace, hex: Bool) -> String {
        var s = ""
        for c in trace.comments { s += "# \(c)\n" }
        let width = trace.headers.map(\.key.count).max() ?? 0
        for h in trace.headers { s += "\(h.key)\(String(repeating: " ", count: width - h.key.count))  \(h.value)\n" }
        s += "\n"
        let pans = knownPANs(trace)
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
                    s += "      > \(Redaction.hex(p.bytes, knownPANs: pans))\n"
                    s += "      < \(Redaction.hex(r.bytes, knownPANs: pans))\n"
                }
                pending = nil
            case .event(let ev):
                if let p = pending {
                    number += 1
                    s += line(number, p.time, e.time - p.time, p.bytes, "! \(ev)")
                    if hex { s += "      > \(Redaction.hex(p.bytes, knownPANs: pans))\n" }
                    pending = nil
                } else {
                    s += "    \(pad(APDUTrace.formatTime(e.time), 12))            ! \(ev)\n"
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
                    "command": .string(Redaction.hex(p.bytes, knownPANs: pans)), "instruction": .string(name(p.bytes))]
        }
        for e in trace.entries {
            switch e.kind {
            case .command(let bytes):
                pending = (bytes, e.time)
            case .response(let r):
                guard let p = pending else { continue }
                var x = exchange(p, end: e.time)
                x["response"] = .string(Redaction.hex(r.bytes, knownPANs: pans))
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
                x["event"] = .string(ev.description)
                exchanges.append(.object(x))
            }
        }
        return .object([
            "file": .string(file),
            "headers": .array(trace.headers.map { .object(["key": .string($0.key), "value": .string($0.value)]) }),
            "comments": .array(trace.comments.map(JSONValue.string)),
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

    /// The PANs the trace's responses hold, to mask them wherever they appear.
    static func knownPANs(_ trace: APDUTrace) -> [PAN] {
        var out: [PAN] = []
        for e in trace.entries {
            guard case .response(let r) = e.kind else { continue }
            for p in pans(in: r.data) where !out.contains(p) { out.append(p) }
        }
        return out
    }

    /// The PANs response data holds as TLV (5A, and track 2 in 57 / 9F6B).
    static func pans(in data: [UInt8]) -> [PAN] {
        guard let nodes = try? BERTLV.parse(data) else { return [] }
        var out: [PAN] = []
        for n in nodes.flattened {
            var p: PAN?
            if n.tag == .pan { p = try? PAN(bcd: n.value) }
            if n.tag == .track2EquivalentData || n.tag == .track2Data { p = (try? Track2(bytes: n.value))?.pan }
            if let p, !out.contains(p) { out.append(p) }
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

// MARK: - Recording (`tapemu read --record FILE`)

/// What `read` (and `pay`) call to record a session: wrap the channel before the kernel runs,
/// write the trace after.
///
/// ```swift
/// let recorder = TraceRecording.wrap(channel, source: source, redact: noRedact ? false : nil)
/// … run the kernel on `recorder` …
/// try TraceRecording.write(recorder, to: path, outcome: ReplayOutcome.summary(read))
/// ```
enum TraceRecording {
    /// A recorder over `channel`. `redact` nil: on for a PC/SC reader and for a replayed trace that
    /// was redacted (a recording of it stays `@redacted yes`), off for a virtual card or a replayed
    /// trace that was not.
    static func wrap(_ channel: any CardChannel, source: CardSourceOptions, sourceName: String,
                     redact: Bool? = nil, clock: MonotonicClock = .continuous) -> RecordingChannel {
        var headers: [APDUTrace.Header] = [.init("title", "tapemu read of \(sourceName)")]
        switch source.source {
        case .reader: headers.append(.init("reader", sourceName))
        case .virtualCard: headers.append(.init("card", sourceName))
        case .trace(let path): headers.append(.init("replayed", path))
        }
        let redactByDefault: Bool
        switch source.source {
        case .reader: redactByDefault = true
        case .trace(let path): redactByDefault = (try? APDUTrace(contentsOfFile: path))?[header: "redacted"] == "yes"
        case .virtualCard: redactByDefault = false
        }
        return RecordingChannel(wrapping: channel, headers: headers, redact: redact ?? redactByDefault, clock: clock)
    }

    /// Writes the recording with its `@outcome` (see ``ReplayOutcome``), which `tapemu replay`
    /// checks. Failures are exit 74.
    static func write(_ recorder: RecordingChannel, to path: String, outcome: String?) throws {
        var trace = recorder.trace
        if let outcome { trace[header: "outcome"] = outcome }
        do {
            try trace.write(toFile: path)
        } catch {
            throw CommandFailure(exitCode: ExitCode.ioError, "\(error)")
        }
    }
}
