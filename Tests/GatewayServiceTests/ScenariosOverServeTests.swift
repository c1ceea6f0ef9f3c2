import DeviceStore
import Foundation
import GatewayService
import HTTPServer
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

    @Test("unknown-slow-answer on a loaded server (the sale recorded after the SDK gave up): the truth read at once says nothing recorded; the settled truth, once the server is done, says charged")
    func slowAnswerRecordedLate() async throws {
        let s = try TestControlsTests.Served(testControls: false)
        let key = s.service.apiKey
        let gw = RemoteGateway(baseURL: s.url)
        let player = try Self.player(gw, apiKey: key)
        var scenario = try #require(ScenarioCatalogue.named("unknown-slow-answer"))
        // The catalogue's payment, its slow answer shortened: the server is "loaded" instead — it
        // handles the authorisation 3 s after it arrived, long after the SDK gave up at 500 ms.
        scenario.setup.fault = .slow(.milliseconds(100))
        s.service.armFault(.delay(.seconds(3)))
        let played = try await player.play(scenario, orderId: "sc-slow-late", terminal: "run-t1")
        #expect(played.sdk == .error("outcomeUnknown"))
        #expect(played.truth == .nothingRecorded, "read at once, before the server recorded it: \(played.truth.rawValue)")
        // Every request under way ends (the late commit, then the answer nobody waits for); the
        // truth again, through a server of the same gateway.
        await s.server.stop()
        let again = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(2)),
                                   handler: GatewayServeCommand.makeHandler(s.service, listenHost: "127.0.0.1"))
        let gw2 = RemoteGateway(baseURL: again.url)
        var later = player
        later.gateway = gw2
        later.issueToken = ScenariosRunCommand.servedTokens(gw2, apiKey: key)
        let settled = try await later.settledTruth(of: played, terminal: "run-t1")
        #expect(settled.truth == scenario.truth, "\(settled.truth.rawValue)")
        // An attempt that never left is as it was.
        let neverLeft = try await later.settledTruth(of: try await later.play(try #require(ScenarioCatalogue.named("cancelled")),
                                                                                 orderId: "sc-never-left", terminal: "run-t1"), terminal: "run-t1")
        #expect(neverLeft.truth == .nothingSent)
        await again.stop()
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
