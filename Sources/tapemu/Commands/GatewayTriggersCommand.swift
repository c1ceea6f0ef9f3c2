import Foundation
import PaymentGateway

/// `tapemu gateway triggers`: the embedded gateway's documented test triggers.
struct GatewayTriggersCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway triggers",
        abstract: "List the embedded gateway's test triggers (amount endings and test PANs).",
        arguments: OutputOptions.arguments,
        discussion: "A fault given with --gateway-fault wins over a trigger. Every other amount is approved.")

    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        try arguments.finish()
    }

    struct Row: Encodable {
        var match: String
        var result: String
        var statusCode: String?
        var fault: String?
        var summary: String
    }

    func run(_ console: Console) async throws -> Int32 {
        let rows = EmbeddedGateway.triggers.map { t -> Row in
            let match: String
            switch t.match {
            case .amountEnding(let n): match = String(format: "amount ending %02d", n)
            case .pan(let p): match = "PAN \(p)"
            }
            return Row(match: match, result: t.decline == nil ? "approve" : "decline",
                       statusCode: t.decline?.statusCode, fault: t.fault?.name, summary: t.summary)
        }
        if output.json {
            try JSONOutput.print(rows, to: console)
        } else {
            console.write(TapemuCLI.table(rows.map { ($0.match, $0.summary) }))
        }
        return ExitCode.success
    }
}
