import DeviceStore
import CardChannel
import Foundation
import PaymentGateway
import TapToPay
import Testing
import VirtualCard

/// The example of docs/SWIFT.md ("Use it from Swift"), kept compiling and true here.
@Suite("README example")
struct ReadmeExampleTests {
    @Test func aCardTornAfterEarlySubmissionIsAnUnclearOutcome() async throws {
        let dataDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("tapemu-readme-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }

        // README example, from here…
        let gateway = try EmbeddedGateway(dataDirectory: dataDirectory)
        let card = try #require(CardProfiles.named("visa-qvsdc")).withTear(afterExchange: 3)
        let tapToPay = TapToPay(configuration: .init(
            cardSource: VirtualCardSource(profile: card),
            gateway: gateway,
            pendingStore: try PendingPaymentStore(dataDirectory: dataDirectory)))

        try await tapToPay.prepare(token: gateway.issueToken(accountId: "acct_test"))
        var unclearOrder: String?
        do {
            let result = try await tapToPay.acceptPayment(amount: 1250, orderId: "order-1042", callbackUrl: nil)
            print(result.status)
        } catch {
            switch error {
            case .outcomeUnknown(let orderId):
                // The card may have been charged: never retry; wait for the webhook, or look it up.
                let charges = try await gateway.charges(orderId: orderId)
                print(charges.map(\.status))
                unclearOrder = orderId
            default:
                print("no payment: \(error)")
            }
        }
        // …to here.

        #expect(unclearOrder == "order-1042")
        #expect(try await gateway.charges(orderId: "order-1042").count == 1)
    }
}
