import CardChannel
import DeviceStore
import Foundation
import PaymentGateway
import Synchronization
import TapToPay

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
            recording's unpredictable number and transaction data, so the emulated issuer cannot verify \
            it for this payment's, and a real card's cryptogram is under a key it does not have — such \
            a payment is declined 82 ("ARQC failed verification"), as an issuer would. Traces of \
            tapemu's virtual cards replay their recorded answers too, and decline the same way.
            """,
        exitCodes: [
            (2, "declined by the issuer (the payment exists)"),
            (3, "failed: no payment occurred"),
            (4, "outcome unknown: the card may have been charged; do not retry"),
        ] + GatewayOptions.cardFileExitCodes + GatewayOptions.creatingExitCodes)

    static let declined: Int32 = 2
    static let failedNoPayment: Int32 = 3
    static let outcomeUnknown: Int32 = 4

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
        let gw = try payment.remote.open(gateway, .create, timeout: payment.gatewayTimeout)
        let store = try gateway.openPendingStore(.create)
        let cardSource = try payment.source.makeSource()
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
            _ = GatewayOptions.handOver([(result.orderId, { () throws(DeviceStoreError) in try tapToPay.acknowledge(result) })],
                                        console: console)
            return result.status == .approved ? ExitCode.success : Self.declined
        case .failure(let error):
            if json {
                try JSONOutput.print(PayErrorOutput(error: error, orderId: orderId,
                                                    reason: failureReason.withLock { $0 }), to: console)
            } else {
                console.printError("tapemu: \(error.code): \(error)")
                if case .outcomeUnknown = error {
                    console.printError("tapemu: do not retry; check with: tapemu charges --order-id \(orderId)")
                }
            }
            return error.mayHaveCharged ? Self.outcomeUnknown : Self.failedNoPayment
        }
    }

    static func describe(_ event: PaymentEvent) -> String {
        switch event {
        case .waitingForLocation: "waiting for a location fix"
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
    /// The process's exit status (3: no payment; 4: outcome unknown).
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
        exitCode = error.mayHaveCharged ? PayCommand.outcomeUnknown : PayCommand.failedNoPayment
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

/// `tapemu charges`: what the gateway holds for an order (seed 000's step 3).
struct ChargesCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "charges",
        abstract: "Show what the gateway holds for an order (the charges query by orderId).",
        arguments: [OneOf([Self.orderId, Self.pending], required: true)] + RemoteGatewayOption.arguments
            + GatewayOptions.arguments + OutputOptions.arguments,
        discussion: """
            With --pending, runs the charges query for every payment `tapemu pay` left with an \
            unknown outcome (seed 000, "Unclear outcome", step 3): a payment that shows is the \
            outcome, and its pending record leaves the device; when none shows, the record stays — \
            that does not prove the card was not charged: contact support before charging again.
            """,
        exitCodes: [(ExitCode.unavailable, "the charges query failed"),
                    (ExitCode.temporaryFailure, "with --pending: some payments stay pending (no payment shows, or a query failed)")]
            + GatewayOptions.exitCodes)

    static let orderId = Option<String>("--order-id", value: "<id>", help: "The order to look up.")
    static let pending = Flag("--pending", help: "Look up every order `tapemu pay` left pending (outcome unknown).")

    /// The order to look up; nil with `--pending`.
    var orderId: String?
    var pending: Bool
    var gateway: GatewayOptions
    var remote: RemoteGatewayOption
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        gateway = try GatewayOptions(arguments: &arguments)
        remote = try RemoteGatewayOption(arguments: &arguments)
        pending = arguments.isSet(Self.pending)
        orderId = try arguments.value(Self.orderId)
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        switch (orderId, pending) {
        case (nil, false): throw UsageError("missing --order-id <id> (or --pending)")
        case (_?, true): throw UsageError("--order-id and --pending cannot be used together")
        case (let id?, false) where id.trimmingCharacters(in: .whitespaces).isEmpty:
            throw UsageError("--order-id needs an order reference (1 to 128 characters)")
        default: break
        }
    }

    struct Item: Encodable {
        var id: String
        var kind: String
        var status: String
        var state: String
        var amount: Int
        var currency: String
        var statusCode: String
        var statusMessage: String
        var cardBrand: String
        var last4: String
        var uniqueRef: String
        var createdAt: String
    }

    func run(_ console: Console) async throws -> Int32 {
        guard let orderId else { return try await runPending(console) }
        let gw = try remote.open(gateway, .readOnly)
        let payments: [Payment]
        do {
            payments = try await gw.charges(orderId: orderId)
        } catch {
            throw CommandFailure(exitCode: ExitCode.unavailable, "the charges query failed: \(error)")
        }
        let items = payments.map(Self.item)
        if output.json {
            struct Doc: Encodable { var orderId: String; var items: [Item] }
            try JSONOutput.print(Doc(orderId: orderId, items: items), to: console)
        } else if items.isEmpty {
            console.print("no payment for order \(orderId)")
            console.print("(this does not prove the card was not charged: contact support before charging again)")
        } else {
            for i in items { console.print(Self.line(i)) }
        }
        return ExitCode.success
    }

    static func item(_ p: Payment) -> Item {
        Item(id: p.paymentId, kind: p.kind.rawValue, status: p.status.rawValue, state: p.state.rawValue,
             amount: p.amount, currency: p.currency, statusCode: p.statusCode, statusMessage: p.statusMessage,
             cardBrand: p.cardBrand.rawValue, last4: p.last4, uniqueRef: p.uniqueRef,
             createdAt: ISO8601DateFormatter().string(from: p.createdAt))
    }

    static func line(_ i: Item) -> String {
        "\(i.id)  \(i.kind)  \(i.state)  \(i.amount) \(i.currency)  \(i.cardBrand) •••• \(i.last4)  \(i.statusCode) \(i.statusMessage)  ref \(i.uniqueRef)"
    }

    /// `--pending`: seed 000's step 3 for every payment `pay` left with an unknown outcome, or
    /// whose result it never handed over.
    private func runPending(_ console: Console) async throws -> Int32 {
        let gw = try remote.open(gateway, .existing)
        let store = try gateway.openPendingStore(.existing)
        let tapToPay = TapToPay(configuration: .init(
            cardSource: try CardSourceOptions().makeSource(), gateway: gw, pendingStore: store))
        let reports: [UnclearOutcomeReport]
        do {
            // The records leave only once this report is on stdout (acknowledged below).
            reports = try await tapToPay.resolveUnclearOutcomes(handOver: .acknowledged)
        } catch {
            throw gateway.failure(error, doing: "cannot read the pending payments")
        }
        struct Row: Encodable {
            var orderId: String
            var attemptId: String
            var amount: Int
            var currency: String
            var maskedPAN: String?
            var finding: String
            var payment: Item?
            var reason: String?
            var error: String?
            var removedFromDevice: Bool
        }
        let rows = reports.map { r -> Row in
            var row = Row(orderId: r.pending.orderId, attemptId: r.pending.attemptId, amount: r.pending.amount,
                          currency: r.pending.currency, maskedPAN: r.pending.maskedPAN, finding: "", payment: nil,
                          reason: nil, error: r.storeError.map { "\($0)" }, removedFromDevice: r.isResolved)
            switch r.finding {
            case .found(let p): row.finding = p.status.rawValue; row.payment = Self.item(p)
            case .answered(let a): row.finding = a.status.rawValue; row.reason = "answered before the process ended; never handed over"
            case .notFound: row.finding = "notFound"
            case .otherPayment(let p, let reason): row.finding = "otherPayment"; row.payment = Self.item(p); row.reason = reason
            case .inProgress: row.finding = "inProgress"
            case .unreadable(let reason): row.finding = "unreadable"; row.reason = reason
            case .failed(let e): row.finding = "failed"; row.error = "\(e)"
            }
            return row
        }
        if output.json {
            try JSONOutput.print(rows, to: console)
        } else if rows.isEmpty {
            console.print("no payment with an unknown outcome on this device")
        } else {
            for r in rows {
                var line = "order \(r.orderId) (\(r.amount) \(r.currency), \(r.maskedPAN ?? "card unknown")): "
                switch r.finding {
                case "notFound":
                    line += "no payment shows; this does not prove the card was not charged: contact support with the orderId before charging again, then close it with `tapemu pending close \(r.orderId) --reason …` (kept)"
                case "otherPayment":
                    line += "another payment holds this order id: not this attempt's (\(r.reason ?? "")): \(r.payment.map(Self.line) ?? "") (kept; nothing of this attempt shows)"
                case "inProgress":
                    line += "a payment in progress owns it: left alone"
                case "unreadable":
                    line += "the device's record cannot be read (\(r.reason ?? "")): left as it is (attempt \(r.attemptId))"
                case "failed":
                    line += "the charges query failed (\(r.error ?? "")): try again later (kept)"
                default:
                    line += r.payment.map { "\(r.finding): \(Self.line($0))" } ?? "\(r.finding) (\(r.reason ?? ""))"
                    if r.removedFromDevice {
                        line += "; removed from the device"
                    } else if let e = r.error {
                        line += "; but its record could not be removed (\(e)): it stays"
                    }
                }
                console.print(line)
            }
        }
        let handedOver = GatewayOptions.handOver(reports.filter(\.isResolved).map { r in (r.pending.orderId, r.acknowledge) },
                                                 console: console)
        if !handedOver || reports.contains(where: { r in
            if r.storeError != nil { return true }
            if case .unreadable = r.finding { return true }
            return false
        }) {
            return ExitCode.ioError
        }
        return rows.allSatisfy(\.removedFromDevice) ? ExitCode.success : ExitCode.temporaryFailure
    }
}
