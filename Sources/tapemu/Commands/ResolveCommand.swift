import DeviceStore
import Foundation
import PaymentGateway
import CoreAPI

/// `tapemu resolve`: the seeds' recovery process for every pending sale.
struct ResolveCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Resolve the pending sales: transaction list by orderId / last four, then reversal (seeds 002/003).",
        arguments: [Self.seed, Self.fault, PaymentOptions.gatewayTimeout, PaymentOptions.token]
            + RemoteGatewayOption.arguments + GatewayOptions.arguments + OutputOptions.arguments,
        discussion: """
            For each pending CoreAPI-style sale, oldest first: look the transaction up \
            (002: by orderId and the card's last four; 003: by orderId, then the amount and the \
            card suffix must match), then: code A → reverse it (deviceType AppleTTP); code not A → \
            declined, nothing to reverse; nothing found → the sale never reached the gateway and \
            may run again. Resolved sales leave the device; a failed request (or, with 003, a \
            transaction that does not match) leaves the sale pending for a later run. Running it \
            again never reverses a sale twice.
            """,
        exitCodes: [(75, "some sales stay pending (a request failed, a mismatch, a sale in progress or refunded in part): try again later"),
                    (ExitCode.ioError, "a record cannot be read, or a resolved sale's record cannot be removed")]
            + GatewayOptions.exitCodes + RemoteGatewayOption.tokenExitCodes)

    static let seed = Option<SeedVariant>("--seed", value: "002|003", help: "Which seed's process to run (default 002).") {
        text, _ throws(UsageError) in
        guard let variant = SeedVariant(rawValue: text) else { throw UsageError("--seed must be 002 or 003, not '\(text)'") }
        return variant
    }
    /// `pay`'s and `sale`'s fault option, applied to every request of the recovery.
    static let fault = Option<GatewayFault>(
        names: PaymentOptions.fault.names, valueName: PaymentOptions.fault.valueName,
        help: "Inject a fault into every request: none, no-answer, lost-answer, slow, server-error.", required: false,
        parse: PaymentOptions.fault.parse)

    var variant: SeedVariant
    var fault: GatewayFault?
    var gatewayTimeout: Duration
    var token: String?
    var gateway: GatewayOptions
    var remote: RemoteGatewayOption
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        gateway = try GatewayOptions(arguments: &arguments)
        remote = try RemoteGatewayOption(arguments: &arguments)
        variant = try arguments.value(Self.seed, default: .seed002)
        fault = try arguments.value(Self.fault)
        gatewayTimeout = try arguments.value(PaymentOptions.gatewayTimeout, default: .seconds(30))
        token = try arguments.value(PaymentOptions.token)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let (gw, token) = try await remote.terminal(remote.open(gateway, .existing, timeout: gatewayTimeout), token: token)
        let store = try gateway.openPendingStore(.existing)
        let terminal = CoreTerminal(gateway: gw, token: token,
                                    requestTimeout: gatewayTimeout, requestFault: fault)
        let resolver = PendingSaleResolver(terminal: terminal, store: store, variant: variant)
        let reports: [PendingSaleReport]
        do {
            // The records leave only once this report is on stdout (acknowledged below).
            reports = try await resolver.resolvePending(handOver: .acknowledged)
        } catch {
            throw gateway.failure(error, doing: "cannot read the pending sales")
        }
        if output.json {
            try JSONOutput.print(JSONValue.array(reports.map(Self.json)), to: console)
        } else if reports.isEmpty {
            console.print("no pending sales")
        } else {
            for r in reports { console.print(Self.line(r)) }
        }
        let resolved = reports.filter { $0.isResolved && $0.storeError == nil }
        let handedOver = GatewayOptions.handOver(resolved.map { r in (r.sale.orderId, r.acknowledge) }, console: console)
        if handedOver == .failed || reports.contains(where: { r in
            if r.storeError != nil { return true }
            if case .unreadable = r.outcome { return true }
            return false
        }) {
            return ExitCode.ioError
        }
        return handedOver == .done && reports.allSatisfy(\.isResolved) ? ExitCode.success : ExitCode.temporaryFailure
    }

    static func outcomeName(_ o: PendingSaleReport.Outcome) -> String {
        switch o {
        case .reversed: "reversed"
        case .alreadyReversed: "alreadyReversed"
        case .refunded: "refunded"
        case .declined: "declined"
        case .notFound: "notFound"
        case .mismatch: "mismatch"
        case .inProgress: "inProgress"
        case .unreadable: "unreadable"
        case .answered: "answered"
        case .failed: "failed"
        }
    }

    static func line(_ r: PendingSaleReport) -> String {
        let s = r.sale
        let what = GatewayOptions.attemptSummary(amount: s.amount, currency: s.currency, maskedPAN: s.maskedPAN)
        var line = "order \(s.orderId) (\(what)), seed \(r.variant.rawValue): "
        if let m = r.match {
            line += "found code \(m.code) ref \(m.uniqueRef) \(m.amount) \(m.currency) \(m.cardNumber ?? "") → "
        } else if case .failed = r.outcome {
            line += ""
        } else if case .inProgress = r.outcome {
            line += ""
        } else if case .answered = r.outcome {
            line += ""
        } else if case .unreadable = r.outcome {
            line += ""
        } else {
            line += "nothing found → "
        }
        switch r.outcome {
        case .reversed(let rev): line += "reversed (reversal ref \(rev.uniqueRef))"
        case .alreadyReversed: line += "was reversed before; not reversed again"
        case .refunded(let amount) where r.isResolved:
            line += "refunded since (\(amount) in all): nothing stays charged, nothing to reverse"
        case .refunded(let amount):
            line += "refunded in part since (\(amount) of \(s.amount)): the rest stays charged, and a sale refunded in part cannot be reversed; kept — refund the rest, or close it with `tapemu pending close \(ShellWord.quoted(s.orderId)) --reason …`"
        case .declined(let code): line += "not approved (code \(code)): nothing to reverse"
        case .notFound: line += "never reached the gateway: nothing to resolve; the sale may run again"
        case .mismatch(let reason): line += "\(reason): nothing reversed; kept — if support confirms, close it with `tapemu pending close \(ShellWord.quoted(s.orderId)) --reason …`"
        case .inProgress: line += "a sale in progress owns it: left alone"
        case .answered(let a):
            line += "the gateway had answered before the process ended (code \(a.transactionCode), \(a.status.rawValue), ref \(a.uniqueRef)) and the answer was never handed over: this is the sale's outcome; nothing reversed"
        case .unreadable(let reason): line += "the device's record cannot be read (\(reason)): left as it is"
        case .failed(let e) where e.code == .invalidToken || e.code == .tokenExpired:
            line += "request failed (\(e)): get a new token (`tapemu gateway token`), then run it again"
        case .failed(let e): line += "request failed (\(e)): try again later"
        }
        if let e = r.storeError {
            line += "; but its record could not be removed (\(e.reason)): it stays"
        } else {
            line += r.isResolved ? "; removed from the device" : "; still pending"
        }
        return line
    }

    static func json(_ r: PendingSaleReport) -> JSONValue {
        var o: [String: JSONValue] = [
            "sale": CallbackPrinter.saleJSON(r.sale),
            "seed": .string(r.variant.rawValue),
            "filter": .object(["orderId": r.filter.orderId.map(JSONValue.string) ?? .null,
                               "panLastFour": r.filter.panLastFour.map(JSONValue.string) ?? .null]),
            "found": r.match.map { m in
                JSONValue.object(["code": .string(m.code), "uniqueRef": .string(m.uniqueRef), "amount": .int(m.amount),
                                  "currency": .string(m.currency), "cardNumber": m.cardNumber.map(JSONValue.string) ?? .null,
                                  "orderId": .string(m.orderId)])
            } ?? .null,
            "outcome": .string(outcomeName(r.outcome)),
            "resolved": .bool(r.isResolved),
            "removedFromStore": .bool(r.isResolved && r.storeError == nil),
            "mayRunAgain": .bool(r.mayRunAgain),
            "storeError": r.storeError.map { JSONValue.string($0.reason) } ?? .null,
        ]
        switch r.outcome {
        case .reversed(let rev): o["reversalRef"] = .string(rev.uniqueRef)
        case .refunded(let amount): o["refundedAmount"] = .int(amount)
        case .declined(let code): o["code"] = .string(code)
        case .mismatch(let reason), .unreadable(let reason): o["reason"] = .string(reason)
        case .failed(let e):
            o["error"] = .object(["code": .int(e.code.rawValue), "name": .string(e.code.name), "message": .string(e.message)])
        case .answered(let a):
            o["code"] = .string(a.transactionCode)
            o["answer"] = .object(["status": .string(a.status.rawValue), "code": .string(a.transactionCode),
                                   "uniqueRef": .string(a.uniqueRef), "paymentId": .string(a.paymentId)])
        case .alreadyReversed, .notFound, .inProgress: break
        }
        return .object(o)
    }
}
