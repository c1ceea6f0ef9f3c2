import DeviceStore
import Foundation
import PaymentGateway
import CoreAPI

/// `tapemu pending`: the payment attempts stored on the device whose result was not handed over.
struct PendingCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "pending",
        abstract: "List the pending sales stored on the device (outcome unknown; resolve them with `tapemu resolve`).",
        arguments: [Self.all] + GatewayOptions.arguments + OutputOptions.arguments,
        discussion: """
            An attempt is stored on the device before its authorisation starts leaving, keeps the \
            gateway's answer once it comes, and leaves once the result has been handed over (printed); \
            what is left here was interrupted (a lost answer, a torn card after early submission, a \
            killed process). By default only the open CoreAPI-style sales (`tapemu sale`) are listed; \
            --all adds the MONEI-style payments (`tapemu pay`, resolved by `tapemu charges --pending`) \
            and the records closed with `tapemu pending close` (audit entries). A record owned by a \
            payment still running is marked "in progress". Reads only: works on a read-only or full disk.
            """,
        exitCodes: [(ExitCode.ioError, "some records cannot be read (listed by order id; the others are shown)")]
            + GatewayOptions.exitCodes)

    static let all = Flag("--all", help: "Also list the MONEI-style pending payments and the closed records.")

    var all: Bool
    var gateway: GatewayOptions
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        all = arguments.isSet(Self.all)
        gateway = try GatewayOptions(arguments: &arguments)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let store = try gateway.openPendingStore(.readOnly)
        let scan: PendingScan
        do {
            scan = try store.scan(includingClosed: all)
        } catch {
            throw gateway.failure(error, doing: "cannot read the pending sales")
        }
        let pending = scan.records.filter { all || $0.origin == .coreAPI }
        let owned = pending.map { (try? store.isOwned($0.attemptId)) ?? false }
        let iso = ISO8601DateFormatter()
        if output.json {
            var items: [JSONValue] = zip(pending, owned).map { p, live in
                .object([
                    "orderId": .string(p.orderId), "attemptId": .string(p.attemptId), "origin": .string(p.origin.rawValue),
                    "state": .string(p.state.rawValue), "inProgress": .bool(live), "amount": .int(p.amount),
                    "currency": .string(p.currency), "maskedPAN": p.maskedPAN.map(JSONValue.string) ?? .null,
                    "cardType": p.cardBrand.map(JSONValue.string) ?? .null,
                    "createdAt": .string(iso.string(from: p.createdAt)),
                    "answer": p.answer.map { a in
                        JSONValue.object(["status": .string(a.status.rawValue), "code": .string(a.transactionCode),
                                          "uniqueRef": .string(a.uniqueRef), "paymentId": .string(a.paymentId)])
                    } ?? .null,
                    "closed": p.closure.map { c in
                        JSONValue.object(["reason": .string(c.reason), "closedAt": .string(iso.string(from: c.closedAt))])
                    } ?? .null,
                    "sale": .object(p.sale.mapValues(JSONValue.string)),
                ])
            }
            items += scan.unreadable.map { u in
                .object(["orderId": .string(u.orderId), "attemptId": .string(u.attemptId), "state": .string("unreadable"),
                         "reason": .string(u.reason)])
            }
            try JSONOutput.print(JSONValue.array(items), to: console)
        } else if pending.isEmpty && scan.unreadable.isEmpty {
            console.print("no pending sales")
        } else {
            for (p, live) in zip(pending, owned) {
                var line = "\(p.orderId)  \(p.amount) \(p.currency)  \(p.cardBrand ?? "?") \(p.maskedPAN ?? "(card not read)")  \(iso.string(from: p.createdAt))  \(p.origin.rawValue)"
                switch p.state {
                case .pending: line += live ? "  in progress" : ""
                case .answered: line += "  answered \(p.answer?.status.rawValue ?? "?") (not handed over)\(live ? ", in progress" : "")"
                case .closed: line += "  closed \(p.closure.map { "\(iso.string(from: $0.closedAt)): \($0.reason)" } ?? "")"
                }
                console.print(line)
            }
            for u in scan.unreadable {
                console.print("\(u.orderId)  unreadable: \(u.reason)  (attempt \(u.attemptId))")
            }
        }
        return scan.unreadable.isEmpty ? ExitCode.success : ExitCode.ioError
    }
}
