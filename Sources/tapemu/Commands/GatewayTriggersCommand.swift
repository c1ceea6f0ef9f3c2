import Foundation
import PaymentGateway

/// `tapemu gateway triggers`: the embedded gateway's documented test triggers.
struct GatewayTriggersCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway triggers",
        abstract: "List the embedded gateway's test triggers (amount endings and test PANs).",
        arguments: OutputOptions.arguments,
        discussion: """
            A fault given with --gateway-fault wins over a trigger. Every other amount is approved \
            (00, MONEI E000). Each decline shows the emulated issuer's ISO 8583 code (the terminal \
            API, the CoreAPI transaction list) and MONEI's E-code (the merchant REST, GraphQL \
            charges, webhook bodies: statusCode). With --json: statusCode (ISO) and moneiStatusCode.
            """)

    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        try arguments.finish()
    }

    struct Row: Encodable {
        var match: String
        var result: String
        var statusCode: String?
        /// MONEI's E-code of the decision (``MoneiStatusCode``); nil for a trigger that never answers.
        var moneiStatusCode: String?
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
            let iso = t.decline?.statusCode ?? (t.fault == .noAnswer || t.fault == .serverError ? nil : "00")
            let monei = iso.map { MoneiStatusCode.of($0) }
            let summary = monei.map { "\(t.summary) [MONEI \($0.code): \($0.message)]" } ?? t.summary
            return Row(match: match, result: t.decline == nil ? "approve" : "decline",
                       statusCode: t.decline?.statusCode, moneiStatusCode: monei?.code, fault: t.fault?.name,
                       summary: summary)
        }
        if output.json {
            try JSONOutput.print(rows, to: console)
        } else {
            console.write(TapemuCLI.table(rows.map { ($0.match, $0.summary) }))
        }
        return ExitCode.success
    }
}
