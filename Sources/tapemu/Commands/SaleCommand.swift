import BERTLV
import PaymentRules
import DeviceStore
import EMVKernel
import Foundation
import PaymentGateway
import CoreAPI
import PaymentFlow

/// `tapemu sale`: one sale through the CoreAPI-style facade (seeds 002/003), printing every
/// listener callback as it fires.
struct SaleCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "sale",
        abstract: "Run a sale (CoreAPI-style processSale) and print each listener callback as it fires.",
        arguments: [PaymentOptions.amount, PaymentOptions.orderId, Self.currency] + CardSourceOptions.arguments
            + [PaymentOptions.fault, PaymentOptions.gatewayTimeout, PaymentOptions.wait, PaymentOptions.pin, Self.noEarlySubmit,
               Self.deviceCondition, PaymentOptions.token] + RemoteGatewayOption.arguments + GatewayOptions.arguments
            + OutputOptions.arguments,
        discussion: """
            Initialises the CoreAPI facade on the card source and the embedded gateway, runs one \
            sale, and prints one line per callback (onDeviceConnected, onDeviceError, \
            onDeviceDisconnected, onSaleResponse, onError, onTransactionCommError) on stdout as it \
            fires; with --json, one array of the callbacks at the end. Progress goes to stderr.
            A communication error leaves the sale pending on the device: see `tapemu pending` and \
            resolve it with `tapemu resolve` (transaction list, then reversal).
            With --reader, onDeviceConnected / onDeviceDisconnected follow the PC/SC reader's \
            attach and detach while the sale runs.
            Device conditions: \(CoreDeviceEnvironment.Condition.allCases.map(\.rawValue).joined(separator: ", ")).
            Gateway test triggers (amount endings, test PANs) are listed by `tapemu gateway triggers`; \
            amounts ending in 92 (approved) and 95 (declined) lose the host's answer.\(TestHooks.help)
            """,
        exitCodes: [
            (ExitCode.declined, "the gateway answered, not approved (code D, R or E; C: the order's sale was reversed since, nothing is charged — sell again under a new order id)"),
            (ExitCode.failedNoPayment, "onError: no payment occurred"),
            (ExitCode.outcomeUnknown, "onTransactionCommError: the outcome is unknown, the sale is pending; run `tapemu resolve`"),
            (ExitCode.temporaryFailure, "onError(transactionInProgress): another process is selling or resolving this order; nothing was sent; wait until it ends, then run `tapemu resolve` (do not sell again under a new order id)"),
        ] + GatewayOptions.cardFileExitCodes + GatewayOptions.creatingExitCodes + RemoteGatewayOption.tokenExitCodes)

    static let currency = Option<String>(
        "--currency", value: "<code>",
        help: "The sale's currency, ISO 4217 (default EUR); the terminal gives it to the card too.") {
        text, _ throws(UsageError) in
        guard CurrencyCode.isValid(text) else {
            throw UsageError("--currency takes an ISO 4217 code of three letters, not '\(text)'")
        }
        // The terminal writes the currency's numeric code (5F2A) for the card: it must know it.
        guard ISOCodes.currency(code: text) != nil else {
            throw UsageError("--currency '\(text)' is not an ISO 4217 currency tapemu knows")
        }
        return text
    }
    static let noEarlySubmit = Flag(
        "--no-early-submit", help: "Authorise only once the whole card is read (default: as soon as the cryptogram is known).")
    static let deviceCondition = Option<CoreDeviceEnvironment.Condition>(
        "--device-condition", value: "<condition>",
        help: "Put the emulated iPhone in a condition (APPLE_TTP_ errors); default ready.") {
        text, _ throws(UsageError) in
        guard let condition = CoreDeviceEnvironment.Condition(rawValue: text) else {
            throw UsageError("unknown --device-condition '\(text)' (\(CoreDeviceEnvironment.Condition.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return condition
    }

    var payment: PaymentOptions
    var currency: String
    var earlySubmit: Bool
    var condition: CoreDeviceEnvironment.Condition

    init(arguments: inout Arguments) throws(UsageError) {
        earlySubmit = !arguments.isSet(Self.noEarlySubmit)
        payment = try PaymentOptions(arguments: &arguments)
        currency = try arguments.value(Self.currency, default: "EUR")
        condition = try arguments.value(Self.deviceCondition, default: .ready)
        try arguments.finish()
    }

    /// The terminal's EMV settings for the sale's currency (5F2A, 5F36), so the card's
    /// cryptogram covers the currency the gateway is asked to charge.
    var terminal: TerminalConfiguration {
        var t = TerminalConfiguration.default
        if let c = ISOCodes.currency(code: currency) {
            t.currencyCode = UInt16(c.numeric)
            t.currencyExponent = UInt8(c.exponent)
        }
        return t
    }

    func run(_ console: Console) async throws -> Int32 {
        let (amount, orderId, output, gatewayTimeout) = (payment.amount, payment.orderId, payment.output, payment.gatewayTimeout)
        let hooks = try TestHooks.fromEnvironment()
        // The card source first: a --trace or --card that cannot be used creates no data directory.
        let cardSource = try payment.source.makeSource()
        let (gw, token) = try await payment.remote.terminal(payment.remote.open(payment.gateway, .create, timeout: gatewayTimeout),
                                                            token: payment.token)
        let store = try payment.gateway.openPendingStore(.create)
        let pinProvider: any PINProvider = payment.pin.map { ScriptedPINProvider(.pin($0)) }
            ?? TerminalPINProvider(console: console)
        let interrupt = PayInterrupt()
        let config = PaymentConfiguration(
            cardSource: cardSource, gateway: hooks.gateway(gw), pendingStore: store, pin: pinProvider,
            timeouts: PaymentTimeouts(cardPresentation: payment.wait, gatewayRequest: gatewayTimeout), terminal: terminal,
            currency: currency.uppercased(), gatewayFault: payment.fault, submitsEarly: earlySubmit,
            resultHandOver: .acknowledged, checkpoint: hooks.checkpoint,
            onEvent: { event in
                interrupt.paymentEvent()
                console.printError("tapemu: \(PayCommand.describe(event))")
            })
        let monitor: (any CoreDeviceMonitor)? = if case .reader(let query) = payment.source.source {
            PCSCDeviceMonitor(query: query)
        } else {
            nil
        }
        let core = CoreAPI(configuration: config, environment: CoreDeviceEnvironment(condition: condition),
                           deviceMonitor: monitor)
        let printer = CallbackPrinter(console: console, json: output.json)
        let terminal = CoreTerminal(gateway: gw, token: token,
                                    currency: currency.uppercased(), requestTimeout: gatewayTimeout)

        // Ctrl-C cancels the sale: onError(cancelled) before the submission point,
        // onTransactionCommError(cancelled) after it. Before the sale (initialise) it cancels the
        // task, and the sale then ends onError(cancelled) with nothing sent; between the two it is
        // told again at the sale's first event (PayInterrupt).
        let selling = Task { () async -> (CoreSaleOutcome, Task<Void, Never>?) in
            let ready = await core.initialise(terminal: terminal, saleListener: printer, refundListener: printer,
                                              deviceListener: printer)
            let monitoring = ready && monitor != nil ? Task { await core.runDeviceMonitor() } : nil
            _ = interrupt.startPaying()   // interrupted before: this task is cancelled, and the sale sends nothing
            return (await core.processSale(CoreSale(amount: amount, currency: currency.uppercased(), orderId: orderId)), monitoring)
        }
        interrupt.connect(cancelPayment: { core.cancelSale() }, cancelPrepare: { selling.cancel() })
        let (outcome, monitoring) = await SignalTrap.whileRunning(onSignal: { interrupt.signal() }) {
            await withTaskCancellationHandler { await selling.value } onCancel: { selling.cancel() }
        }
        interrupt.disconnect()
        monitoring?.cancel()
        await monitoring?.value

        if output.json { try JSONOutput.print(printer.records, to: console) }
        switch outcome {
        case .response(let r):
            // The response is on stdout: only now may the device forget the sale (a crash before
            // this leaves it for `tapemu resolve`; a stdout that failed keeps it too).
            hooks.resultPrinted()
            GatewayOptions.handOver([(r.orderId, { () throws(DeviceStoreError) in try core.acknowledge(r) })], console: console)
        case .error(.transactionInProgress, _):
            // Another process works on this order (a sale in progress, or a recovery): its outcome
            // is not this run's to tell.
            if !output.json {
                console.printError("tapemu: another process is selling or resolving order \(orderId); nothing was sent. "
                                   + "Wait until it ends, then run: tapemu resolve (do not sell again under a new order id)")
            }
        case .error:
            break
        case .commError(let sale, _, _):
            if !output.json {
                console.printError("tapemu: the sale \(sale.orderId) is pending on the device; resolve it with: tapemu resolve")
            }
        }
        return ExitCode.of(outcome)
    }
}
