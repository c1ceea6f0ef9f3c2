import Foundation
import GatewayService
import PaymentGateway
import TapToPay
import Testing
import TestSupport

/// Issue 32: the configuration of the seed's static API taken from the environment reaches a
/// served gateway with `TAPEMU_GATEWAY`: the payment is in the server's ledger, the device's
/// pending store stays in `TAPEMU_DATA_DIR` (which gets no ledger), and an unclear outcome over
/// TCP is outcomeUnknown with its truth beside it.
@Suite("TapToPay's environment configuration with TAPEMU_GATEWAY", .temporaryDirectories)
struct SharedInstanceGatewayTests {
    @Test func aServedGatewayFromTheEnvironment() async throws {
        let live = try LiveService()
        let device = try temporaryDirectory()
        let config = try TapToPay.configuration(environment: [
            TapToPay.gatewayEnvironmentVariable: live.url, TapToPay.dataDirectoryEnvironmentVariable: device,
            TapToPay.cardEnvironmentVariable: "mastercard-mchip",
        ])
        let tapToPay = TapToPay(configuration: config)
        try await tapToPay.prepare(token: try await RemoteGateway(baseURL: live.url).posAuthToken(apiKey: live.service.apiKey, pointOfSaleId: "pos-env"))
        let result = try await tapToPay.acceptPayment(amount: 1250, orderId: "env-tcp-1")
        #expect(result.status == .approved && result.last4 == "0434")
        #expect(try live.service.gateway.ledger.sales(orderId: "env-tcp-1").first?.paymentId == result.paymentId)
        #expect(!FileManager.default.fileExists(atPath: device + "/" + Ledger.fileName))

        // Trigger 92: approved, then the answer is lost on the way back.
        await #expect(throws: TapToPayError.outcomeUnknown(orderId: "env-tcp-2")) {
            _ = try await tapToPay.acceptPayment(amount: 1292, orderId: "env-tcp-2")
        }
        let attempt = try #require(tapToPay.lastAttempt)
        #expect(try await tapToPay.groundTruth(of: attempt) == GroundTruth(submitted: true, charged: true))
        #expect(try config.pendingStore.get(orderId: "env-tcp-2") != nil)
        await live.server.stop()
    }
}
