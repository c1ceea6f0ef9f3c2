import BERTLV
import PaymentRules
import ISO7816
import VirtualCard

/// `tapemu cards schema`: the JSON Schema of profile files.
struct CardsSchemaCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "cards schema",
        abstract: "Print the JSON Schema of card profile files (for --card FILE.json).",
        discussion: """
            The schema (JSON Schema draft 2020-12) gives every field of a profile file with its \
            type, bounds and meaning. Start from a built-in profile with `tapemu cards show NAME \
            --json > mine.json`. Loading a profile also checks what a schema cannot (a PDOL that \
            parses, an AFL naming records the card has, a Luhn-valid PAN repeated in 5A and 57); \
            its errors name the field by its JSON path, e.g. \
            `mine.json: applications[0].records[2].objects[1].hex: not hex: …`.
            """)

    init(arguments: inout Arguments) throws(UsageError) {
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        console.print(CardProfile.jsonSchema)
        return ExitCode.success
    }
}
