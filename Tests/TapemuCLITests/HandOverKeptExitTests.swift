import DeviceStore
import Foundation
import PaymentGateway
import Testing
import TestSupport

@Suite("A recovery whose hand-over is kept for later exits 75", .temporaryDirectories)
struct HandOverKeptExitTests {
    /// A payment was approved and its process ended before the result was handed over (its record
    /// holds the answer); the same payment's attempt that ended unclear is held by another
    /// process at the moment the recovery hands the answer over (a recovery or a payment
    /// checking its lease). The answered record cannot leave without it, so it stays for a later
    /// run — that is "not now" (75), as for the attempt in progress; it was reported as a file or
    /// store that cannot be written (74).
    @Test(arguments: [PendingPayment.Origin.tapToPay, .coreAPI])
    func anAnswerKeptBesideAHeldAttemptIsNotAnIOError(_ origin: PendingPayment.Origin) async throws {
        let dir = try temporaryDirectory()
        let orderId = "kept-\(origin.rawValue)"
        let paid = await runCLI(["pay", "--amount", "1000", "--order-id", orderId, "--data-dir", dir])
        #expect(paid.status == 0, "\(paid.err)")
        let gateway = try EmbeddedGateway(dataDirectory: dir, access: .existing)
        let sale = try #require(try await gateway.charges(orderId: orderId, options: GatewayRequestOptions()).first)

        // As processes that ended would leave them: the answered attempt, then the unclear one.
        let store = try PendingPaymentStore(dataDirectory: dir, access: .existing)
        var answered = PendingPayment(orderId: orderId, origin: origin, amount: 1000, currency: "EUR",
                                      maskedPAN: sale.maskedPAN, last4: sale.last4, cardBrand: sale.cardBrand.rawValue,
                                      createdAt: Date().addingTimeInterval(-60))
        answered.answer = .init(AuthorisationResponse(payment: sale, isReplay: false), at: Date().addingTimeInterval(-59))
        try store.save(answered)
        let unclear = PendingPayment(orderId: orderId, origin: origin, amount: 1000, currency: "EUR",
                                     maskedPAN: sale.maskedPAN, last4: sale.last4, cardBrand: sale.cardBrand.rawValue,
                                     createdAt: Date().addingTimeInterval(-30))
        try store.save(unclear)
        let held = try #require(try store.claim(unclear.attemptId))
        defer { held.release() }

        let command = origin == .tapToPay ? ["charges", "--pending"] : ["resolve"]
        let r = await runCLI(command + ["--data-dir", dir, "--json"])
        #expect(r.status == 75, "\(r.out)\n\(r.err)")
        #expect(try store.record(attemptId: answered.attemptId)?.answer != nil, "the answered record must stay")
        #expect(try gateway.ledger.allPayments().filter { $0.orderId == orderId }.map(\.state) == [.approved])
    }
}
