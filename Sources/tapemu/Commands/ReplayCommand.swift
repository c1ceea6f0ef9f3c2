import BERTLV
import PaymentRules
import CardChannel
import EMVKernel
import Foundation
import ISO7816
import Timing
import APDUTrace
import BenchTiming

/// `tapemu replay FILE|DIR... [--mode strict|masked|structural] [--json]`: runs the kernel
/// against each trace's card and reports, per trace, pass or where it diverged.
struct ReplayCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Run the EMV kernel against recorded traces and report pass or the divergence for each.",
        arguments: [Self.mode, Self.paced, Self.apduTimeout, Self.amount] + ODAOptions.arguments + OutputOptions.arguments
            + [Self.paths],
        discussion: """
            Each trace plays the card: every command the kernel sends is matched against the next \
            recorded one. A trace passes when the kernel's run follows it to its end (or to a \
            recorded event that ends the read, e.g. a tear) and, when the trace has an @outcome \
            header, ends with that outcome. It fails on a divergence (the message names the \
            exchange and shows both commands), when the trace ends before the kernel is done, or \
            when the kernel stops before the trace does. Directories are searched for *.apdu files.
            The kernel runs with the amount, currency and country the trace's reader sent (found \
            through the card's PDOL/CDOL), so own recordings match in masked mode. Captures of \
            other terminals (other TTQ, merchant data) need structural matching: a trace may say \
            so itself with an `@match structural` header, which --mode overrides.
            Each APDU may take --apdu-timeout (default 2s, as `tapemu read`): a paced replay of a \
            card that took longer (a trace recorded with `read --apdu-timeout 5s`) needs as much.
            Ends with a line `N passed, N failed`.
            """,
        exitCodes: [(ExitCode.failure, "at least one trace failed"),
                    (ExitCode.noInput, "no trace found")])

    static let paths = Positional("<file|dir>", help: "Traces, or directories holding .apdu traces.",
                                  repeats: true)
    static let mode = Option<TraceMatchMode>(
        "--mode", value: "strict|masked|structural",
        help: "strict (byte for byte), masked (default, or the trace's @match: ignore unpredictable number, date, time), structural (same instruction, P1/P2 and lengths).") {
        text, _ throws(UsageError) in
        guard let m = TraceMatchMode(rawValue: text) else { throw UsageError("--mode is strict, masked or structural, not '\(text)'") }
        return m
    }
    static let paced = Flag("--paced", help: "Reproduce the recorded card timing (default: as fast as possible).")
    static let apduTimeout = CardSourceOptions.apduTimeout.withHelp(
        "How long one APDU may take (default 2s); a paced replay waits the recorded card time.")
    static let amount = Option<Int>.integer(
        "--amount", value: "<cents>",
        help: "Run with this amount instead of the recorded one; masked then ignores amount and currency.", in: 0...Int(EMVAmount.maximum))

    var paths: [String]
    var mode: TraceMatchMode?
    var paced: Bool
    var apduTimeout: Duration
    var amount: UInt64?
    var output: OutputOptions
    var oda: ODAOptions
    /// Where a paced replay's card time and the APDU deadlines run (a ManualClock in tests).
    var clock: MonotonicClock = .continuous

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        paced = arguments.isSet(Self.paced)
        apduTimeout = try arguments.value(Self.apduTimeout, default: .seconds(2))
        mode = try arguments.value(Self.mode)
        amount = try arguments.value(Self.amount).map(UInt64.init)
        oda = try ODAOptions(arguments: &arguments)
        paths = arguments.remainingPositionals()
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        guard !paths.isEmpty else { throw UsageError("missing <file|dir>: the traces to replay") }
    }

    func run(_ console: Console) async throws -> Int32 {
        let files = try Self.traceFiles(paths)
        let trusted = try oda.apply(to: .default)
        var results: [ReplayResult] = []
        for file in files {
            let r = await TraceReplayer(mode: mode, paced: paced, amount: amount, apduTimeout: apduTimeout, clock: clock,
                                        caPublicKeys: trusted.caPublicKeys, revocationList: trusted.revocationList,
                                        odaMethodBits: oda.methodBits)
                .replay(file)
            results.append(r)
            if !output.json {
                console.print("\(r.passed ? "PASS" : "FAIL")  \(file)  \(r.summary)")
                if let oda = r.oda, oda != ODAResult.notPerformed.description { console.print("      \(oda)") }
                if let d = r.divergence {
                    for l in d.split(separator: "\n").dropFirst() { console.print("      \(String(l).trimmingWhitespace)") }
                }
            }
        }
        let passed = results.filter(\.passed).count
        let failed = results.count - passed
        if output.json {
            try JSONOutput.print(JSONValue.object([
                "mode": mode.map { .string($0.rawValue) } ?? .string("per trace"),
                "passed": .int(passed), "failed": .int(failed),
                "traces": .array(results.map(\.json)),
            ]), to: console)
        } else {
            console.print("\(passed) passed, \(failed) failed")
        }
        return failed == 0 ? ExitCode.success : ExitCode.failure
    }

    /// The files named, directories searched (recursively, sorted) for `*.apdu`.
    static func traceFiles(_ paths: [String]) throws -> [String] {
        var out: [String] = []
        let fm = FileManager.default
        for p in paths {
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: p, isDirectory: &isDir) else {
                throw CommandFailure.noInput("\(p): no such file or directory")
            }
            if isDir.boolValue {
                let found = (fm.enumerator(atPath: p)?.compactMap { $0 as? String } ?? [])
                    .filter { $0.hasSuffix(".apdu") }.sorted()
                out += found.map { p.hasSuffix("/") ? p + $0 : p + "/" + $0 }
            } else {
                out.append(p)
            }
        }
        guard !out.isEmpty else { throw CommandFailure.noInput("no .apdu trace in \(paths.joined(separator: ", "))") }
        return out
    }
}
