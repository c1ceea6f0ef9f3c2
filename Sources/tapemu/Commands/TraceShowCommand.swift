import APDUTrace
import Timing
import BERTLV
import CardChannel
import EMVKernel
import Foundation
import ISO7816

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
        try output.print(json: TraceShowRender.json(trace, file: path), text: TraceShowRender.text(trace, hex: hex),
                         to: console)
        return ExitCode.success
    }
}
