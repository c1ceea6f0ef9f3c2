import CardChannel
import ISO7816
import PCSC

/// `tapemu readers [--json]`: the PC/SC readers, like `pcsc_scan -r`, with card presence,
/// state and ATR.
struct ReadersCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "readers",
        abstract: "List the PC/SC readers with their state, card presence and ATR.",
        usage: "[--json]",
        discussion: """
            Asks pcscd for its readers and the state of each: whether a card is present, held \
            exclusively by another program, in use, mute (no answer to reset) or unavailable, and \
            the card's ATR with what it says (an ISO 14443-4 card goes on to EMV; a storage tag \
            such as MIFARE Classic or Ultralight is not a payment card). The index in front of each \
            reader is what `--reader <index>` takes; a unique part of the name works too. Readers \
            whose name says PICC, Contactless or CL are the contactless interface.
            vsmartcard-vpcd's readers are `Virtual PCD 00 00`, `Virtual PCD 00 01`: `tapemu \
            emulate` puts a virtual card in them.
            """,
        options: OutputOptions.help,
        exitCodes: [(ExitCode.unavailable, "the PC/SC service (pcscd) is not running")])

    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let report: [ReaderReport]
        do {
            report = try await PCSC.readerReport()
        } catch {
            throw CommandFailure(exitCode: ExitCode.unavailable, "\(error)")
        }
        if output.json {
            try JSONOutput.print(JSONValue.object(["readers": .array(report.map(Self.json))]), to: console)
            return ExitCode.success
        }
        if report.isEmpty {
            console.print("No PC/SC reader. Plug one in, or install vsmartcard-vpcd and restart pcscd for the virtual readers.")
            return ExitCode.success
        }
        for r in report {
            console.print("\(r.index): \(r.name)\(r.isContactless ? "  (contactless)" : "")")
            console.print("   " + Self.stateLine(r))
            if let atr = r.readerATR {
                console.print("   ATR \(Hex.encode(atr.bytes)) — \(atr)")
            }
        }
        return ExitCode.success
    }

    static func stateLine(_ r: ReaderReport) -> String {
        let s = r.state
        var words: [String] = []
        if s.isUnavailable { words.append("unavailable") }
        if s.isMute {
            words.append("card present but mute (no answer to reset)")
        } else if s.flags.contains(.present) {
            words.append("card present")
        } else if s.flags.contains(.empty) {
            words.append("no card")
        }
        if s.isExclusive { words.append("held exclusively by another program") }
        else if s.flags.contains(.inUse) { words.append("in use") }
        if s.flags.contains(.unpowered) { words.append("unpowered") }
        return words.isEmpty ? "state unknown" : words.joined(separator: ", ")
    }

    static func json(_ r: ReaderReport) -> JSONValue {
        var d: [String: JSONValue] = [
            "index": .int(r.index),
            "name": .string(r.name),
            "contactless": .bool(r.isContactless),
            "cardPresent": .bool(r.state.flags.contains(.present)),
            "state": .array(r.state.flagNames.map(JSONValue.string)),
            "exclusive": .bool(r.state.isExclusive),
            "mute": .bool(r.state.isMute),
            "unavailable": .bool(r.state.isUnavailable),
        ]
        if let atr = r.readerATR {
            d["atr"] = .string(Hex.encode(atr.bytes))
            d["card"] = .string(atr.description)
            d["paymentCapable"] = .bool(atr.canCarryAPDUs)
        } else {
            d["atr"] = .null
        }
        return .object(d)
    }
}
