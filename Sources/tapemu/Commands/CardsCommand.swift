import BERTLV
import ISO7816
import VirtualCard

/// `tapemu cards`: the built-in virtual card profiles, one line each.
struct CardsCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "cards",
        abstract: "List the built-in virtual card profiles (for --card).",
        arguments: OutputOptions.arguments,
        discussion: """
            One line per profile: its name and what it shows. Use a name with --card, e.g. \
            `tapemu read --card mastercard-mchip`; --card also takes the path of a JSON profile file \
            (`tapemu cards show NAME --json` prints one to start from, `tapemu cards schema` its format).
            """)

    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let profiles = CardProfiles.all
        if output.json {
            try JSONOutput.print(JSONValue.array(profiles.map { p in
                .object([
                    "name": .string(p.name),
                    "summary": .string(p.summary),
                    "ppse": .bool(p.hasPPSE),
                    "applications": .array(p.applications.map { a in
                        .object(["aid": .string(Hex.encode(a.aid)), "label": .string(a.label), "panMasked": .string(a.pan.masked)])
                    }),
                ])
            }), to: console)
        } else {
            let width = profiles.map(\.name.count).max() ?? 0
            for p in profiles {
                console.print("\(p.name)\(String(repeating: " ", count: width - p.name.count))  \(p.summary)")
            }
        }
        return ExitCode.success
    }
}
