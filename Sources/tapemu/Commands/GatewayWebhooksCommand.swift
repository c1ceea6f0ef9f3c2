import Foundation
import PaymentGateway

/// `tapemu gateway webhooks`: the signed webhooks in the embedded gateway's outbox.
struct GatewayWebhooksCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway webhooks",
        abstract: "Show the signed webhooks in the gateway's outbox (body and MONEI-Signature header).",
        arguments: [Self.orderId, Self.pending] + GatewayOptions.arguments + OutputOptions.arguments,
        exitCodes: GatewayOptions.exitCodes)

    static let orderId = Option<String>("--order-id", value: "<id>", help: "Only this order's webhooks.")
    static let pending = Flag("--pending", help: "Only webhooks not delivered yet.")

    var orderId: String?
    var pendingOnly: Bool
    var gateway: GatewayOptions
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        gateway = try GatewayOptions(arguments: &arguments)
        orderId = try arguments.value(Self.orderId)
        pendingOnly = arguments.isSet(Self.pending)
        try arguments.finish()
    }

    struct Row: Encodable {
        var id: Int64
        var orderId: String
        var paymentId: String
        var event: String
        var url: String
        var signature: String
        var body: String
        var delivered: Bool
        /// Delivery state (`pending`, `retrying`, `delivered`, `failed`), attempts, next try (ISO 8601), last error.
        var state: String?
        var attempts: Int
        var nextAttemptAt: String?
        var lastAttemptAt: String?
        var lastStatus: Int?
        var lastError: String?
    }

    func run(_ console: Console) async throws -> Int32 {
        let gw = try gateway.openGateway(.readOnly)
        let rows: [Row]
        do {
            rows = try WebhookRows.rows(gw.ledger, orderId: orderId, pendingOnly: pendingOnly)
        } catch {
            throw CommandFailure.ioError("cannot read the outbox: \(error)")
        }
        if output.json {
            try JSONOutput.print(rows, to: console)
        } else if rows.isEmpty {
            console.print("no webhooks")
        } else {
            for r in rows {
                console.print("#\(r.id) \(r.event) order \(r.orderId) → \(r.url)\(r.delivered ? " (delivered)" : "")")
                console.print("  " + WebhookRows.summary(r))
                console.print("  \(Webhook.signatureHeaderName): \(r.signature)")
                console.print("  \(r.body)")
            }
        }
        return ExitCode.success
    }
}
