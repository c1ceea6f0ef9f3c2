import BERTLV
import CardChannel
import EMVKernel
import ISO7816

/// `tapemu read`: runs the EMV contactless kernel on a card and shows what it read.
struct ReadCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Read a card with the EMV contactless kernel: application, card data, cryptogram, exchanges.",
        arguments: CardSourceOptions.arguments + [Self.amount, Self.wait, Self.apduTimeout, Self.record, Self.noRedact]
            + OutputOptions.arguments,
        discussion: """
            Selects the payment application (PPSE, or the terminal's AIDs one by one when the card \
            has none), runs GET PROCESSING OPTIONS, reads every record the AFL names and, when the \
            card did not give a cryptogram with GPO, asks for an ARQC with GENERATE AC. Prints a \
            summary (brand, label, AID, masked PAN, expiry, CVM, cryptogram) and every exchange with \
            its timing. No payment is made. The full PAN and track 2 are never printed: PANs show \
            their first 6 and last 4 digits, also inside the exchanged bytes.
            A card that breaks the protocol gives one line on stderr naming the step (PPSE, SELECT \
            AID, GPO, READ RECORD n/SFI m, GENERATE AC) and the reason.
            """,
        exitCodes: [
            (2, "the card declined offline (AAC); the card data is still shown"),
            (ExitCode.dataError, "the card broke the protocol (malformed or missing data, wrong status word) or has no supported application; or the --trace or --card file is not valid"),
            (ExitCode.noInput, "the --trace or --card file does not exist"),
            (ExitCode.unavailable, "no such reader, or the PC/SC service is not running"),
            (ExitCode.ioError, "the --record file cannot be written, or the --trace file cannot be read"),
            (ExitCode.temporaryFailure, "no card came, the card was removed, it did not answer in time, or the reader failed mid-exchange"),
        ])

    static let declinedOffline: Int32 = 2

    static let amount = Option<Int>.integer(
        "--amount", value: "<cents>",
        help: "The amount the card sees, in minor units (default 1000 = 10.00 EUR; with --trace, the amount the trace recorded).",
        in: 0...999_999_999_999)
    static let wait = Option<Duration>.duration("--wait", help: "How long to wait for a card to be presented (default 30s).")
    static let apduTimeout = Option<Duration>.duration("--apdu-timeout", help: "How long one APDU may take (default 2s).")
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

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        source = try CardSourceOptions(arguments: &arguments)
        amount = try arguments.value(Self.amount).map(UInt64.init)
        wait = try arguments.value(Self.wait, default: .seconds(30))
        apduTimeout = try arguments.value(Self.apduTimeout, default: .seconds(2))
        record = try arguments.value(Self.record)
        noRedact = arguments.isSet(Self.noRedact)
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        guard apduTimeout > .zero else { throw UsageError("--apdu-timeout must be more than 0") }
        if noRedact && record == nil { throw UsageError("--no-redact only goes with --record") }
        if let record, case .trace(let path) = source.source, SamePath.same(record, path) {
            throw UsageError("--record \(record) is the --trace being replayed: it would be overwritten; record elsewhere")
        }
    }

    func run(_ console: Console) async throws -> Int32 {
        let cardSource = try source.makeSource()
        let clock = MonotonicClock.continuous
        let channel: any CardChannel
        do {
            channel = try await cardSource.waitForCard(timeout: wait, clock: clock)
        } catch {
            throw CommandFailure(exitCode: Self.exitCode(for: error.code), "\(cardSource.name): \(error)")
        }
        let recorder = record.map { _ in
            TraceRecording.wrap(channel, source: source, sourceName: cardSource.name, redact: noRedact ? false : nil, clock: clock)
        }
        let recordedAmount = (cardSource as? TraceCardSource)?.trace.terminalData[.amountAuthorised].flatMap(BCD.value)
        let transaction = Transaction(amount: amount ?? min(recordedAmount ?? 1000, 999_999_999_999))
        let result: Result<CardRead, KernelError>
        do throws(KernelError) {
            result = .success(try await EMVReader().read(channel: recorder ?? channel, transaction: transaction,
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
            if output.json {
                try JSONOutput.print(CardReadRender.json(read, source: cardSource.name, transaction: transaction), to: console)
            } else {
                console.write(CardReadRender.text(read, source: cardSource.name, transaction: transaction))
            }
            return ExitCode.success
        case .failure(let error):
            let code: Int32
            switch error.code {
            case .cardDeclinedOffline: code = Self.declinedOffline
            case .channelFailed: code = Self.exitCode(for: error.channelError?.code)
            default: code = ExitCode.dataError
            }
            if output.json {
                try JSONOutput.print(CardReadRender.json(error, source: cardSource.name, transaction: transaction,
                                                         exitCode: code), to: console)
            } else if let partial = error.partial, !partial.exchanges.isEmpty {
                console.write(CardReadRender.text(partial, source: cardSource.name, transaction: transaction))
            }
            throw CommandFailure(exitCode: code, error.description)
        }
    }

    static func exitCode(for code: CardChannelError.Code?) -> Int32 {
        switch code {
        case .noService?, .noReader?, .readerRemoved?, .sharingViolation?: return ExitCode.unavailable
        case .noCard?, .cardRemoved?, .timeout?: return ExitCode.temporaryFailure
        case .traceMismatch?, .traceEnded?, .malformedResponse?, .notAPaymentCard?: return ExitCode.dataError
        case .transmitFailed?, .responseChainingFailed?: return ExitCode.temporaryFailure
        default: return ExitCode.software
        }
    }
}

/// How a card read is shown: text for people, JSON for programs. The PAN only ever masked.
enum CardReadRender {
    static func amount(_ t: Transaction) -> String {
        let c = TerminalConfiguration.default
        let currency = ISOCodes.currency(Int(c.currencyCode))
        let exponent = currency?.exponent ?? Int(c.currencyExponent)
        var digits = String(t.amount)
        if exponent > 0 {
            while digits.count <= exponent { digits = "0" + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -exponent))
        }
        return "\(digits) \(currency?.code ?? String(c.currencyCode))"
    }

    static func cvmText(_ cvm: CardholderVerification) -> String {
        switch cvm {
        case .noCVM: return "no CVM"
        case .onlinePIN: return "online PIN"
        case .signature: return "signature"
        case .consumerDevice: return "consumer device CVM"
        case .failed: return "CVM failed (none possible)"
        }
    }

    // MARK: Text

    static func text(_ read: CardRead, source: String, transaction: Transaction) -> String {
        var s = summary(application: read.application, card: read.card, cryptogram: read.cryptogram, cvm: read.cvm,
                        cvmDecision: read.cvmDecision, source: source, transaction: transaction)
        s += "\n" + table(read.exchanges, pans: [read.card.pan])
        return s
    }

    static func text(_ partial: PartialCardRead, source: String, transaction: Transaction) -> String {
        var s = summary(application: partial.application, card: partial.card, cryptogram: partial.cryptogram,
                        cvm: partial.cvm, source: source, transaction: transaction)
        s += "\n" + table(partial.exchanges, pans: partial.card.map { [$0.pan] } ?? [])
        return s
    }

    static func summary(application: ApplicationInfo?, card: CardData?, cryptogram: Cryptogram?,
                        cvm: CardholderVerification?, cvmDecision: CVMDecision? = nil, source: String,
                        transaction: Transaction) -> String {
        var rows: [(String, String)] = [("Card", source), ("Amount", amount(transaction))]
        if let a = application {
            var line = "\(a.brand.displayName)"
            if let label = a.label { line += " — \(label)" }
            if let name = a.preferredName, name != a.label { line += " (\(name))" }
            rows.append(("Application", line))
            rows.append(("AID", "\(a.aidHex)  kernel \(a.kernel)\(a.priority.map { "  priority \($0)" } ?? "")"))
        }
        if let c = card {
            rows.append(("PAN", "\(c.pan.masked)\(c.panSequenceNumber.map { "  PSN \($0 < 10 ? "0" : "")\($0)" } ?? "")"))
            rows.append(("Expiry", c.expiry.description))
            if let name = c.cardholderName { rows.append(("Cardholder", name)) }
        }
        if let cvm { rows.append(("CVM", cvmText(cvm))) }
        if let d = cvmDecision {
            rows.append(("CVM results", "\(Hex.encode(d.results))  (9F34)"))
            rows.append(("CVM rule", d.reason))
        }
        if let k = cryptogram {
            rows.append(("Cryptogram", "\(k.kind) (CID \(Hex.encode([k.cid])))  ATC \(k.atc)  AC \(Hex.encode(k.ac))  from \(k.source == .gpo ? "GPO" : "GENERATE AC")"))
            if !k.iad.isEmpty { rows.append(("IAD", Hex.encode(k.iad))) }
            rows.append(("Online data", truncate(Hex.encode(k.onlineDataBytes), 64)))
        }
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { "\($0.0)\(String(repeating: " ", count: width - $0.0.count))  \($0.1)\n" }.joined()
    }

    static func truncate(_ s: String, _ n: Int) -> String {
        s.count <= n ? s : String(s.prefix(n - 1)) + "…"
    }

    static func table(_ exchanges: [Exchange], pans: [PAN]) -> String {
        var rows: [[String]] = [["#", "Command", "Command APDU", "Response", "SW", "µs"]]
        for (i, e) in exchanges.enumerated() {
            let sw: String
            if let r = e.response {
                sw = "\(r.statusWord.hex) \(r.statusWord.name)"
            } else {
                sw = "— \(e.failure?.description ?? "failed")"
            }
            rows.append([
                "\(i + 1)", e.command.summary,
                truncate(Redaction.hex(e.command, knownPANs: pans), 28),
                e.response.map { truncate(Redaction.hex($0.data, knownPANs: pans), 36) } ?? "",
                truncate(sw, 40),
                "\(e.micros)",
            ])
        }
        let widths = (0..<6).map { c in rows.map { $0[c].count }.max() ?? 0 }
        return rows.map { row in
            (0..<6).map { c in
                let pad = String(repeating: " ", count: widths[c] - row[c].count)
                return c == 0 || c == 5 ? pad + row[c] : row[c] + pad    // numbers right-aligned
            }.joined(separator: "  ").trimmingTrailingSpaces + "\n"
        }.joined()
    }

    // MARK: JSON

    static func json(_ read: CardRead, source: String, transaction: Transaction) -> JSONValue {
        .object([
            "source": .string(source),
            "transaction": json(transaction),
            "application": json(read.application),
            "card": json(read.card),
            "cryptogram": json(read.cryptogram),
            "cvm": .string(read.cvm.rawValue),
            "cvmDecision": read.cvmDecision.map { d in
                JSONValue.object(["results": .string(Hex.encode(d.results)), "kernel": .string(d.kernel.description),
                                  "reason": .string(d.reason)])
            } ?? .null,
            "exchanges": json(read.exchanges, pans: [read.card.pan]),
        ])
    }

    static func json(_ error: KernelError, source: String, transaction: Transaction, exitCode: Int32) -> JSONValue {
        var e: [String: JSONValue] = [
            "exitCode": .int(Int(exitCode)),
            "code": .string(error.code.name),
            "step": .string(error.step.description),
            "reason": .string(error.reason),
            "message": .string(error.description),
        ]
        if let sw = error.statusWord { e["sw"] = .string(sw.hex) }
        if let c = error.channelError { e["channelError"] = .string(c.code.name) }
        let partial = error.partial ?? PartialCardRead()
        e["afterOnlineDataReady"] = .bool(partial.onlineDataWasReady)
        var d: [String: JSONValue] = [
            "source": .string(source),
            "transaction": json(transaction),
            "error": .object(e),
            "exchanges": json(partial.exchanges, pans: partial.card.map { [$0.pan] } ?? []),
        ]
        if let a = partial.application { d["application"] = json(a) }
        if let c = partial.card { d["card"] = json(c) }
        if let k = partial.cryptogram { d["cryptogram"] = json(k) }
        if let cvm = partial.cvm { d["cvm"] = .string(cvm.rawValue) }
        return .object(d)
    }

    static func json(_ t: Transaction) -> JSONValue {
        .object(["amount": .int(Int(t.amount)), "currency": .int(Int(TerminalConfiguration.default.currencyCode)),
                 "type": .string(String(describing: t.type))])
    }

    static func json(_ a: ApplicationInfo) -> JSONValue {
        .object([
            "aid": .string(a.aidHex),
            "label": a.label.map(JSONValue.string) ?? .null,
            "preferredName": a.preferredName.map(JSONValue.string) ?? .null,
            "priority": a.priority.map { .int(Int($0)) } ?? .null,
            "brand": .string(a.brand.rawValue),
            "kernelId": .int(Int(a.kernelID)),
            "kernel": .string(a.kernel.description),
            "aip": .string(Hex.encode(a.applicationInterchangeProfile)),
            "languagePreference": a.languagePreference.map(JSONValue.string) ?? .null,
        ])
    }

    static func json(_ c: CardData) -> JSONValue {
        .object([
            "panMasked": .string(c.pan.masked),
            "first6": .string(c.pan.first6),
            "last4": .string(c.pan.last4),
            "expiry": .string(c.expiry.description),
            "panSequenceNumber": c.panSequenceNumber.map { .int($0) } ?? .null,
            "cardholderName": c.cardholderName.map(JSONValue.string) ?? .null,
            "serviceCode": c.track2.map { .string($0.serviceCode) } ?? .null,
            "issuerCountryCode": c.issuerCountryCode.map { .int($0) } ?? .null,
        ])
    }

    static func json(_ k: Cryptogram) -> JSONValue {
        .object([
            "cid": .string(Hex.encode([k.cid])),
            "type": .string(k.kind.rawValue),
            "atc": .int(Int(k.atc)),
            "ac": .string(Hex.encode(k.ac)),
            "iad": .string(Hex.encode(k.iad)),
            "unpredictableNumber": .string(Hex.encode(k.unpredictableNumber)),
            "source": .string(k.source.rawValue),
            "onlineData": .string(Hex.encode(k.onlineDataBytes)),
            "onlineDataObjects": .array(k.onlineData.map {
                .object(["tag": .string($0.tag.hex), "value": .string(Hex.encode($0.value))])
            }),
        ])
    }

    static func json(_ exchanges: [Exchange], pans: [PAN]) -> JSONValue {
        .array(exchanges.map { e in
            var d: [String: JSONValue] = [
                "name": .string(e.command.summary),
                "command": .string(Redaction.hex(e.command, knownPANs: pans)),
                "response": e.response.map { .string(Redaction.hex($0.data, knownPANs: pans)) } ?? .null,
                "sw": e.response.map { .string($0.statusWord.hex) } ?? .null,
                "micros": .int(Int(e.micros)),
                "startMicros": .int(Int(e.start.components.seconds * 1_000_000
                                        + e.start.components.attoseconds / 1_000_000_000_000)),
            ]
            if let r = e.response { d["swMeaning"] = .string(r.statusWord.name) }
            if let f = e.failure { d["failure"] = .string(f.name) }
            return .object(d)
        })
    }
}
