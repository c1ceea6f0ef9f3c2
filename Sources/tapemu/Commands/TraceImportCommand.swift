import APDUTrace
import Timing
import BERTLV
import PaymentRules
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
                throw CommandFailure.ioError("\(error)")
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
