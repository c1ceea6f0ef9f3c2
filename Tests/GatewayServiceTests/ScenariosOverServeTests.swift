import DeviceStore
import Foundation
import GatewayService
import PaymentGateway
import TapToPayTesting
import Testing
import TestSupport
@testable import tapemu

/// `tapemu scenarios run --gateway URL` against `gateway serve`: the scenarios made with the
/// served gateway's test controls (an expired token, an account of its own whose terms are not
/// accepted, a blocked SDK version) are played, not skipped, when the gateway has them; skipped,
/// naming the flag, when it has not. (The reference backend over serve, every scenario of the
/// catalogue: `examples/merchant-backend/check.py`, run by ScenariosCommandTests.)
@Suite("scenarios run over gateway serve: the scenarios that need its test controls", .temporaryDirectories)
struct ScenariosOverServeTests {
    static let needingControls = ["token-expired", "sdk-upgrade-required", "terms-declined"]

    static func player(_ gw: RemoteGateway, apiKey: String) throws -> ScenarioPlayer {
        ScenarioPlayer(gateway: gw, issueToken: ScenariosRunCommand.servedTokens(gw, apiKey: apiKey),
                       pendingStore: try PendingPaymentStore(dataDirectory: try temporaryDirectory()),
                       callbackUrl: "http://127.0.0.1:9/webhooks", coreGateway: gw)
    }

    @Test("the catalogue's scenarios that need test controls are exactly token-expired, sdk-upgrade-required and terms-declined")
    func whichNeedThem() {
        #expect(Set(ScenarioCatalogue.all.filter(\.needsTestControls).map(\.name)) == Set(Self.needingControls))
    }

    @Test("gateway serve --test-controls: each happens as the catalogue says (terms-declined after the merchant's account accepted the terms)")
    func playedWithTestControls() async throws {
        let s = try TestControlsTests.Served(testControls: true)
        let gw = RemoteGateway(baseURL: s.url)
        #expect(await ScenariosRunCommand.prepareTestControls(gw, apiKey: s.service.apiKey) == nil)
        let player = try Self.player(gw, apiKey: s.service.apiKey)
        // `approved` first: the merchant's one account accepts the terms, which terms-declined's
        // own account has not.
        for (t, name) in (["approved"] + Self.needingControls).enumerated() {
            let scenario = try #require(ScenarioCatalogue.named(name))
            let played = try await player.play(scenario, orderId: "sc-serve-\(name)", terminal: "run-t\(t)")
            #expect(played.sdk == scenario.sdk, "\(name): the SDK answered \(played.sdk) (\(played.detail ?? "-"))")
            #expect(played.truth == scenario.truth, "\(name): \(played.truth.rawValue)")
        }
        #expect(try s.service.gateway.ledger.termsAccepted(accountId: s.service.accountId))
        await s.server.stop()
    }

    @Test("a gateway without test controls: the run says how to enable them and skips exactly those scenarios, naming the flag")
    func skippedWithout() async throws {
        let s = try TestControlsTests.Served(testControls: false)
        let gw = RemoteGateway(baseURL: s.url)
        let reason = try #require(await ScenariosRunCommand.prepareTestControls(gw, apiKey: s.service.apiKey))
        #expect(reason.contains("--test-controls"))
        // The backend is never asked about a skipped scenario (nothing listens at port 9).
        let runner = ScenarioRunner(player: try Self.player(gw, apiKey: s.service.apiKey),
                                    backend: MerchantBackendClient(baseURL: "http://127.0.0.1:9"), settle: .seconds(1),
                                    withoutTestControls: reason, runId: "sc-off", apiKey: s.service.apiKey,
                                    callbackUrl: "http://127.0.0.1:9/webhooks", relayURL: "http://127.0.0.1:9")
        for name in Self.needingControls {
            let grade = await runner.run(try #require(ScenarioCatalogue.named(name)), repetition: 1, terminal: 1)
            #expect(grade.skipped == reason, "\(name): \(grade.failure ?? grade.skipped ?? "passed")")
        }
        await s.server.stop()
    }
}
