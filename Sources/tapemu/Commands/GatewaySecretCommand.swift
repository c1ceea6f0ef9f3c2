import Foundation
import PaymentGateway

/// `tapemu gateway secret`: the key that signs the gateway's webhooks.
struct GatewaySecretCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway secret",
        abstract: "Print the secret that signs the gateway's webhooks (MONEI-Signature).",
        arguments: GatewayOptions.arguments + OutputOptions.arguments,
        discussion: """
            Prints 64 hex digits: the HMAC-SHA256 key is the 32 bytes they encode. Give it to \
            `tapemu webhook verify --secret` or to your webhook endpoint. With --json: `secret`, \
            `algorithm` and `header`.
            """,
        exitCodes: GatewayOptions.exitCodes)

    var gateway: GatewayOptions
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        gateway = try GatewayOptions(arguments: &arguments)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let secret = WebhookSignature.secretText(try gateway.openGateway(.readOnly).webhookSecret)
        if output.json {
            try JSONOutput.print(JSONValue.object([
                "secret": .string(secret), "algorithm": .string("HMAC-SHA256 of \"<t>.<body>\", key = the hex-decoded secret"),
                "header": .string(Webhook.signatureHeaderName),
            ]), to: console)
        } else {
            console.print(secret)
        }
        return ExitCode.success
    }
}
