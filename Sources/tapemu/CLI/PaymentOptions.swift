import PaymentGateway
import PaymentFlow

/// The options `pay` and `sale` share, declared once: what to charge, the card source, the
/// gateway's faults and patience, the PIN, the token, the gateway service (`--gateway`), the data
/// directory and the output.
struct PaymentOptions: Sendable {
    static let amount = Option<Int>.integer(
        "--amount", value: "<cents>", help: "Amount in minor units, more than 0 and at most 12 digits.", required: true)
    static let orderId = Option<String>(
        "--order-id", value: "<id>", help: "The merchant's order reference (the gateway never charges one twice).",
        required: true)
    static let fault = Option<GatewayFault>(
        "--gateway-fault", value: "<fault>",
        help: "Inject a fault into the authorisation: none, no-answer, lost-answer, slow, server-error.") {
        text, _ throws(UsageError) in
        guard let fault = GatewayFault(name: text) else {
            throw UsageError("unknown --gateway-fault '\(text)' (\(GatewayFault.names.joined(separator: ", ")))")
        }
        return fault
    }
    static let pin = Option<PIN>(
        "--pin", value: "<digits>", help: "The online PIN when the card asks for one (else prompted on a terminal).") {
        text, _ throws(UsageError) in
        guard let pin = PIN(text) else { throw UsageError("--pin must be 4 to 12 digits") }
        return pin
    }
    static let wait = CardSourceOptions.wait
    static let gatewayTimeout = Option<Duration>.duration(
        "--gateway-timeout", help: "How long to wait for the gateway (default 30s).", positive: true)
    static let token = Option<String>(
        "--token", value: "<token>", help: "A token from the gateway (default: one issued by the gateway, embedded or --gateway, for this run).")

    var amount: Int
    var orderId: String
    var source: CardSourceOptions
    var fault: GatewayFault?
    var pin: PIN?
    var wait: Duration
    var gatewayTimeout: Duration
    var token: String?
    var gateway: GatewayOptions
    var remote: RemoteGatewayOption
    var output: OutputOptions

    /// Consumes the shared options (the command consumes its own, then calls `finish()`).
    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        source = try CardSourceOptions(arguments: &arguments)
        gateway = try GatewayOptions(arguments: &arguments)
        remote = try RemoteGatewayOption(arguments: &arguments)
        amount = try arguments.required(Self.amount)
        orderId = try arguments.required(Self.orderId)
        fault = try arguments.value(Self.fault)
        pin = try arguments.value(Self.pin)
        wait = try arguments.value(Self.wait, default: .seconds(30))
        gatewayTimeout = try arguments.value(Self.gatewayTimeout, default: .seconds(30))
        token = try arguments.value(Self.token)
    }
}
