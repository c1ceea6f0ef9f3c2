import BERTLV
import PaymentRules
import ISO7816
import VirtualCard

/// `tapemu cards show NAME [--json]`: one profile, for people or as a JSON file to start from.
struct CardsShowCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "cards show",
        abstract: "Show a card profile; --json prints it as a profile file to edit and load with --card FILE.json.",
        arguments: OutputOptions.arguments + [Self.profile],
        discussion: """
            Without --json: the profile's applications (AID, label, kernel, where the cryptogram \
            comes from, PDOL, AFL and records) and behaviour, the PAN masked. With --json: the \
            whole profile in the file format `tapemu cards schema` describes — save it, edit it, \
            and use it with `--card FILE.json` (loading it gives the same card). The export is the \
            card's definition, so it holds the profile's PAN in full; the built-in profiles' PANs \
            are test card numbers.
            """,
        exitCodes: [(ExitCode.dataError, "the profile file is not valid (the error names the JSON path)"),
                    (ExitCode.noInput, "the profile file does not exist"),
                    (ExitCode.ioError, "the profile file cannot be read (a directory, no permission)")])

    static let profile = Positional("<profile>", help: "A built-in profile (see `tapemu cards`) or a .json profile file.",
                                    missing: "<profile> (see `tapemu cards`)")

    var name: String
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        name = try arguments.value(Self.profile)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let profile = try CardSourceOptions.profile(named: name)
        if output.json {
            console.print(profile.jsonText)
        } else {
            console.write(Self.text(profile))
        }
        return ExitCode.success
    }

    static func text(_ p: CardProfile) -> String {
        let atr = ContactlessATR.typeA(historicalBytes: p.atrHistoricalBytes)
        var s = "\(p.name)  \(p.summary)\n"
        s += "  ATR          \(Hex.encode(atr))\n"
        s += "  PPSE         \(p.hasPPSE ? "yes" : "no (SELECT PPSE answers 6A82)")\n"
        s += "  ATC          \(p.atc) (the first cryptogram carries \(Int(p.atc) + 1))\n"
        for (i, a) in p.applications.enumerated() {
            s += "  Application \(i + 1)  \(Hex.encode(a.aid))  \(SensitiveData.maskedText(a.label))"
            if let k = a.kernelIdentifier { s += "  kernel \(Hex.encode(k))" }
            if let priority = a.priority { s += "  priority \(priority)" }
            s += "\n"
            s += "    PAN        \(a.pan.masked)  PSN \(a.panSequenceNumber)\n"
            s += "    AIP        \(Hex.encode(a.aip))\n"
            s += "    PDOL       \(dol(a.pdol))\n"
            s += "    GPO        format \(a.gpoFormat.rawValue)"
                + (a.cryptogram == .getProcessingOptions ? ", with the cryptogram\n" : "\n")
            if a.cryptogram == .generateAC {
                s += "    CDOL1      \(dol(a.cdol1))\n"
                s += "    GENERATE AC format \(a.generateACFormat.rawValue), with the cryptogram\n"
            }
            for r in a.records {
                let content = r.raw != nil ? "verbatim bytes (\(r.encoded.count))" : r.objects.map(\.tag.hex).joined(separator: " ")
                s += "    Record     SFI \(r.sfi) record \(r.number): \(content)\n"
            }
        }
        let b = p.behaviour
        var quirks: [String] = []
        if b.answersThroughGetResponse { quirks.append("answers through 61xx + GET RESPONSE") }
        if b.demandsExactLe { quirks.append("demands the exact Le (6Cxx)") }
        if b.declinesOffline { quirks.append("declines offline (AAC)") }
        if b.cardTime > .zero { quirks.append("spends \(b.cardTime) per command") }
        if !b.cardTimeByInstruction.isEmpty {
            quirks.append("card time by instruction: " + b.cardTimeByInstruction.sorted { $0.key < $1.key }
                .map { "\(Hex.encode([$0.key])) \($0.value)" }.joined(separator: ", "))
        }
        if let n = b.tearAfterExchange { quirks.append("leaves the field after exchange \(n)") }
        if let n = b.muteAtExchange { quirks.append("falls mute at exchange \(n)") }
        if !b.scriptedResponses.isEmpty { quirks.append("\(b.scriptedResponses.count) scripted answer(s)") }
        if !quirks.isEmpty { s += "  Behaviour    \(quirks.joined(separator: "; "))\n" }
        return s
    }

    /// `9F66 (4) 9F02 (6) …`, or `none`.
    private static func dol(_ bytes: [UInt8]) -> String {
        guard !bytes.isEmpty else { return "none" }
        guard let list = try? DataObjectList(bytes: bytes) else { return Hex.encode(bytes) }
        return list.entries.map { "\($0.tag.hex) (\($0.length))" }.joined(separator: " ")
    }
}
