import BERTLV
import CardChannel
import Dispatch
import EMVKernel
import Foundation
import PCSC
import PaymentGateway
import Synchronization
import TapToPay
#if canImport(Glibc)
import Glibc
#endif

/// `tapemu sale`: one sale through the CoreAPI-style facade (seeds 002/003), printing every
/// listener callback as it fires.
struct SaleCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "sale",
        abstract: "Run a sale (CoreAPI-style processSale) and print each listener callback as it fires.",
        usage: "--amount <cents> --order-id <id> [--currency <code>] \(CardSourceOptions.usage) [--gateway-fault <fault>] [--gateway-timeout <duration>] [--wait <duration>] [--pin <digits>] [--no-early-submit] [--device-condition <condition>] [--token <token>] [--gateway <url>] [--data-dir <dir>] [--json]",
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
            amounts ending in 92 (approved) and 95 (declined) lose the host's answer.
            For crash tests, the environment variable \(KillPoint.environmentVariable)=<point> makes the \
            process kill itself (SIGKILL) at that point: \(KillPoint.allCases.map(\.rawValue).joined(separator: ", ")).
            """,
        options: [
            OptionHelp("--amount <cents>", "Amount in minor units, more than 0."),
            OptionHelp("--order-id <id>", "The merchant's order reference."),
            OptionHelp("--currency <code>", "The sale's currency, ISO 4217 (default EUR); the terminal gives it to the card too."),
        ] + CardSourceOptions.help + [
            OptionHelp("--gateway-fault <fault>", "Inject a fault into the authorisation: none, no-answer, lost-answer, slow, server-error."),
            OptionHelp("--gateway-timeout <duration>", "How long to wait for the gateway (default 30s)."),
            OptionHelp("--wait <duration>", "How long to wait for a card (default 30s)."),
            OptionHelp("--pin <digits>", "The online PIN when the card asks for one (else prompted on a terminal)."),
            OptionHelp("--no-early-submit", "Authorise only once the whole card is read (default: as soon as the cryptogram is known)."),
            OptionHelp("--device-condition <condition>", "Put the emulated iPhone in a condition (APPLE_TTP_ errors); default ready."),
            OptionHelp("--token <token>", "The terminal's token (default: one issued by the embedded gateway for this run)."),
        ] + [RemoteGatewayOption.help] + GatewayOptions.help + OutputOptions.help,
        exitCodes: [
            (2, "the gateway answered, not approved (code D, R or E)"),
            (3, "onError: no payment occurred"),
            (4, "onTransactionCommError: the outcome is unknown, the sale is pending; run `tapemu resolve`"),
        ] + GatewayOptions.cardFileExitCodes + GatewayOptions.creatingExitCodes)

    static let notApproved: Int32 = 2
    static let failedNoPayment: Int32 = 3
    static let commError: Int32 = 4

    var amount: Int
    var orderId: String
    var currency: String
    var source: CardSourceOptions
    var fault: GatewayFault?
    var gatewayTimeout: Duration
    var wait: Duration
    var pin: String?
    var earlySubmit: Bool
    var condition: CoreDeviceEnvironment.Condition
    var token: String?
    var gateway: GatewayOptions
    var remote: RemoteGatewayOption
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        earlySubmit = !arguments.flag("--no-early-submit")
        source = try CardSourceOptions(arguments: &arguments)
        gateway = try GatewayOptions(arguments: &arguments)
        remote = try RemoteGatewayOption(arguments: &arguments)
        guard let amount = try arguments.option("--amount", valueName: "<cents>", {
            (s: String) throws(UsageError) -> Int in try Parse.integer(s, option: "--amount")
        }) else { throw UsageError("missing --amount <cents>") }
        self.amount = amount
        guard let orderId = try arguments.option("--order-id", valueName: "<id>") else {
            throw UsageError("missing --order-id <id>")
        }
        self.orderId = orderId
        currency = try arguments.option("--currency", valueName: "<code>") ?? "EUR"
        if let name = try arguments.option("--gateway-fault", valueName: "<fault>") {
            guard let f = GatewayFault(name: name) else {
                throw UsageError("unknown --gateway-fault '\(name)' (\(GatewayFault.names.joined(separator: ", ")))")
            }
            fault = f
        }
        gatewayTimeout = try arguments.option("--gateway-timeout", valueName: "<duration>", {
            (s: String) throws(UsageError) -> Duration in try Parse.duration(s, option: "--gateway-timeout")
        }) ?? .seconds(30)
        wait = try arguments.option("--wait", valueName: "<duration>", {
            (s: String) throws(UsageError) -> Duration in try Parse.duration(s, option: "--wait")
        }) ?? .seconds(30)
        pin = try arguments.option("--pin", valueName: "<digits>")
        let conditionName = try arguments.option("--device-condition", valueName: "<condition>") ?? "ready"
        guard let condition = CoreDeviceEnvironment.Condition(rawValue: conditionName) else {
            throw UsageError("unknown --device-condition '\(conditionName)' (\(CoreDeviceEnvironment.Condition.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        self.condition = condition
        token = try arguments.option("--token", valueName: "<token>")
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        // An amount of 0 or less and an empty orderId are the SDK's invalidParameters, reported
        // through onError as the SDK does.
        if let pin, PIN(pin) == nil { throw UsageError("--pin must be 4 to 12 digits") }
        guard currency.utf8.count == 3, currency.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            throw UsageError("--currency takes an ISO 4217 code of three letters, not '\(currency)'")
        }
        // The terminal writes the currency's numeric code (5F2A) for the card: it must know it.
        guard ISOCodes.currency(code: currency) != nil else {
            throw UsageError("--currency '\(currency)' is not an ISO 4217 currency tapemu knows")
        }
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
        let killPoint = try KillPoint.fromEnvironment()
        let gw = try remote.open(gateway, .create, timeout: gatewayTimeout)
        let store = try gateway.openPendingStore(.create)
        let cardSource = try source.makeSource()
        let pinProvider: any PINProvider = pin.flatMap(PIN.init).map { ScriptedPINProvider(.pin($0)) }
            ?? TerminalPINProvider(console: console)
        let authorisingGateway: any Gateway = killPoint?.gateway(gw) ?? gw
        let config = TapToPay.Configuration(
            cardSource: cardSource, gateway: authorisingGateway, pendingStore: store, pin: pinProvider,
            timeouts: PaymentTimeouts(cardPresentation: wait, gatewayRequest: gatewayTimeout), terminal: terminal,
            currency: currency.uppercased(), gatewayFault: fault, submitsEarly: earlySubmit,
            resultHandOver: .acknowledged, checkpoint: killPoint?.checkpoint ?? { @Sendable _ in },
            onEvent: { event in console.printError("tapemu: \(PayCommand.describe(event))") })
        let monitor: (any CoreDeviceMonitor)? = if case .reader(let query) = source.source {
            PCSCDeviceMonitor(query: query)
        } else {
            nil
        }
        let core = CoreAPI(configuration: config, environment: CoreDeviceEnvironment(condition: condition),
                           deviceMonitor: monitor)
        let printer = CallbackPrinter(console: console, json: output.json)
        let terminal = CoreTerminal(gateway: gw, token: token == nil ? try await RemoteGatewayOption.token(gw) : token,
                                    currency: currency.uppercased(), requestTimeout: gatewayTimeout)

        let ready = await core.initialise(terminal: terminal, saleListener: printer, refundListener: printer,
                                          deviceListener: printer)
        let monitoring = ready && monitor != nil ? Task { await core.runDeviceMonitor() } : nil
        let signals = SaleSignals()
        signals.install { core.cancelSale() }
        let outcome = await core.processSale(CoreSale(amount: amount, currency: currency.uppercased(), orderId: orderId))
        signals.uninstall()
        monitoring?.cancel()
        await monitoring?.value

        if output.json { try JSONOutput.print(printer.records, to: console) }
        switch outcome {
        case .response(let r):
            // The response is on stdout: only now may the device forget the sale (a crash before
            // this leaves it for `tapemu resolve`; a stdout that failed keeps it too).
            killPoint?.kill(at: .printed)
            _ = GatewayOptions.handOver([(r.orderId, { () throws(GatewayError) in try core.acknowledge(r) })], console: console)
            return r.isApproved ? ExitCode.success : Self.notApproved
        case .error:
            return Self.failedNoPayment
        case .commError(let sale, _, _):
            if !output.json {
                console.printError("tapemu: the sale \(sale.orderId) is pending on the device; resolve it with: tapemu resolve")
            }
            return Self.commError
        }
    }
}

// MARK: - Callbacks

/// Prints each listener callback as one line when it fires (or keeps it for the `--json` array).
final class CallbackPrinter: CoreAPISaleListener, CoreAPIRefundListener, CoreAPIDeviceListener {
    private let console: Console
    private let json: Bool
    private let kept = Mutex<[JSONValue]>([])

    init(console: Console, json: Bool) {
        self.console = console
        self.json = json
    }

    /// Every callback so far, in order.
    var records: [JSONValue] { kept.withLock { $0 } }

    private func emit(_ line: String, _ record: [String: JSONValue]) {
        kept.withLock { $0.append(.object(record)) }
        if !json { console.print(line) }
    }

    private static func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }

    static func saleJSON(_ sale: CoreSale) -> JSONValue {
        .object(["amount": .int(sale.amount), "currency": .string(sale.currency), "orderId": .string(sale.orderId),
                 "maskedPAN": optional(sale.maskedPAN), "cardType": optional(sale.cardType),
                 "uniqueRef": optional(sale.uniqueRef)])
    }

    func onSaleResponse(_ r: CoreSaleResponse) {
        emit("onSaleResponse code=\(r.code) order=\(r.orderId) uniqueRef=\(r.uniqueRef) amount=\(r.amount) \(r.currency) card=\(r.cardType) \(r.maskedPAN) auth=\(r.authCode ?? "-") response=\(r.responseCode) \(r.responseText)",
             ["callback": .string("onSaleResponse"), "code": .string(r.code), "approved": .bool(r.isApproved),
              "orderId": .string(r.orderId), "uniqueRef": .string(r.uniqueRef), "amount": .int(r.amount),
              "currency": .string(r.currency), "cardType": .string(r.cardType), "maskedPAN": .string(r.maskedPAN),
              "authCode": Self.optional(r.authCode), "responseCode": .string(r.responseCode),
              "responseText": .string(r.responseText), "paymentId": .string(r.paymentId)])
    }

    func onError(_ error: CoreError, withDescription message: String?) {
        emit("onError \(error.rawValue) \(error.name): \(message ?? "")",
             ["callback": .string("onError"), "error": .int(error.rawValue), "errorName": .string(error.name),
              "description": Self.optional(message)])
    }

    func onTransactionCommError(_ sale: CoreSale, withError error: CoreError, withMessage message: String?) {
        emit("onTransactionCommError order=\(sale.orderId) amount=\(sale.amount) \(sale.currency) card=\(sale.cardType ?? "?") \(sale.maskedPAN ?? "?") error=\(error.rawValue) \(error.name): \(message ?? "")",
             ["callback": .string("onTransactionCommError"), "sale": Self.saleJSON(sale), "error": .int(error.rawValue),
              "errorName": .string(error.name), "message": Self.optional(message)])
    }

    func onRefundResponse(_ r: CoreRefundResponse) {
        emit("onRefundResponse code=\(r.code) uniqueRef=\(r.uniqueRef) of=\(r.originalUniqueRef) amount=\(r.amount) \(r.currency) remaining=\(r.remainingAmount)",
             ["callback": .string("onRefundResponse"), "code": .string(r.code), "uniqueRef": .string(r.uniqueRef),
              "originalUniqueRef": .string(r.originalUniqueRef), "amount": .int(r.amount), "currency": .string(r.currency),
              "remainingAmount": .int(r.remainingAmount)])
    }

    func onDeviceError(_ deviceError: CoreDeviceError, withDescription message: String?) {
        emit("onDeviceError \(deviceError.rawValue) \(deviceError.name): \(message ?? "")",
             ["callback": .string("onDeviceError"), "error": .int(deviceError.rawValue),
              "errorName": .string(deviceError.name), "description": Self.optional(message)])
    }

    func onDeviceConnected(_ type: DeviceEnum, withDeviceInfo deviceInfo: [String: String]) {
        let info = deviceInfo.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        emit("onDeviceConnected \(type.name) \(info)",
             ["callback": .string("onDeviceConnected"), "type": .string(type.name),
              "deviceInfo": .object(deviceInfo.mapValues(JSONValue.string))])
    }

    func onDeviceDisconnected(_ type: DeviceEnum) {
        emit("onDeviceDisconnected \(type.name)", ["callback": .string("onDeviceDisconnected"), "type": .string(type.name)])
    }
}

// MARK: - Ctrl-C

/// SIGINT / SIGTERM cancel the sale (`cancelSale()`): `onError(cancelled)` before the submission
/// point, `onTransactionCommError(cancelled)` after it.
final class SaleSignals: Sendable {
    private struct Source: @unchecked Sendable { let source: any DispatchSourceSignal }
    private let sources = Mutex<[Source]>([])

    func install(_ handler: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "tapemu.sale.signals")
        var made: [Source] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler(handler: handler)
            source.resume()
            made.append(Source(source: source))
        }
        let all = made
        sources.withLock { $0 = all }
    }

    func uninstall() {
        let made = sources.withLock { s -> [Source] in defer { s = [] }; return s }
        for s in made { s.source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}

// MARK: - PC/SC device monitor

/// The reader `--reader` names, followed through pcscd: connected while pcscd has a reader that
/// matches, unavailable (no reader, pcscd not running) otherwise. Waits on
/// `SCardGetStatusChange` with the plug-and-play pseudo reader, so attach and detach are events,
/// not polls; when pcscd itself is down it checks again every second.
struct PCSCDeviceMonitor: CoreDeviceMonitor {
    let query: String

    func currentStatus() async -> CoreDeviceStatus {
        let context: PCSCContext
        do {
            context = try await PCSCContext.establish()
        } catch {
            return Self.unavailable(CardChannelError(error, during: .service))
        }
        return await status(in: context).status
    }

    private func status(in context: PCSCContext) async -> (status: CoreDeviceStatus, states: [ReaderState]) {
        let states: [ReaderState]
        do {
            states = try await context.readerStates()
        } catch {
            return (Self.unavailable(CardChannelError(error, during: .service)), [])
        }
        do {
            let name = try ReaderSelection.resolve(query, among: states.map(\.reader))
            return (.connected(info: ["reader": name, "interface": "pcsc"]), states)
        } catch {
            return (.unavailable(.noReader, description: error.description), states)
        }
    }

    private static func unavailable(_ error: CardChannelError) -> CoreDeviceStatus {
        .unavailable(CoreDeviceError(error) ?? .serviceUnavailable, description: error.description)
    }

    func waitForChange(from known: CoreDeviceStatus) async throws -> CoreDeviceStatus {
        while true {
            try Task.checkCancellation()
            let context: PCSCContext
            do {
                context = try await PCSCContext.establish()
            } catch {
                let now = Self.unavailable(CardChannelError(error, during: .service))
                if now != known { return now }
                // pcscd is down: nothing to wait on but time.
                try await Task.sleep(for: .seconds(1))
                continue
            }
            var (now, states) = await status(in: context)
            while now == known {
                let woke: [ReaderState]
                do {
                    woke = try await context.waitForChange(from: states, watchReaderList: true)
                } catch {
                    if error.code == .cancelled { throw CancellationError() }
                    break   // pcscd went away or the context broke: start again
                }
                // Fresh states for the readers there now, and the plug-and-play entry as it woke.
                let fresh: [ReaderState]
                (now, fresh) = await status(in: context)
                states = fresh + woke.filter(\.isPlugAndPlay)
            }
            if now != known { return now }
        }
    }
}
