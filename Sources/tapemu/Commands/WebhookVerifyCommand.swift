import Foundation
import PaymentGateway
import StrictJSON

/// `tapemu webhook verify`: checks a received webhook as a merchant's endpoint must.
struct WebhookVerifyCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook verify",
        abstract: "Check a received webhook's MONEI-Signature header against its raw body.",
        arguments: [Self.apiKey, Self.secret, Self.header, Self.bodyFile, Self.tolerance, Self.now] + OutputOptions.arguments,
        discussion: """
            Exit 0 when the header is valid for the body: one t within the tolerance of now, and a v1 \
            HMAC-SHA256 of "<t>.<body>" keyed with the merchant API key (--api-key: MONEI's rule, \
            what its SDKs' verifySignature checks; `tapemu gateway secret` prints it), or with a \
            secret given as --secret (64 hex digits: the webhooks an earlier tapemu signed with \
            `gateway secret --legacy`; other text: its UTF-8 bytes). Give one of the two. Other \
            schemes such as v0 are ignored. \
            Exit 1 when it is not, with the reason (missingHeader, malformedHeader, staleTimestamp, \
            noMatchingSignature, malformedBody: a signed body that is not strict JSON, such as one \
            naming a key twice). The body is read as raw bytes: verify exactly what was received.
            """,
        exitCodes: [
            (ExitCode.failure, "the webhook does not verify (the reason is printed)"),
            (ExitCode.noInput, "the --body-file does not exist"),
            (ExitCode.ioError, "the --body-file cannot be read"),
        ])

    static let apiKey = Option<String>.nonEmpty(
        "--api-key", value: "<key>",
        help: "The merchant API key (`tapemu gateway secret`): the HMAC key is its UTF-8 bytes, as MONEI signs.",
        ifEmpty: "is empty (tapemu gateway secret prints the API key)").environment("TAPEMU_API_KEY")
    static let secret = Option<String>.nonEmpty(
        "--secret", value: "<secret>",
        help: "A signing secret instead of the API key (`gateway secret --legacy`: 64 hex digits; other text is used as its UTF-8 bytes).",
        ifEmpty: "is empty (tapemu gateway secret --legacy prints it)")
    static let header = Option<String>(
        "--header", value: "<value>",
        help: "The MONEI-Signature header's value (`t=…,v1=…`); the `MONEI-Signature:` name may be included.",
        required: true) { text, _ throws(UsageError) in
        var value = text.trimmingCharacters(in: .whitespaces)
        let prefix = Webhook.signatureHeaderName.lowercased() + ":"
        if value.lowercased().hasPrefix(prefix) {
            value = String(value.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
        }
        return value
    }
    static let bodyFile = Option<String>.nonEmpty(
        "--body-file", value: "<file>|-", help: "The raw body as received; - reads stdin.", required: true,
        ifEmpty: "is required (- for stdin)")
    static let tolerance = Option<Duration>.duration("--tolerance", help: "How far t may be from now (default 300s).")
    static let now = Option<Date>(
        "--now", value: "<unix>", help: "The time to check against, in unix seconds (default the clock).") {
        text, name throws(UsageError) in
        Date(timeIntervalSince1970: TimeInterval(try Parse.integer(text, option: name, in: 0...Int(Int32.max) * 4)))
    }

    /// The HMAC key.
    var key: [UInt8]
    var header: String
    var bodyFile: String
    var tolerance: Duration
    var now: Date?
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        // --secret on the command line wins over TAPEMU_API_KEY (not "both given").
        let secret = try arguments.value(Self.secret)
        let apiKey = try arguments.value(Self.apiKey, environment: secret == nil)
        switch (apiKey, secret) {
        case (let k?, nil): key = Array(k.utf8)
        case (nil, let s?): key = WebhookSignature.secretBytes(s)
        case (nil, nil): throw UsageError("--api-key is required (tapemu gateway secret prints it), or --secret for a webhook an earlier tapemu signed")
        case (_?, _?): throw UsageError("give --api-key or --secret, not both")
        }
        header = try arguments.required(Self.header)
        bodyFile = try arguments.required(Self.bodyFile)
        tolerance = try arguments.value(Self.tolerance, default: WebhookSignature.defaultTolerance)
        now = try arguments.value(Self.now)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let body: [UInt8]
        if bodyFile == "-" {
            do { body = try console.readStandardInput() } catch {
                throw CommandFailure.ioError("cannot read the body from stdin: \(error)")
            }
        } else {
            do {
                body = Array(try Data(contentsOf: URL(fileURLWithPath: bodyFile)))
            } catch {
                throw CommandFailure.unreadable(bodyFile, "\(bodyFile): cannot read the body")
            }
        }
        var result: Result<Int64, WebhookSignatureError>
        do throws(WebhookSignatureError) {
            result = .success(try WebhookSignature.verify(header: header, body: body,
                                                          secret: key,
                                                          tolerance: tolerance, now: now ?? Date()))
        } catch {
            result = .failure(error)
        }
        // A signed body is still read by the merchant's JSON parser: one that names a key twice
        // means one thing to a first-wins reader and another to a last-wins one. The one strict
        // reader (StrictJSON) refuses it, like every body the gateway takes.
        if case .success = result {
            do throws(JSONParseError) {
                try StrictJSONReader.check(body)
            } catch {
                let why = error.duplicateKey.map { "the body names the key \"\($0)\" more than once in one object (at byte \(error.offset))" }
                    ?? "the body is not JSON: \(error)"
                result = .failure(WebhookSignatureError(.malformedBody, why))
            }
        }
        switch result {
        case .success(let t):
            if output.json {
                try JSONOutput.print(JSONValue.object(["valid": .bool(true), "t": .int(Int(t))]), to: console)
            } else {
                console.print("valid: signed at t=\(t)")
            }
            return ExitCode.success
        case .failure(let error):
            if output.json {
                try JSONOutput.print(JSONValue.object([
                    "valid": .bool(false), "code": .string("\(error.code)"), "reason": .string(error.reason),
                ]), to: console)
            } else {
                console.print("invalid: \(error.code): \(error.reason)")
            }
            return ExitCode.failure
        }
    }
}

/// The rows of `gateway webhooks`: each webhook with its delivery state.
enum WebhookRows {
    static func rows(_ ledger: any LedgerStore, orderId: String?, pendingOnly: Bool) throws -> [GatewayWebhooksCommand.Row] {
        let iso = Date.ISO8601FormatStyle()
        // A version-1 ledger opened read only has no delivery state yet: the outbox alone.
        guard let deliveries = try? ledger.webhookDeliveries(orderId: orderId) else {
            return try ledger.webhooks(orderId: orderId, pendingOnly: pendingOnly).map {
                GatewayWebhooksCommand.Row(id: $0.id, orderId: $0.orderId, paymentId: $0.paymentId, event: "\($0.event)",
                                           url: $0.url, signature: $0.signature, body: $0.body,
                                           delivered: $0.deliveredAt != nil, state: nil, attempts: $0.attempts,
                                           nextAttemptAt: nil, lastAttemptAt: nil, lastStatus: nil, lastError: $0.lastError)
            }
        }
        return deliveries.filter { !pendingOnly || $0.webhook.deliveredAt == nil }.map { d in
            let w = d.webhook
            return GatewayWebhooksCommand.Row(
                id: w.id, orderId: w.orderId, paymentId: w.paymentId, event: "\(w.event)", url: w.url,
                signature: w.signature, body: w.body, delivered: w.deliveredAt != nil, state: d.state,
                attempts: w.attempts, nextAttemptAt: d.nextAttemptAt?.formatted(iso),
                lastAttemptAt: d.lastAttemptAt?.formatted(iso), lastStatus: d.lastStatus, lastError: w.lastError)
        }
    }

    static func summary(_ r: GatewayWebhooksCommand.Row) -> String {
        var parts = ["\(r.state ?? (r.delivered ? "delivered" : "pending"))", "attempts \(r.attempts)"]
        if let n = r.nextAttemptAt { parts.append("next try \(n)") }
        if let s = r.lastStatus { parts.append("last status \(s)") }
        if let e = r.lastError { parts.append("last error: \(e)") }
        return parts.joined(separator: ", ")
    }
}
