import DeviceStore
import Foundation
import PaymentGateway

/// `tapemu support ask ORDER`: seed 000's step 4, answered as MONEI support would.
struct SupportAskCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "support ask",
        abstract: "Ask emulated MONEI support about an order (seed 000's step 4): no payment received, or which payment holds it.",
        arguments: [Self.orderId, Self.settleWindow, Self.close] + RemoteGatewayOption.arguments + GatewayOptions.arguments
            + OutputOptions.arguments,
        discussion: """
            Answers from the gateway's ledger (the embedded one, or --gateway), and only once \
            --settle-window has passed since the last attempt of the order it knows of (the device's \
            pending record, the ledger's own): before that it says when to ask again (exit 75). A sale \
            approved and not reversed holds the order: do not charge again. Otherwise no payment was \
            received: safe to charge again, and --close closes the device's open pending records of \
            the order with that answer as the reason (kept as audit entries, `tapemu pending --all`).
            """,
        exitCodes: [(ExitCode.temporaryFailure, "too early: ask again after the time printed"),
                    (ExitCode.unavailable, "the --gateway cannot be reached")] + GatewayOptions.exitCodes)

    static let orderId = Positional("<order-id>", help: "The order to ask about.")
    static let settleWindow = Option<Duration>.duration(
        "--settle-window", help: "How long after the last attempt support waits before saying nothing was received (default 60s).")
    static let close = Flag("--close", help: "When no payment was received, close the device's open pending records of the order with that answer.")

    var orderId: String
    var window: Duration
    var closes: Bool
    var gateway: GatewayOptions
    var remote: RemoteGatewayOption
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        gateway = try GatewayOptions(arguments: &arguments)
        remote = try RemoteGatewayOption(arguments: &arguments)
        window = try arguments.value(Self.settleWindow, default: .seconds(60))
        closes = arguments.isSet(Self.close)
        orderId = try arguments.value(Self.orderId)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let gw = try remote.open(gateway, remote.url == nil ? .readOnly : .create)
        let store: PendingPaymentStore? = closes ? try gateway.openPendingStore(.existing)
            : (try? gateway.openPendingStore(.readOnly))
        let records = (try? store?.records(orderId: orderId)) ?? []
        let lastAttempt = records.map(\.createdAt).max()
        let answer: SupportDesk.Answer
        do {
            answer = try await SupportDesk(gateway: gw, settleWindow: window).ask(orderId: orderId, lastAttempt: lastAttempt)
        } catch {
            if remote.url != nil { throw CommandFailure.unavailable("support cannot be reached: \(error)") }
            throw gateway.failure(error, doing: "cannot read the gateway ledger")
        }
        let iso = ISO8601DateFormatter()
        var closed = [String]()
        var doc: [String: JSONValue] = ["orderId": .string(orderId)]
        let line: String
        switch answer {
        case .paymentHolds(let paymentId, let amount, let currency, let last4):
            doc["answer"] = .string("paymentHolds")
            doc["paymentId"] = .string(paymentId)
            doc["amount"] = .int(amount)
            doc["currency"] = .string(currency)
            doc["last4"] = .string(last4)
            line = "support: payment \(paymentId) holds order \(orderId) (\(amount) \(currency), card •••• \(last4)): do not charge again"
        case .noPaymentReceived(let declined):
            doc["answer"] = .string("noPaymentReceived")
            doc["declinedPaymentIds"] = .array(declined.map(JSONValue.string))
            let reason = "support: no payment was received for order \(orderId) (asked \(iso.string(from: Date())))"
            if closes, let store {
                for r in records where r.state != .closed {
                    do {
                        _ = try store.close(orderId: orderId, attemptId: r.attemptId, reason: reason)
                        closed.append(r.attemptId)
                    } catch {
                        console.printError("tapemu: attempt \(r.attemptId) of order \(orderId) not closed: \(error.reason)")
                    }
                }
            }
            line = "support: no payment was received for order \(orderId): safe to charge again"
                + (closes ? " (\(closed.count) pending record(s) closed)" : "")
        case .askAgainLater(let after):
            doc["answer"] = .string("askAgainLater")
            doc["after"] = .string(iso.string(from: after))
            line = "support: too early to say for order \(orderId); ask again after \(iso.string(from: after))"
        }
        doc["closedAttempts"] = .array(closed.map(JSONValue.string))
        if output.json { try JSONOutput.print(JSONValue.object(doc), to: console) } else { console.print(line) }
        if case .askAgainLater = answer { return ExitCode.temporaryFailure }
        return ExitCode.success
    }
}
