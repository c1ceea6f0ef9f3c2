import BERTLV
import PaymentRules
import CardChannel
import ISO7816
import PCSC

/// `tapemu readers [--json]`: the PC/SC readers, like `pcsc_scan -r`, with card presence,
/// state and ATR.
struct ReadersCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "readers",
        abstract: "List the PC/SC readers with their state, card presence, ATR and what card the ATR names; --watch follows their events.",
        arguments: [WithDependents(Self.watch, [Self.reader, Self.events]), Self.json],
        discussion: """
            Asks pcscd for its readers and the state of each: whether a card is present, held \
            exclusively by another program, in use, mute (no answer to reset) or unavailable, and \
            the card's ATR with what it says (an ISO 14443-4 card goes on to EMV; a storage tag \
            such as MIFARE Classic or Ultralight is not a payment card). The index in front of each \
            reader is what `--reader <index>` takes; a unique part of the name works too. Readers \
            whose name says PICC, Contactless or CL are the contactless interface.
            vsmartcard-vpcd's readers are `Virtual PCD 00 00`, `Virtual PCD 00 01`: `tapemu \
            emulate` puts a virtual card in them.
            With --watch (what `pcsc_scan` does): one line for each reader as it is, then one line \
            per event as it happens — reader added, reader removed, card inserted (with its ATR and \
            what the ATR says), card removed, card mute — each with the time. pcscd tells of every \
            change (SCardGetStatusChange, readers plugged in or out included); nothing is polled. \
            With --json each line is one JSON object: `event` (`initial` for the first view of a \
            reader, then `readerAdded`, `readerRemoved`, `cardInserted`, `cardRemoved`, \
            `cardMute`; `error` with `exitCode` and `message` when the watch fails), `time`, and the \
            reader's fields as without --watch. Ctrl-C (SIGINT) or \
            SIGTERM ends the watch, exit 0; so does the n-th event with --events n.
            The card is named as pcsc_scan names it, from pcsc-tools' list of known ATRs: \
            ~/.cache/smartcard_list.txt (kept up to date by `pcsc_scan -u`) if there is one, else \
            Debian's /usr/share/pcsc/smartcard_list.txt (package pcsc-tools); the list shows last \
            which file it was (`atrNamesFrom` with --json; on stderr with --watch). Without either, \
            the ATR is shown alone.
            """,
        exitCodes: [(ExitCode.unavailable, "the PC/SC service (pcscd) is not running or stopped, or no reader matches --reader")])

    static let watch = Flag("--watch", help: "Follow reader and card events until Ctrl-C, one line each (as pcsc_scan).")
    static let reader = Option<String>(
        "--reader", value: "<name>", help: "With --watch: only this reader (name, unique part of it, or index).")
    static let events = Option<Int>.integer(
        "--events", value: "<n>", help: "With --watch: stop after n events (the first view does not count).", in: 1...1_000_000)
    /// `--json`, with what it does under --watch.
    static let json = Flag(
        "--json", help: "Print one JSON document on stdout instead of text; with --watch, one JSON object a line.")

    var output: OutputOptions
    var watch: Bool
    var reader: String?
    var events: Int?

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(json: arguments.isSet(Self.json))
        watch = arguments.isSet(Self.watch)
        reader = try arguments.value(Self.reader)
        events = try arguments.value(Self.events)
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        if !watch, reader != nil { throw UsageError("--reader only goes with --watch (the list shows every reader)") }
        if !watch, events != nil { throw UsageError("--events only goes with --watch") }
    }

    func run(_ console: Console) async throws -> Int32 {
        if watch { return try await runWatch(console) }
        let report: [ReaderReport]
        do {
            report = try await PCSC.readerReport()
        } catch {
            throw CommandFailure.unavailable("\(error)")
        }
        let names = Self.atrNames
        if output.json {
            try JSONOutput.print(JSONValue.object([
                "readers": .array(report.map(Self.json)),
                "atrNamesFrom": names.map { .string($0.path) } ?? .null,
            ]), to: console)
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
                if let known = Self.knownAs(atr.bytes, names) { console.print("   Known as: \(known)") }
            }
        }
        console.print(Self.namesSource(names))
        return ExitCode.success
    }

    /// What pcsc-tools' list calls the card with `atr` (every matching entry's lines, joined),
    /// nil when it has none or there is no list.
    static func knownAs(_ atr: [UInt8], _ list: SmartcardList?) -> String? {
        guard let found = list?.names(for: atr), !found.isEmpty else { return nil }
        return SensitiveData.maskedText(found.joined(separator: "; "))
    }

    /// Where the names came from, or why there are none.
    static func namesSource(_ list: SmartcardList?) -> String {
        if let list { return "ATR names from \(list.path) (pcsc-tools' list, as pcsc_scan)" }
        return "ATR names: no smartcard_list.txt (looked in \(SmartcardList.defaultPaths().joined(separator: ", ")); install pcsc-tools): the ATR alone is shown"
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

    /// pcsc-tools' list of known ATRs, read once (nil when not installed).
    static let atrNames = SmartcardList.load()

    static func json(_ r: ReaderReport) -> JSONValue {
        let names = atrNames
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
            d["knownAs"] = .array((names?.names(for: atr.bytes) ?? []).map { .string(SensitiveData.maskedText($0)) })
        } else {
            d["atr"] = .null
        }
        return .object(d)
    }
}
