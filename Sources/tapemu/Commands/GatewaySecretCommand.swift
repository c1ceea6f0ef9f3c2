import Foundation
import PaymentGateway

/// `tapemu gateway secret`: the key that signs the gateway's webhooks — the merchant API key.
struct GatewaySecretCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway secret",
        abstract: "Print the key that signs the gateway's webhooks (MONEI-Signature): the merchant API key.",
        arguments: GatewayOptions.arguments + [Self.legacy] + OutputOptions.arguments,
        discussion: """
            As MONEI signs: HMAC-SHA256 of "<t>.<raw body>" keyed with the merchant API key's bytes, \
            so MONEI's SDKs' verifySignature(body, signature) with that key accept tapemu's webhooks. \
            Prints the API key (the same `gateway serve` prints and the merchant REST takes); give \
            it to `tapemu webhook verify --api-key`. Every delivery is signed at its own time with \
            it, a webhook an earlier tapemu left in the outbox too. --legacy prints instead the \
            64-hex-digit secret that signed webhooks before ledger schema version 3 (the stored \
            signatures of webhooks recorded then; `webhook verify --secret` checks those). \
            With --json: `apiKey`, `legacySecret`, `algorithm` and `header`.
            """,
        exitCodes: GatewayOptions.exitCodes + [
            (ExitCode.failure, "an earlier tapemu's ledger that has no API key yet (read only): a payment or `gateway serve` on it makes one"),
        ])

    static let legacy = Flag("--legacy", help: "Print the secret that signed webhooks before ledger schema version 3.")

    var gateway: GatewayOptions
    var output: OutputOptions
    var legacy: Bool

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        legacy = arguments.isSet(Self.legacy)
        gateway = try GatewayOptions(arguments: &arguments)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let ledger = try gateway.openGateway(.readOnly).ledger
        let legacySecret = WebhookSignature.secretText(ledger.legacyWebhookSecret)
        let apiKey = ledger.merchantAPIKey
        guard legacy || !apiKey.isEmpty else {
            throw CommandFailure.failure("this ledger has no merchant API key yet (an earlier tapemu's ledger, opened read only): run a payment or `tapemu gateway serve` on it once to upgrade it")
        }
        if output.json {
            try JSONOutput.print(JSONValue.object([
                "apiKey": apiKey.isEmpty ? .null : .string(apiKey), "legacySecret": .string(legacySecret),
                "algorithm": .string("HMAC-SHA256 of \"<t>.<body>\", key = the API key's UTF-8 bytes"),
                "header": .string(Webhook.signatureHeaderName),
            ]), to: console)
        } else {
            console.print(legacy ? legacySecret : apiKey)
        }
        return ExitCode.success
    }
}
