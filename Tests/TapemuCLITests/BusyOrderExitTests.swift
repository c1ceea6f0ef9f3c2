import DeviceStore
import Foundation
import PaymentGateway
import Testing
@testable import tapemu
import TestSupport

/// `pay` and `sale` for an order another process is working on — a payment in progress, or a
/// recovery acting on it — send nothing (the seed's `busy`, CoreAPI's `transactionInProgress`).
/// That is "not now" (75), not "no payment occurred" (3): the order itself may be being charged
/// at that moment, and a script that read 3 as "the order was not charged" and charged again
/// under a new order id could charge the customer twice.
@Suite("A payment for an order another process holds exits 75, not 3", .temporaryDirectories)
struct BusyOrderExitTests {
    @Test(arguments: [PendingPayment.Origin.tapToPay, .coreAPI])
    func anOrderHeldElsewhereIsNotNow(_ origin: PendingPayment.Origin) async throws {
        let dir = try temporaryDirectory()
        let orderId = "held-\(origin.rawValue)"
        // Another process's attempt of the order, its lease held (as a payment in progress holds it).
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let store = try PendingPaymentStore(dataDirectory: dir)
        let other = PendingPayment(orderId: orderId, origin: origin, amount: 1000, currency: "EUR",
                                   createdAt: Date().addingTimeInterval(-5))
        try store.save(other)
        let held = try #require(try store.claim(other.attemptId))
        defer { held.release() }

        let command = origin == .tapToPay ? "pay" : "sale"
        for json in [false, true] {
            let r = await runCLI([command, "--amount", "1000", "--order-id", orderId, "--data-dir", dir] + (json ? ["--json"] : []))
            #expect(r.status == ExitCode.temporaryFailure, "\(r.out)\n\(r.err)")
            if json, origin == .tapToPay {
                let doc = try jsonObject(r.out)
                #expect(doc["exitCode"] as? Int == 75)
                #expect(doc["error"] as? String == "busy")
            } else if !json {
                #expect(r.err.contains("tapemu charges --order-id \(orderId)") || r.err.contains("tapemu resolve"), "\(r.err)")
                #expect(r.err.contains("new order id"), "\(r.err)")
            }
        }
        // Nothing was sent, and the other attempt's record is as it was.
        let gateway = try EmbeddedGateway(dataDirectory: dir, access: .existing)
        #expect(try gateway.ledger.allPayments().filter { $0.orderId == orderId }.isEmpty)
        #expect(try store.records(orderId: orderId).map(\.attemptId) == [other.attemptId])
        // Documented by the command's help.
        let configuration = try #require(CommandRegistry.commands.first { $0.configuration.commandName == command }).configuration
        #expect(configuration.exitCodes.contains { $0.code == ExitCode.temporaryFailure })
    }
}
