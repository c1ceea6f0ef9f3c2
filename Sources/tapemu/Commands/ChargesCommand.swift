import CardChannel
import DeviceStore
import Foundation
import PaymentGateway
import Synchronization
import TapToPay

/// `tapemu charges`: what the gateway holds for an order (seed 000's step 3).
struct ChargesCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "charges",
        abstract: "Show what the gateway holds for an order (the charges query by orderId).",
        arguments: [OneOf([Self.orderId, Self.pending], required: true), PaymentOptions.token] + RemoteGatewayOption.arguments
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
    /// `--token`: the terminal's token for a --gateway (default: one for the API key).
    var token: String?
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        gateway = try GatewayOptions(arguments: &arguments)
        remote = try RemoteGatewayOption(arguments: &arguments)
        token = try arguments.value(PaymentOptions.token)
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
        let gw = try await remote.terminal(remote.open(gateway, .readOnly), token: token).gateway
        let payments: [Payment]
        do {
            payments = try await gw.charges(orderId: orderId)
        } catch {
            throw CommandFailure.unavailable("the charges query failed: \(error)")
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
        let gw = try await remote.terminal(remote.open(gateway, .existing), token: token).gateway
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
            // The sale as the gateway holds it now (its state): one approved and then reversed
            // (cancelled by the merchant, or by a recovery) or refunded in full charges nothing —
            // "reversed", "refunded", never "approved".
            case .found(let p): row.finding = p.state.rawValue; row.payment = Self.item(p)
            case .answered(let a):
                row.finding = a.status == .approved && a.transactionCode == TransactionCode.cancelled.rawValue
                    ? PaymentState.reversed.rawValue : a.status.rawValue
                row.reason = "answered before the process ended; never handed over"
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
                let what = GatewayOptions.attemptSummary(amount: r.amount, currency: r.currency, maskedPAN: r.maskedPAN)
                var line = "order \(r.orderId) (\(what)): "
                switch r.finding {
                case "notFound":
                    line += "no payment shows; this does not prove the card was not charged: contact support with the orderId before charging again, then close it with `tapemu pending close \(ShellWord.quoted(r.orderId)) --reason …` (kept)"
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
        if handedOver == .failed || reports.contains(where: { r in
            if r.storeError != nil { return true }
            if case .unreadable = r.finding { return true }
            return false
        }) {
            return ExitCode.ioError
        }
        return handedOver == .done && rows.allSatisfy(\.removedFromDevice) ? ExitCode.success : ExitCode.temporaryFailure
    }
}
