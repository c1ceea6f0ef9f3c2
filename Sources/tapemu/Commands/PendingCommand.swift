import Foundation
import PaymentGateway
import TapToPay

/// `tapemu pending`: the sales stored on the device whose outcome is unknown.
struct PendingCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "pending",
        abstract: "List the pending sales stored on the device (outcome unknown; resolve them with `tapemu resolve`).",
        usage: "[--all] [--data-dir <dir>] [--json]",
        discussion: """
            A sale is stored on the device before its authorisation starts leaving, and removed \
            once the gateway's answer is known; what is left here was interrupted (a lost answer, \
            a torn card after early submission, a killed process). By default only the \
            CoreAPI-style sales (`tapemu sale`) are listed; --all adds the MONEI-style payments \
            (`tapemu pay`), which resolve through the charges query (`tapemu charges`).
            """,
        options: [OptionHelp("--all", "Also list the MONEI-style pending payments.")] + GatewayOptions.help
            + OutputOptions.help,
        exitCodes: GatewayOptions.exitCodes)

    var all: Bool
    var gateway: GatewayOptions
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        all = arguments.flag("--all")
        gateway = try GatewayOptions(arguments: &arguments)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let store = try gateway.openPendingStore()
        let pending: [PendingPayment]
        do {
            pending = try store.all().filter { all || $0.origin == .coreAPI }
        } catch {
            throw CommandFailure(exitCode: ExitCode.ioError, "cannot read the pending sales in \(gateway.dataDirectory): \(error)")
        }
        let iso = ISO8601DateFormatter()
        if output.json {
            let items: [JSONValue] = pending.map { p in
                .object([
                    "orderId": .string(p.orderId), "origin": .string(p.origin.rawValue), "amount": .int(p.amount),
                    "currency": .string(p.currency), "maskedPAN": p.maskedPAN.map(JSONValue.string) ?? .null,
                    "cardType": p.cardBrand.map(JSONValue.string) ?? .null,
                    "createdAt": .string(iso.string(from: p.createdAt)),
                    "sale": .object(p.sale.mapValues(JSONValue.string)),
                ])
            }
            try JSONOutput.print(JSONValue.array(items), to: console)
        } else if pending.isEmpty {
            console.print("no pending sales")
        } else {
            for p in pending {
                console.print("\(p.orderId)  \(p.amount) \(p.currency)  \(p.cardBrand ?? "?") \(p.maskedPAN ?? "(card not read)")  \(iso.string(from: p.createdAt))  \(p.origin.rawValue)")
            }
        }
        return ExitCode.success
    }
}
