import DeviceStore
import Foundation
import PaymentGateway
import TapToPay

/// `tapemu pending close`: closes a record without an answer, deliberately and on the record.
struct PendingCloseCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "pending close",
        abstract: "Close a pending record without an answer (after contacting support), keeping it as an audit entry.",
        arguments: [Self.orderId, Self.reason, Self.attempt] + GatewayOptions.arguments + OutputOptions.arguments,
        discussion: """
            Seed 000's step 4: when no payment shows for an order and support has been contacted, \
            the record can be closed. It is not deleted: it stays as an audit entry with the reason \
            and the time (`tapemu pending --all`), and recovery no longer looks at it. A record owned \
            by a payment still running cannot be closed, nor one that holds the gateway's answer \
            (its outcome is known: `tapemu resolve` / `tapemu charges --pending` report it). When the order has several open attempts, \
            name one with --attempt (`tapemu pending --all --json` lists their ids).
            """,
        exitCodes: [(ExitCode.noInput, "no open record for the order"),
                    (ExitCode.temporaryFailure, "a payment in progress owns the record")] + GatewayOptions.exitCodes)

    static let orderId = Positional("<order-id>", help: "The order whose record is closed.")
    static let reason = Option<String>("--reason", value: "<text>", help: "Why it is closed (required), e.g. a support ticket.",
                                       required: true)
    static let attempt = Option<String>("--attempt", value: "<id>", help: "Which attempt, when the order has several open.")

    var orderId: String
    var reason: String
    var attemptId: String?
    var gateway: GatewayOptions
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        gateway = try GatewayOptions(arguments: &arguments)
        guard let reason = try arguments.value(Self.reason) else {
            throw UsageError("missing --reason <text> (closing a record is kept with its reason)")
        }
        self.reason = reason
        attemptId = try arguments.value(Self.attempt)
        orderId = try arguments.value(Self.orderId)
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        if reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { throw UsageError("--reason must not be empty") }
    }

    func run(_ console: Console) async throws -> Int32 {
        let store = try gateway.openPendingStore(.existing)
        let closed: PendingPayment
        do {
            closed = try store.close(orderId: orderId, attemptId: attemptId, reason: reason)
        } catch {
            if let status = ExitCode.ofRecordRequest(error) { throw CommandFailure(exitCode: status, error.reason) }
            throw gateway.failure(error, doing: "cannot close the record")
        }
        if output.json {
            try JSONOutput.print(JSONValue.object([
                "orderId": .string(closed.orderId), "attemptId": .string(closed.attemptId), "state": .string(closed.state.rawValue),
                "reason": .string(closed.closure?.reason ?? reason),
            ]), to: console)
        } else {
            console.print("closed order \(closed.orderId) (attempt \(closed.attemptId), \(closed.amount) \(closed.currency)): \(closed.closure?.reason ?? reason)")
        }
        return ExitCode.success
    }
}
