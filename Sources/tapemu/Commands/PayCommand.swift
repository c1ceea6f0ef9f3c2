import CardChannel
import DeviceStore
import Foundation
import PaymentGateway
import Synchronization
import PaymentFlow
import TapToPay
import Timing
import PaymentRules

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
            goes to stderr. A declined payment is a result, not an error. The errors are seed 000's: \
            the SDK cannot tell a reader error before the authorisation request left from one after \
            it, so once a card is being read every card read error (a mute or torn card), PIN entry \
            error and lost reader session is outcomeUnknown (exit 4), before the submission point or \
            after it — as is any gateway failure after it. Do not retry; look the order up with \
            `tapemu charges --order-id ID` (or `tapemu charges --pending`: every outcomeUnknown leaves \
            a pending record, also when the request never left). Ctrl-C while waiting for a card is \
            the user's cancel: cancelled (exit 3); once the card is being read it is outcomeUnknown \
            (exit 4). The card's own offline decline is paymentFailed.cardDeclined (exit 3); \
            paymentFailed.readerNotReady (exit 3) means the reader session was not ready before \
            reading began: the card source could not be opened, or no card came within --wait.
            What the SDK cannot know, tapemu prints beside the seed's error: `groundTruth` \
            {submitted, charged} in --json (whether the request started leaving, whether the ledger \
            holds this attempt's approved sale; charged is null when a --gateway cannot be asked), \
            and a `ground truth:` line otherwise — for checking that a recovery reached the truth.
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
            (ExitCode.declined, "declined by the issuer (the payment exists)"),
            (ExitCode.failedNoPayment, "failed: no payment occurred (paymentFailed, cancelled before a card was read, invalidArgument, …)"),
            (ExitCode.outcomeUnknown, "outcome unknown: the card may have been charged (any card read or PIN entry error, Ctrl-C once the card is being read, any gateway failure after the request left); do not retry"),
            (ExitCode.temporaryFailure, "busy: another process is paying or resolving this order; nothing was sent; wait until it ends, then look the order up (do not charge again under a new order id)"),
        ] + GatewayOptions.cardFileExitCodes + GatewayOptions.creatingExitCodes + RemoteGatewayOption.tokenExitCodes)

    // The payment statuses, as the tests name them (``ExitCode`` owns them).
    static let declined = ExitCode.declined
    static let failedNoPayment = ExitCode.failedNoPayment
    static let outcomeUnknown = ExitCode.outcomeUnknown

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
        let (gw, token) = try await payment.remote.terminal(payment.remote.open(gateway, .create, timeout: payment.gatewayTimeout),
                                                            token: payment.token)
        let store = try gateway.openPendingStore(.create)
        let json = payment.output.json
        let pinProvider: any PINProvider = payment.pin.map { ScriptedPINProvider(.pin($0)) }
            ?? TerminalPINProvider(console: console)
        let failureReason = Mutex<String?>(nil)
        let interrupt = PayInterrupt()
        let config = TapToPay.Configuration(
            cardSource: cardSource, gateway: hooks.gateway(gw), pendingStore: store, location: location,
            terms: FixedTermsProvider(accepts: acceptsTerms), pin: pinProvider,
            timeouts: PaymentTimeouts(cardPresentation: payment.wait, gatewayRequest: payment.gatewayTimeout),
            gatewayFault: payment.fault, resultHandOver: .acknowledged, checkpoint: hooks.checkpoint,
            onEvent: { event in
                if case .failed(let reason) = event { failureReason.withLock { $0 = reason } }
                interrupt.paymentEvent()
                console.printError("tapemu: \(PayCommand.describe(event))")
            })
        let tapToPay = TapToPay(configuration: config)
        // Ctrl-C during prepare (its location fix) cancels it: `cancelled`. During acceptPayment it
        // is the user's cancel on the payment sheet (TapToPay.cancel()): `cancelled` while waiting
        // for a card, `outcomeUnknown` once the card is being read. The payment runs in a task of
        // its own so the signal can reach it; its typed error comes back.
        let paying = Task { () async -> Result<PaymentResult, TapToPayError> in
            do throws(TapToPayError) {
                try await tapToPay.prepare(token: token)
                if interrupt.startPaying() { return .failure(.cancelled) }
                return .success(try await tapToPay.acceptPayment(amount: amount, orderId: orderId, callbackUrl: callbackUrl))
            } catch {
                return .failure(error)
            }
        }
        interrupt.connect(cancelPayment: { tapToPay.cancel() }, cancelPrepare: { paying.cancel() })
        let outcome = await SignalTrap.whileRunning(onSignal: { interrupt.signal() }) {
            await withTaskCancellationHandler { await paying.value } onCancel: { paying.cancel() }
        }
        interrupt.disconnect()
        let truth = await Self.groundTruth(tapToPay, orderId: orderId)
        switch outcome {
        case .success(let result):
            if json {
                try JSONOutput.print(PayResultOutput(result: result, groundTruth: truth), to: console)
            } else {
                console.print("\(result.status == .approved ? "APPROVED" : "DECLINED")  order \(result.orderId)  payment \(result.paymentId)")
                console.print("card: \(result.cardBrand ?? "?") •••• \(result.last4 ?? "????")")
                if let m = result.statusMessage { console.print("message: \(m)") }
                console.print(truth.line)
            }
            // The result is on stdout: only now may the device forget the payment (a crash before
            // this leaves it for `tapemu charges --pending`; a stdout that failed keeps it too).
            hooks.resultPrinted()
            GatewayOptions.handOver([(result.orderId, { () throws(DeviceStoreError) in try tapToPay.acknowledge(result) })],
                                        console: console)
            return result.status == .approved ? ExitCode.success : ExitCode.declined
        case .failure(let error):
            if json {
                // Never null: the cause an event named, else the error's own words.
                try JSONOutput.print(PayErrorOutput(error: error, orderId: orderId,
                                                    reason: failureReason.withLock { $0 } ?? error.description, groundTruth: truth), to: console)
            } else {
                console.printError("tapemu: \(error.code): \(error)")
                console.printError("tapemu: \(truth.line)")
                if case .outcomeUnknown = error {
                    console.printError("tapemu: do not retry; check with: tapemu charges --order-id \(ShellWord.quoted(orderId))")
                }
                if error == .busy {
                    console.printError("tapemu: another process is paying or resolving order \(orderId); nothing was sent. "
                                       + "Wait until it ends, then check with: tapemu charges --order-id \(ShellWord.quoted(orderId)) "
                                       + "(do not charge again under a new order id)")
                }
            }
            return ExitCode.of(error)
        }
    }

    /// What the emulator knows about the attempt (nil fields: it could not be asked). An attempt
    /// that never ran (prepare failed, or Ctrl-C before acceptPayment) submitted nothing.
    static func groundTruth(_ tapToPay: TapToPay, orderId: String) async -> GroundTruthOutput {
        guard let attempt = tapToPay.diagnostics(for: orderId) else { return GroundTruthOutput(submitted: false, charged: false) }
        do {
            let truth = try await tapToPay.groundTruth(of: attempt)
            return GroundTruthOutput(submitted: truth.submitted, charged: truth.charged)
        } catch {
            return GroundTruthOutput(submitted: attempt.submitted, charged: nil, error: "\(error)")
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

/// `groundTruth` of `pay --json`: whether the authorisation request started leaving and whether
/// the ledger holds this attempt's approved sale — what the SDK cannot know, beside its answer.
/// `charged` is null only when the gateway could not be asked (a --gateway that does not answer).
struct GroundTruthOutput: Encodable {
    var submitted: Bool
    var charged: Bool?
    /// Why `charged` is not known (not encoded: said on the human line).
    var error: String? = nil

    private enum CodingKeys: String, CodingKey { case submitted, charged }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(submitted, forKey: .submitted)
        try c.encode(charged, forKey: .charged)   // null, not left out
    }

    /// The human output's line.
    var line: String {
        let charged = charged.map { $0 ? "yes" : "no" } ?? "unknown (\(error ?? "the gateway could not be asked"))"
        return "ground truth (tapemu only; the SDK cannot know it): submitted \(submitted ? "yes" : "no"), charged \(charged)"
    }
}

/// `--json` of a result: the seed's `PaymentResult` fields and `groundTruth`.
struct PayResultOutput: Encodable {
    var result: PaymentResult
    var groundTruth: GroundTruthOutput

    private enum CodingKeys: String, CodingKey { case paymentId, status, statusMessage, cardBrand, last4, orderId, groundTruth }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(result.paymentId, forKey: .paymentId)
        try c.encode(result.status, forKey: .status)
        try c.encodeIfPresent(result.statusMessage, forKey: .statusMessage)
        try c.encodeIfPresent(result.cardBrand, forKey: .cardBrand)
        try c.encodeIfPresent(result.last4, forKey: .last4)
        try c.encode(result.orderId, forKey: .orderId)
        try c.encode(groundTruth, forKey: .groundTruth)
    }
}

/// `--json` of a failed payment: `{error, exitCode, orderId, code, message, reason, groundTruth}`
/// (`reason`: the cause behind the seed's error, null when there is nothing more to say).
struct PayErrorOutput: Encodable {
    var error: String
    /// The process's exit status (3: no payment; 4: outcome unknown; 75: busy, another process
    /// works on the order).
    var exitCode: Int32
    var orderId: String
    var code: String
    var message: String
    var reason: String?
    var groundTruth: GroundTruthOutput

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(error, forKey: .error)
        try c.encode(exitCode, forKey: .exitCode)
        try c.encode(orderId, forKey: .orderId)
        try c.encode(code, forKey: .code)
        try c.encode(message, forKey: .message)
        try c.encode(reason, forKey: .reason)   // null, not left out
        try c.encode(groundTruth, forKey: .groundTruth)
    }

    private enum CodingKeys: String, CodingKey { case error, exitCode, orderId, code, message, reason, groundTruth }

    init(error: TapToPayError, orderId: String, reason: String? = nil,
         groundTruth: GroundTruthOutput = GroundTruthOutput(submitted: false, charged: false)) {
        self.reason = reason
        self.groundTruth = groundTruth
        exitCode = ExitCode.of(error)
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
