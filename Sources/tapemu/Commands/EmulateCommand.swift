import CardChannel
import Dispatch
import Foundation
import ISO7816
import PCSC
import VPCD
import Synchronization
import VirtualCard
#if canImport(Glibc)
import Glibc
import APDUTrace
import BERTLV
import PaymentRules
#endif

/// `tapemu emulate`: a virtual card (or the card side of a trace) in a vpcd reader slot, so any
/// PC/SC program reads it through pcscd.
struct EmulateCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulate",
        abstract: "Serve a virtual card into a vsmartcard-vpcd reader slot until Ctrl-C.",
        arguments: [OneOf([Self.card, Self.trace]), Self.vpcd, Self.slot, Self.removeAfter] + OutputOptions.arguments,
        discussion: """
            Connects to vsmartcard-vpcd (a pcscd driver; Debian package vsmartcard-vpcd) as the \
            card of one of its readers, and answers until SIGINT or SIGTERM: power off/on, reset \
            and ATR requests, and every command APDU as the card would. Any PC/SC program then \
            sees the card in `Virtual PCD 00 00` (slot 0, port 35963) or `Virtual PCD 00 01` \
            (slot 1, port 35964): `tapemu read --reader "Virtual PCD 00 00"`, `scriptor`, \
            `pcsc_scan`. When pcscd restarts, the card reconnects by itself.
            Each exchange is printed as the command and the status word with the response's \
            length; response data (which holds the PAN) is never printed.
            """,
        exitCodes: [(ExitCode.dataError, "the trace or profile file is not valid"),
                    (ExitCode.noInput, "the trace or profile file does not exist"),
                    (ExitCode.ioError, "the trace or profile file cannot be read (a directory, no permission)")])

    static let card = Option<String>(
        "--card", value: "<profile>", help: "The virtual card: a built-in profile or a .json profile (default visa-qvsdc).")
    static let trace = Option<String>("--trace", value: "<file>", help: "Serve the card side of a recorded .apdu trace instead.")
    static let vpcd = Option<VPCDEndpoint>("--vpcd", value: "<host:port>", help: "Where vpcd listens (default 127.0.0.1:35963).") {
        text, _ throws(UsageError) in
        guard let e = VPCDEndpoint.parse(text) else {
            throw UsageError("--vpcd takes HOST:PORT (e.g. 127.0.0.1:35963), not '\(text)'")
        }
        return e
    }
    static let slot = Option<Int>.integer(
        "--slot", value: "<n>", help: "The reader slot: port + n (default 0, 'Virtual PCD 00 00').", in: 0...15)
    static let removeAfter = Option<Int>.integer(
        "--remove-after", value: "<n>", help: "Take the card out of the field when command n+1 arrives (a tear).",
        in: 0...1_000_000)

    var card: String?
    var trace: String?
    var endpoint: VPCDEndpoint
    var slot: Int
    var removeAfter: Int?
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        card = try arguments.value(Self.card)
        trace = try arguments.value(Self.trace)
        endpoint = try arguments.value(Self.vpcd, default: VPCDEndpoint())
        slot = try arguments.value(Self.slot, default: 0)
        removeAfter = try arguments.value(Self.removeAfter)
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        if card != nil && trace != nil { throw UsageError("--card and --trace cannot be used together; choose one card") }
        guard endpoint.port + slot <= 65535 else { throw UsageError("--slot \(slot) puts the port past 65535") }
    }

    func run(_ console: Console) async throws -> Int32 {
        let log = EmulationLog(console: console, quiet: output.json)
        let responder: any CardResponder
        let cardName: String
        if let trace {
            // Missing is 66 and unreadable 74, as for every command that reads a trace.
            let parsed = try TraceFiles.load(trace)
            responder = TraceCardResponder(trace: parsed, onProblem: { log.problem($0) })
            cardName = "trace \(trace)"
        } else {
            let profile = try CardSourceOptions.profile(named: card ?? CardSourceOptions.defaultProfile)
            responder = EmulatedCard(profile: profile)
            cardName = profile.name
        }
        let target = VPCDEndpoint(host: endpoint.host, port: endpoint.port + slot)
        let reader = endpoint.port == VPCDEndpoint.defaultPort ? " (reader '\(VPCDEndpoint.readerName(slot: slot))')" : ""
        log.line("Serving \(cardName), ATR \(Hex.encode(responder.atr)), to vpcd at \(target)\(reader). Ctrl-C to stop.")

        let server = VPCDCardServer(card: responder, endpoint: target, removeAfter: removeAfter,
                                    onEvent: { log.event($0) })
        let task = Task { await server.run() }
        let outcome = await SignalTrap.whileRunning(onSignal: { task.cancel() }) { await task.value }

        let exchanges = log.exchanges
        switch outcome {
        case .stopped: log.line("Stopped after \(exchanges) exchange(s).")
        case .cardRemoved(let n): log.line("The card left the field after \(n) exchange(s).")
        }
        if output.json {
            var d: [String: JSONValue] = [
                "card": .string(cardName),
                "vpcd": .string(target.description),
                "atr": .string(Hex.encode(responder.atr)),
                "exchanges": .int(exchanges),
                "connections": .int(log.connections),
            ]
            switch outcome {
            case .stopped: d["outcome"] = .string("stopped")
            case .cardRemoved: d["outcome"] = .string("cardRemoved")
            }
            if endpoint.port == VPCDEndpoint.defaultPort { d["reader"] = .string(VPCDEndpoint.readerName(slot: slot)) }
            try JSONOutput.print(JSONValue.object(d), to: console)
        }
        return ExitCode.success
    }
}

/// What `emulate` prints as the card is used: one line per event worth a human's attention.
final class EmulationLog: Sendable {
    private struct State {
        var exchanges = 0
        var connections = 0
        var failing = false
    }
    private let console: Console
    private let quiet: Bool
    private let state = Mutex(State())

    init(console: Console, quiet: Bool) {
        self.console = console
        self.quiet = quiet
    }

    var exchanges: Int { state.withLock { $0.exchanges } }
    var connections: Int { state.withLock { $0.connections } }

    /// Status lines go to stdout, or to stderr when stdout carries the JSON document.
    func line(_ s: String) {
        if quiet { console.printError(s) } else { console.print(s) }
    }

    func problem(_ e: CardChannelError) {
        line("trace: \(e) — answered 6F00")
    }

    func event(_ e: VPCDCardServer.Event) {
        switch e {
        case .connecting, .atrRequested:
            break
        case .unanswered(let after):
            line("vpcd took the connection but has asked nothing in \(after): another program (a second "
                 + "`tapemu emulate`?) serves this slot and vpcd keeps this card waiting; stop it or use another --slot. Waiting…")
        case .connected(let at):
            state.withLock { $0.connections += 1; $0.failing = false }
            line("Connected to vpcd at \(at).")
        case .connectFailed(let reason, _):
            // Once per outage, not on every retry.
            let first = state.withLock { s -> Bool in defer { s.failing = true }; return !s.failing }
            if first { line("vpcd is not reachable (\(reason)); retrying with backoff… (is pcscd running with vsmartcard-vpcd?)") }
        case .disconnected(let reason):
            line("vpcd closed the connection (\(reason)); reconnecting (pcscd restarted?)")
        case .powerOn: line("Card powered on.")
        case .powerOff: line("Card powered off.")
        case .reset: line("Card reset.")
        case .exchange(let command, let response, let cardTime):
            let n = state.withLock { s -> Int in s.exchanges += 1; return s.exchanges }
            let sw = response.count >= 2 ? Hex.encode(response.suffix(2)) : "(no SW)"
            let slow = cardTime > .zero ? ", card time \(Self.milliseconds(cardTime)) ms" : ""
            line("#\(n) > \(Self.show(command)) < \(sw) (\(response.count) bytes\(slow))")
        case .mute(let command):
            line("> \(Self.show(command)) — the card is mute: no answer")
        case .removed(let n):
            line("Card torn away (connection reset) after \(n) exchange(s).")
        }
    }

    /// `0.04`, `150.00`: a duration in milliseconds, two decimals.
    static func milliseconds(_ d: Duration) -> String {
        let (s, atto) = d.components
        let hundredths = s * 100_000 + atto / 10_000_000_000_000
        let frac = hundredths % 100
        return "\(hundredths / 100).\(frac < 10 ? "0" : "")\(frac)"
    }

    /// A command for the log: in hex with any card number in it masked (a reader may send one,
    /// in CDOL data for instance), and without the data of VERIFY / CHANGE REFERENCE DATA (PINs).
    static func show(_ command: [UInt8]) -> String {
        guard command.count > 4, command[1] == 0x20 || command[1] == 0x24 else { return SensitiveData.maskedHex(command) }
        return Hex.encode(command.prefix(4)) + " (PIN block hidden)"
    }
}
