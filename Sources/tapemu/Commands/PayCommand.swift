import CardChannel
import DeviceStore
import Foundation
import PaymentGateway
import Synchronization
import TapToPay
import Timing

/// `tapemu pay`: one payment through the MONEI-style API on any card source and the embedded gateway.
struct PayCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "pay",
        abstract: "Run a payment (MONEI-style TapToPay.acceptPayment) on a card and the embedded gateway.",
        arguments: [PaymentOptions.amount, PaymentOptions.orderId, Self.callbackUrl] + CardSourceOptions.arguments
            + [PaymentOptions.fault, PaymentOptions.pin, PaymentOptions.wait, PaymentOptions.gatewayTimeout, Self.location, Self.terms,
               PaymentOptions.token] + RemoteGatewayOption.arguments + GatewayOptions.arguments + OutputOptions.arguments,
        discussion: """
            Reads the card, authorises with the embedded gateway, and prints the result. Progress \
            goes to stderr. A declined payment is a result, not an error. Any failure after the \
            authorisation request started leaving is an unclear outcome (exit 4): do not retry; \
            look the order up with `tapemu charges --order-id ID`.
            Gateway test triggers (amount endings, test PANs) are listed by `tapemu gateway triggers`.
            With --trace, the card side of a recording answers: its cryptogram was computed for the \
            recording's unpredictable number and transaction data, not this payment's. The emulated \
            issuer holds the keys of tapemu's virtual cards only: a trace of one (recorded with \
            --no-redact) is declined 82 ("ARQC failed verification"), as an issuer would. A redacted \
            trace carries a replacement PAN and a real card's a key the issuer does not have: their \
            cryptograms cannot be checked, and such a payment is decided by the test triggers alone \
            (amount endings, test PANs), as for a real card in a reader.
            """,
        exitCodes: [
            (2, "declined by the issuer (the payment exists)"),
            (3, "failed: no payment occurred"),
            (4, "outcome unknown: the card may have been charged; do not retry"),
            (75, "busy: another process is paying or resolving this order; nothing was sent; wait until it ends, then look the order up (do not charge again under a new order id)"),
        ] + GatewayOptions.cardFileExitCodes + GatewayOptions.creatingExitCodes + RemoteGatewayOption.tokenExitCodes)

    static let declined: Int32 = 2
    static let failedNoPayment: Int32 = 3
    static let outcomeUnknown: Int32 = 4

    /// The exit status of a failed payment: 4 when the card may have been charged, 75 for `busy`
    /// (another process works on this order: its outcome is not this run's to tell), else 3.
    static func exitCode(for error: TapToPayError) -> Int32 {
        if error.mayHaveCharged { return outcomeUnknown }
        return error == .busy ? ExitCode.temporaryFailure : failedNoPayment
    }

    static let callbackUrl = Option<String>("--callback-url", value: "<url>", help: "Where the gateway's signed webhook goes.")
    static let location = Option<FixedLocationProvider>.choice(
        "--location", value: "<state>",
        help: "Emulated location: authorized (default), denied, no-fix (waits the 15 s location timeout, then locationTimeout).",
        [("authorized", FixedLocationProvider()), ("denied", FixedLocationProvider(state: .denied)),
         ("no-fix", FixedLocationProvider(location: nil))],
        error: { _ in "--location must be authorized, denied or no-fix" })
    static let terms = Option<Bool>.choice(
        "--terms", value: "accept|decline", help: "How the emulated merchant answers the terms (default accept).",
        [("accept", true), ("decline", false)], error: { _ in "--terms must be accept or decline" })

    var payment: PaymentOptions
    var callbackUrl: String?
    var location: FixedLocationProvider
    var acceptsTerms: Bool

    init(arguments: inout Arguments) throws(UsageError) {
        payment = try PaymentOptions(arguments: &arguments)
        callbackUrl = try arguments.value(Self.callbackUrl)
        location = try arguments.value(Self.location, default: FixedLocationProvider())
        acceptsTerms = try arguments.value(Self.terms, default: true)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let (amount, orderId, callbackUrl) = (payment.amount, payment.orderId, self.callbackUrl)
        let hooks = try TestHooks.fromEnvironment()
        let gateway = payment.gateway
        // The card source first: a --trace or --card that cannot be used creates no data directory.
        let cardSource = try payment.source.makeSource()
        let gw = try payment.remote.open(gateway, .create, timeout: payment.gatewayTimeout)
        let store = try gateway.openPendingStore(.create)
        let json = payment.output.json
        let pinProvider: any PINProvider = payment.pin.map { ScriptedPINProvider(.pin($0)) }
            ?? TerminalPINProvider(console: console)
        let failureReason = Mutex<String?>(nil)
        let config = TapToPay.Configuration(
            cardSource: cardSource, gateway: hooks.gateway(gw), pendingStore: store, location: location,
            terms: FixedTermsProvider(accepts: acceptsTerms), pin: pinProvider,
            timeouts: PaymentTimeouts(cardPresentation: payment.wait, gatewayRequest: payment.gatewayTimeout),
            gatewayFault: payment.fault, resultHandOver: .acknowledged, checkpoint: hooks.checkpoint,
            onEvent: { event in
                if case .failed(let reason) = event { failureReason.withLock { $0 = reason } }
                console.printError("tapemu: \(PayCommand.describe(event))")
            })
        let tapToPay = TapToPay(configuration: config)
        let token = if let t = payment.token { t } else { try await RemoteGatewayOption.token(gw) }
        // Ctrl-C cancels from the start: during prepare's location fix too (`cancelled`). The
        // payment runs in a task of its own so the signal can cancel it; its typed error comes back.
        let paying = Task { () async -> Result<PaymentResult, TapToPayError> in
            do throws(TapToPayError) {
                try await tapToPay.prepare(token: token)
                return .success(try await tapToPay.acceptPayment(amount: amount, orderId: orderId, callbackUrl: callbackUrl))
            } catch {
                return .failure(error)
            }
        }
        let outcome = await SignalTrap.whileRunning(onSignal: { paying.cancel() }) {
            await withTaskCancellationHandler { await paying.value } onCancel: { paying.cancel() }
        }
        switch outcome {
        case .success(let result):
            if json {
                try JSONOutput.print(result, to: console)
            } else {
                console.print("\(result.status == .approved ? "APPROVED" : "DECLINED")  order \(result.orderId)  payment \(result.paymentId)")
                console.print("card: \(result.cardBrand ?? "?") •••• \(result.last4 ?? "????")")
                if let m = result.statusMessage { console.print("message: \(m)") }
            }
            // The result is on stdout: only now may the device forget the payment (a crash before
            // this leaves it for `tapemu charges --pending`; a stdout that failed keeps it too).
            hooks.resultPrinted()
            GatewayOptions.handOver([(result.orderId, { () throws(DeviceStoreError) in try tapToPay.acknowledge(result) })],
                                        console: console)
            return result.status == .approved ? ExitCode.success : Self.declined
        case .failure(let error):
            if json {
                try JSONOutput.print(PayErrorOutput(error: error, orderId: orderId,
                                                    reason: failureReason.withLock { $0 }), to: console)
            } else {
                console.printError("tapemu: \(error.code): \(error)")
                if case .outcomeUnknown = error {
                    console.printError("tapemu: do not retry; check with: tapemu charges --order-id \(ShellWord.quoted(orderId))")
                }
                if error == .busy {
                    console.printError("tapemu: another process is paying or resolving order \(orderId); nothing was sent. "
                                       + "Wait until it ends, then check with: tapemu charges --order-id \(ShellWord.quoted(orderId)) "
                                       + "(do not charge again under a new order id)")
                }
            }
            return Self.exitCode(for: error)
        }
    }

    static func describe(_ event: PaymentEvent) -> String {
        switch event {
        case .waitingForLocation:
            // Why it waits (seed 000): Tap to Pay needs the device's location before a payment,
            // and gives up after the location timeout with paymentFailed(locationTimeout).
            "waiting for a location fix (Tap to Pay needs the device's location before the first payment; "
                + "at most \(PaymentTimeouts.default.locationFix.readable), then locationTimeout)"
        case .waitingForCard(let source): "waiting for a card (\(source))"
        case .reading: "reading the card"
        case .cardRead(let brand, let masked, let cvm): "card read: \(brand) \(masked), CVM \(cvm)"
        case .waitingForPIN: "waiting for the PIN"
        case .authorising(let orderId, let early): "authorising order \(orderId)\(early ? " (early, while reading)" : "")"
        case .answered(let status): "gateway answered: \(status)"
        case .failed(let reason): "failed: \(reason)"
        case .recordKept(let reason): "warning: \(reason)"
        }
    }
}

/// `--json` of a failed payment: `{error, orderId, code, message, reason}` (`reason`: the cause
/// behind the seed's error, null when there is nothing more to say).
struct PayErrorOutput: Encodable {
    var error: String
    /// The process's exit status (3: no payment; 4: outcome unknown; 75: busy, another process
    /// works on the order).
    var exitCode: Int32
    var orderId: String
    var code: String
    var message: String
    var reason: String?

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(error, forKey: .error)
        try c.encode(exitCode, forKey: .exitCode)
        try c.encode(orderId, forKey: .orderId)
        try c.encode(code, forKey: .code)
        try c.encode(message, forKey: .message)
        try c.encode(reason, forKey: .reason)   // null, not left out
    }

    private enum CodingKeys: String, CodingKey { case error, exitCode, orderId, code, message, reason }

    init(error: TapToPayError, orderId: String, reason: String? = nil) {
        self.reason = reason
        exitCode = PayCommand.exitCode(for: error)
        switch error {
        case .outcomeUnknown: self.error = "outcomeUnknown"
        case .paymentFailed: self.error = "paymentFailed"
        default: self.error = error.code
        }
        self.orderId = orderId
        self.code = error.code
        self.message = error.description
    }
}
