import BenchTiming
import BERTLV
import PaymentRules
import CardChannel
import EMVKernel
import ISO7816
import Timing
import APDUTrace

/// `tapemu read`: runs the EMV contactless kernel on a card and shows what it read.
struct ReadCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Read a card with the EMV contactless kernel: application, card data, cryptogram, exchanges.",
        arguments: CardSourceOptions.arguments + [Self.amount, Self.wait, Self.apduTimeout, WithDependents(Self.record, [Self.noRedact])]
            + ODAOptions.arguments + OutputOptions.arguments,
        discussion: """
            Selects the payment application (PPSE, or the terminal's AIDs one by one when the card \
            has none), runs GET PROCESSING OPTIONS, reads every record the AFL names and, when the \
            card did not give a cryptogram with GPO, asks for an ARQC with GENERATE AC. It \
            authenticates the card offline (SDA, fDDA, DDA or CDA, with the CA keys; --ca-keys adds \
            keys, --crl refuses issuer certificates, --oda-methods says which methods the terminal \
            supports) and says how in one line (JSON: "oda"). Prints a \
            summary (brand, label, AID, masked PAN, expiry, CVM, cryptogram) and every exchange with \
            its timing. No payment is made. The full PAN and track 2 are never printed: PANs show \
            their first 6 and last 4 digits, also inside the exchanged bytes.
            A card that breaks the protocol gives one line on stderr naming the step (PPSE, SELECT \
            AID, GPO, READ RECORD n/SFI m, GENERATE AC) and the reason.
            """,
        exitCodes: [
            (ExitCode.declined, "the card declined offline (AAC); the card data is still shown"),
            (ExitCode.dataError, "the card broke the protocol (malformed or missing data, wrong status word) or has no supported application; or the --trace or --card file is not valid"),
            (ExitCode.noInput, "the --trace or --card file does not exist"),
            (ExitCode.unavailable, "no such reader, or the PC/SC service is not running"),
            (ExitCode.ioError, "the --record file cannot be written, or the --trace file cannot be read"),
            (ExitCode.temporaryFailure, "no card came, the card was removed, it did not answer in time, or the reader failed mid-exchange"),
        ])

    static let amount = Option<Int>.integer(
        "--amount", value: "<cents>",
        help: "The amount the card sees, in minor units (default 1000 = 10.00 EUR; with --trace, the amount the trace recorded).",
        in: 0...Int(EMVAmount.maximum))
    static let wait = CardSourceOptions.wait.withHelp("How long to wait for a card to be presented (default 30s).")
    static let apduTimeout = CardSourceOptions.apduTimeout
    static let record = Option<String>(
        "--record", value: "<file>", help: "Record the session as a .apdu trace (redacted when the card is on a real reader).")
    static let noRedact = Flag("--no-redact", help: "With --record: keep the PAN, track 2 and name (never commit such a trace).")

    var source: CardSourceOptions
    /// nil: 1000, or with --trace the amount the trace's reader sent (so any trace reads as recorded).
    var amount: UInt64?
    var wait: Duration
    var apduTimeout: Duration
    var output: OutputOptions
    var record: String?
    var noRedact: Bool
    var oda: ODAOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        source = try CardSourceOptions(arguments: &arguments)
        amount = try arguments.value(Self.amount).map(UInt64.init)
        wait = try arguments.value(Self.wait, default: .seconds(30))
        apduTimeout = try arguments.value(Self.apduTimeout, default: .seconds(2))
        record = try arguments.value(Self.record)
        noRedact = arguments.isSet(Self.noRedact)
        oda = try ODAOptions(arguments: &arguments)
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        if noRedact && record == nil { throw UsageError("--no-redact only goes with --record") }
        if let record, case .trace(let path) = source.source, SamePath.same(record, path) {
            throw UsageError("--record \(record) is the --trace being replayed: it would be overwritten; record elsewhere")
        }
    }

    func run(_ console: Console) async throws -> Int32 {
        let cardSource = try source.makeSource()
        let clock = MonotonicClock.continuous
        let channel: any CardChannel
        if case .reader = source.source {
            // A reader may be empty: say what the silence is (a virtual card or a trace is there at once).
            console.printError("tapemu: waiting up to \(wait.readable) for a card on reader '\(cardSource.name)' (--wait to change; Ctrl-C to stop)")
        }
        do {
            channel = try await cardSource.waitForCard(timeout: wait, clock: clock)
        } catch {
            throw CommandFailure(error, "\(cardSource.name): \(error)")
        }
        let recorder = record.map { _ in
            TraceRecording.wrap(channel, source: source, sourceName: cardSource.name, redact: noRedact ? false : nil, clock: clock)
        }
        // A trace's card is read as the recorded reader read it: its amount, currency, country,
        // date, time and unpredictable number (one rule, TraceReplaySetup's), so the read is the
        // recorded one — its online data (field 55) the data the recorded cryptogram was made over.
        let setup = (cardSource as? TraceCardSource).map { TraceReplaySetup(trace: $0.trace, amount: amount) }
        let configuration = try oda.apply(to: setup?.configuration ?? .default)
        let transaction = setup?.transaction ?? Transaction(amount: amount ?? 1000)
        let reader = EMVReader(configuration: configuration, environment: setup?.environment ?? .system)
        let result: Result<CardRead, KernelError>
        do throws(KernelError) {
            result = .success(try await reader.read(channel: recorder ?? channel, transaction: transaction,
                                                    apduTimeout: apduTimeout, clock: clock))
        } catch {
            result = .failure(error)
        }
        if let recorder, let record {
            let outcome: String
            switch result {
            case .success(let read): outcome = ReplayOutcome.summary(read)
            case .failure(let error): outcome = ReplayOutcome.summary(error)
            }
            try TraceRecording.write(recorder, to: record, outcome: outcome)
        }
        switch result {
        case .success(let read):
            try output.print(json: CardReadRender.json(read, source: cardSource.name, transaction: transaction,
                                                       configuration: configuration),
                             text: CardReadRender.text(read, source: cardSource.name, transaction: transaction,
                                                       configuration: configuration),
                             to: console)
            return ExitCode.success
        case .failure(let error):
            let code = ExitCode.of(error)
            if output.json {
                try JSONOutput.print(CardReadRender.json(error, source: cardSource.name, transaction: transaction,
                                                         configuration: configuration, exitCode: code), to: console)
            } else if let partial = error.partial, !partial.exchanges.isEmpty {
                console.write(CardReadRender.text(partial, source: cardSource.name, transaction: transaction,
                                                configuration: configuration))
            }
            throw CommandFailure(exitCode: code, error.description)
        }
    }
}
