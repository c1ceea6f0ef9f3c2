import BERTLV
import CardChannel
import EMVKernel
import Foundation
import ISO7816
import PCSC
import Timing

/// `tapemu transmit`: scriptor's job — APDUs from arguments, a script file or stdin, sent to a
/// reader, a virtual card or a trace's card side, each answer explained.
struct TransmitCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "transmit",
        abstract: "Send APDUs (arguments, a script file or stdin) to a card and explain each answer, as scriptor does.",
        arguments: CardSourceOptions.arguments + [OneOf([Self.file, Self.interactive]), OneOf([Self.raw, Self.json]), Self.noAutoResponse,
                                                   Self.wait, Self.apduTimeout, Self.script],
        discussion: """
            Each argument is one line of a script; with none (or '-'), the script is read from \
            stdin; -f reads it from a file. The syntax is pcsc-tools scriptor's: one APDU in hex \
            per line (`00A4040007A0000000031010` or `00 A4 04 00 07 …`), a line ending in '\\' \
            goes on on the next, '#' starts a comment, `reset` on its own line resets the card \
            and `exit` ends the script. The whole script is checked before anything is sent: a \
            line that is not an APDU is an error naming it (exit 65), and the card sees nothing.
            Each command is printed ('>' with the instruction's name), then the card's answer \
            ('<'), its status word with its meaning, and its data decoded as BER-TLV with EMV tag \
            names. A 61xx answer is fetched with GET RESPONSE and a 6Cxx one sent again with the \
            Le the card asked for — both shown — unless --no-auto-response, which shows the \
            card's answers as they came (as scriptor does). A status word other than 9000 is an \
            answer, not a failure: the script goes on and the exit status stays 0.
            PANs are masked (first 6 and last 4 digits) everywhere, --raw included, and PIN \
            blocks (VERIFY, CHANGE REFERENCE DATA) are not shown. The default card is the virtual card visa-qvsdc; \
            `reset` on a virtual card powers it on again (its ATC goes on), on a trace it starts \
            the trace again.
            With --interactive (-i), a prompt `apdu> ` reads the script a line at a time, with line \
            editing and history (libedit: Emacs keys, the arrows, Ctrl-R; the history lasts the \
            session): each APDU is sent when its line is entered and its answer explained as above; \
            a line that is not an APDU is said and the prompt comes back; `exit` or Ctrl-D ends.
            """,
        exitCodes: [
            (ExitCode.dataError, "a script line is not an APDU (bad hex, not a command), the --card or --trace file is not valid, or the trace expected another command"),
            (ExitCode.noInput, "the script, --card or --trace file does not exist"),
            (ExitCode.unavailable, "no such reader, or the PC/SC service (pcscd) is not running"),
            (ExitCode.ioError, "stdin or the --card or --trace file cannot be read"),
            (ExitCode.temporaryFailure, "no card came within --wait, the card was removed, it did not answer within --apdu-timeout, or the reader failed mid-exchange"),
        ])

    static let script = Positional(
        "<apdu>...|-", help: "Script lines: APDUs in hex, or reset / exit; '-' (or none): read the script from stdin.",
        required: false)
    static let file = Option<String>("-f", "--file", value: "<script>", help: "Read the script from this file ('-': stdin).")
    static let interactive = Flag(
        "-i", "--interactive", help: "Read APDUs at a prompt, with line editing and history; each answer explained as it comes.")
    static let raw = Flag(
        "--raw", help: "Print only each answer's bytes in hex (data + SW1 SW2, PANs masked), one line each; a reset prints the ATR.")
    static let json = Flag(
        "--json", help: "Print one JSON document: the card, and each step with its command, answer, status and TLV.")
    static let noAutoResponse = Flag(
        "--no-auto-response", help: "Send each APDU once and show 61xx / 6Cxx as the card gave them.")
    static let wait = CardSourceOptions.wait.withHelp("How long to wait for a card in the reader (default 30s).")
    static let apduTimeout = CardSourceOptions.apduTimeout

    var source: CardSourceOptions
    var arguments: [String]
    var file: String?
    var raw: Bool
    var output: OutputOptions
    var autoResponse: Bool
    var interactive: Bool
    var wait: Duration
    var apduTimeout: Duration
    /// Where APDU deadlines and a virtual card's time run (a ManualClock in tests).
    var clock: MonotonicClock = .continuous

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(json: arguments.isSet(Self.json))
        source = try CardSourceOptions(arguments: &arguments)
        file = try arguments.value(Self.file)
        raw = arguments.isSet(Self.raw)
        interactive = arguments.isSet(Self.interactive)
        autoResponse = !arguments.isSet(Self.noAutoResponse)
        wait = try arguments.value(Self.wait, default: .seconds(30))
        apduTimeout = try arguments.value(Self.apduTimeout, default: .seconds(2))
        self.arguments = arguments.remainingPositionals()
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        if raw && output.json { throw UsageError("--raw and --json cannot be used together") }
        if interactive && (file != nil || !arguments.isEmpty || output.json) {
            throw UsageError("--interactive reads the APDUs at its prompt: not with APDU arguments, -f or --json")
        }
        if file != nil && !arguments.isEmpty {
            throw UsageError("give the APDUs as arguments or with -f, not both")
        }
    }

    func run(_ console: Console) async throws -> Int32 {
        if interactive { return try await runInteractive(console) }
        let script = try loadScript(console)
        let cardSource = try source.makeSource()
        let render = TransmitRender(mode: output.json ? .json : raw ? .raw : .text, console: console,
                                    autoResponse: autoResponse)
        var channel = try await open(cardSource)
        defer { Self.close(channel) }
        var session = CardSession(channel: channel, apduTimeout: apduTimeout, clock: clock)
        render.start(source: Self.sourceName(channel, cardSource), atr: channel.atr)
        try await perform(script.steps, cardSource: cardSource, channel: &channel, session: &session, render: render)
        try render.finish()
        return ExitCode.success
    }

    /// `--interactive`: a prompt (libedit), each line parsed as a one-line script (a `\` at
    /// the end goes on at the next prompt) and run at once; a line that is not an APDU is said
    /// and the prompt comes back. `exit` or the end of input (Ctrl-D) ends the session.
    private func runInteractive(_ console: Console) async throws -> Int32 {
        let cardSource = try source.makeSource()
        let render = TransmitRender(mode: raw ? .raw : .text, console: console, autoResponse: autoResponse)
        var channel = try await open(cardSource)
        defer { Self.close(channel) }
        var session = CardSession(channel: channel, apduTimeout: apduTimeout, clock: clock)
        render.start(source: Self.sourceName(channel, cardSource), atr: channel.atr)
        console.printError("tapemu: enter APDUs in hex, `reset` or `exit` (Ctrl-D); the arrows recall earlier lines")
        let editor = LineEditor(historyFile: nil)
        var lines: [Substring] = []
        var entered = 0
        while let line = editor.readLine(prompt: lines.isEmpty ? "apdu> " : "...> ") {
            editor.remember(line)
            entered += 1
            lines.append(Substring(line))
            if line.trimmingCharacters(in: .whitespaces).hasSuffix("\\") { continue }
            defer { lines = [] }
            if lines.count == 1, line.trimmingCharacters(in: .whitespaces).lowercased() == "exit" { break }
            let script: APDUScript
            do {
                let first = entered - lines.count + 1
                script = try APDUScript.parse(lines: lines, place: { "line \(first + $0 - 1)" })
            } catch {
                console.printError("tapemu: \(error)")
                continue
            }
            try await perform(script.steps, cardSource: cardSource, channel: &channel, session: &session, render: render)
        }
        return ExitCode.success
    }

    /// Runs `steps` on the card, each shown by `render`; a card error ends the session.
    private func perform(_ steps: [APDUScript.Step], cardSource: any CardSource, channel: inout any CardChannel,
                         session: inout CardSession, render: TransmitRender) async throws {
        for step in steps {
            switch step {
            case .send(let command, let line):
                // The count and the new exchanges only: `session.exchanges` copies the whole log,
                // which made a script of n APDUs cost n² (8,000 APDUs took 4 s).
                let before = session.exchangeCount
                do {
                    let response = autoResponse ? try await session.send(command) : try await session.sendAsIs(command)
                    render.exchange(command, response, wire: session.exchanges(from: before), line: line)
                } catch {
                    try render.failed(command, error, line: line)
                    throw CommandFailure(error, "line \(line): \(error)")
                }
            case .reset(let line):
                do {
                    if let pcsc = channel as? PCSCCardChannel {
                        render.reset(atr: try await Self.reset(pcsc), line: line)
                    } else {
                        Self.close(channel)
                        channel = try await cardSource.waitForCard(timeout: wait, clock: clock)
                        session = CardSession(channel: channel, apduTimeout: apduTimeout, clock: clock)
                        render.reset(atr: channel.atr, line: line)
                    }
                } catch {
                    try render.failed(nil, error, line: line)
                    throw CommandFailure(error, "line \(line): reset: \(error)")
                }
            }
        }
    }

    /// The most a script file may hold: 100,000 APDUs of 255 data bytes are 51 MB of hex.
    static let scriptLimit = 64 << 20

    /// The script from the arguments, the file or stdin, checked whole.
    private func loadScript(_ console: Console) throws -> APDUScript {
        let script: APDUScript
        do {
            if let file, file != "-" {
                let bytes: [UInt8]
                do {
                    bytes = try UserFile.read(file, limit: Self.scriptLimit)
                } catch {
                    throw CommandFailure.noInput("\(file): cannot read the script (\(error))")
                }
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw CommandFailure.dataError("\(file) is not UTF-8 text (expected a script of APDUs in hex)")
                }
                script = try APDUScript.parse(text: text, name: file)
            } else if file == "-" || arguments.isEmpty || arguments == ["-"] {
                let bytes: [UInt8]
                do { bytes = try console.readStandardInput() } catch {
                    throw CommandFailure.ioError("cannot read stdin: \(error)")
                }
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw CommandFailure.dataError("stdin is not UTF-8 text (expected a script of APDUs in hex)")
                }
                if file == nil, text.allSatisfy(\.isWhitespace) {
                    throw UsageError("no APDU to send: give them as arguments, with -f <script>, or as a script on stdin")
                }
                script = try APDUScript.parse(text: text, name: "stdin")
            } else {
                script = try APDUScript.parse(lines: arguments.map { Substring($0) }, place: { "argument \($0)" })
            }
        } catch let problem as APDUScript.Problem {
            throw CommandFailure.dataError("\(problem)")
        }
        guard script.steps.contains(where: { if case .send = $0 { true } else { false } }) else {
            throw CommandFailure.dataError("the script holds no APDU to send")
        }
        return script
    }

    private func open(_ source: any CardSource) async throws -> any CardChannel {
        do {
            return try await source.waitForCard(timeout: wait, clock: clock)
        } catch {
            throw CommandFailure(error, "\(source.name): \(error)")
        }
    }

    /// A warm reset through pcscd (`SCardReconnect` with `SCARD_RESET_CARD`); the ATR after it.
    private static func reset(_ channel: PCSCCardChannel) async throws(CardChannelError) -> [UInt8] {
        do {
            _ = try await channel.card.reconnect(initialization: .reset)
            return try await channel.card.status().atr
        } catch {
            throw CardChannelError(error, during: .exchange, reader: channel.reader)
        }
    }

    private static func close(_ channel: any CardChannel) {
        (channel as? PCSCCardChannel)?.close()
    }

    /// The reader's full name, or the source as given (a profile, a trace file).
    private static func sourceName(_ channel: any CardChannel, _ source: any CardSource) -> String {
        if let pcsc = channel as? PCSCCardChannel { return pcsc.reader }
        if let trace = source as? TraceCardSource { return "trace \(trace.name)" }
        return source.name
    }
}
