import Foundation
import TapToPayTesting

/// `tapemu scenarios list`: the catalogue, printed from the values `scenarios run` plays.
struct ScenariosListCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenarios list",
        abstract: "List the scenarios `tapemu scenarios run` plays against a merchant backend: each error and unclear outcome of the seeds.",
        arguments: OutputOptions.arguments,
        discussion: """
            Each scenario: its name, the seed and the place in it (the seeds are single-line pages: \
            the section anchor and the row), how tapemu makes it happen (card, fault, timing), what \
            the seed tells the integrator to do, what the SDK answers, the truth in the gateway's \
            ledger, and the conclusions of the backend graded as right (paid, not_paid, pending).
            """)

    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        try arguments.finish()
    }

    static func json(_ s: Scenario) -> JSONValue {
        .object([
            "name": .string(s.name), "face": .string(s.face.rawValue), "seed": .string(s.seed), "how": .string(s.how),
            "integratorAction": .string(s.integratorAction), "sdk": .string(s.sdk.description),
            "truth": .string(s.truth.rawValue), "accepted": .array(s.acceptedStates.map(JSONValue.string)),
            "needsTestControls": .bool(s.needsTestControls),
            "rule": s.pendingRule.map(JSONValue.string) ?? .null,
        ])
    }

    func run(_ console: Console) async throws -> Int32 {
        if output.json {
            try JSONOutput.print(JSONValue.array(ScenarioCatalogue.all.map(Self.json)), to: console)
            return ExitCode.success
        }
        for s in ScenarioCatalogue.all {
            console.print("\(s.name)  [\(s.face.rawValue)]  \(s.seed)")
            console.print("    how:     \(s.how)")
            console.print("    sdk:     \(s.sdk)    truth: \(s.truth.rawValue)    backend must say: \(s.acceptedStates.joined(separator: " or "))")
            console.print("    do:      \(s.integratorAction)")
            if let rule = s.pendingRule { console.print("    rule:    \(rule)") }
        }
        console.print("\(ScenarioCatalogue.all.count) scenarios")
        return ExitCode.success
    }
}
