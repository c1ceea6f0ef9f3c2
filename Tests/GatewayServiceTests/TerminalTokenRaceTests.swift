import CoreAPI
import DeviceStore
import Foundation
import GatewayService
import PaymentFlow
import PaymentGateway
import TapToPay
import Testing
import TestSupport
import TapToPayTesting
@testable import tapemu

/// Terminals sharing one `RemoteGateway` (one configuration, many devices: a load run, a test
/// with several terminals): each terminal's requests carry its own token. The gateway's
/// "token found valid last" was one box shared by every copy, so the token one terminal
/// prepared went out with the next terminal's payment, and the order became the other
/// terminal's (`RemoteGateway.forTerminal(token:)`).
@Suite("Terminals sharing a RemoteGateway each send their own token", .temporaryDirectories)
struct TerminalTokenRaceTests {
    /// A terminal of the shared gateway: its own device directory, the shared gateway.
    static func terminal(_ shared: RemoteGateway) throws -> TapToPay.Configuration {
        var config = try TapToPay.configuration(environment: [
            TapToPay.gatewayEnvironmentVariable: shared.baseURL, TapToPay.dataDirectoryEnvironmentVariable: try temporaryDirectory(),
        ])
        config.gateway = shared
        return config
    }

    /// A served gateway, one `RemoteGateway` on it, and the tokens of the points of sale `a` and `b`.
    static func sharedGateway(_ a: String, _ b: String) async throws
        -> (live: LiveService, shared: RemoteGateway, tokenA: String, tokenB: String) {
        let live = try LiveService()
        let shared = RemoteGateway(baseURL: live.url)
        let tokenA = try await shared.posAuthToken(apiKey: live.service.apiKey, pointOfSaleId: a)
        let tokenB = try await shared.posAuthToken(apiKey: live.service.apiKey, pointOfSaleId: b)
        return (live, shared, tokenA, tokenB)
    }

    @Test("two TapToPay terminals on one RemoteGateway, prepared one after the other, then paying at once: each order is its own terminal's")
    func moneiTerminalsRacing() async throws {
        let (live, shared, tokenA, tokenB) = try await Self.sharedGateway("pos-race-a", "pos-race-b")
        let a = TapToPay(configuration: try Self.terminal(shared))
        let b = TapToPay(configuration: try Self.terminal(shared))
        // A prepares, then B: with one shared box, A's payments went out with B's token.
        try await a.prepare(token: tokenA)
        try await b.prepare(token: tokenB)
        let rounds = 4
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (terminal, name) in [(a, "a"), (b, "b")] {
                group.addTask {
                    for i in 0..<rounds {
                        let r = try await terminal.acceptPayment(amount: 1000, orderId: "race-\(name)-\(i)")
                        #expect(r.status == .approved)
                    }
                }
            }
            try await group.waitForAll()
        }
        let asA = RemoteGateway(baseURL: live.url, deviceToken: tokenA)
        let asB = RemoteGateway(baseURL: live.url, deviceToken: tokenB)
        for i in 0..<rounds {
            #expect(try await asA.charges(orderId: "race-a-\(i)").count == 1, "terminal A's order race-a-\(i) is A's")
            #expect(try await asB.charges(orderId: "race-b-\(i)").count == 1, "terminal B's order race-b-\(i) is B's")
            await #expect(throws: GatewayError.self, "B does not see A's order") { _ = try await asB.charges(orderId: "race-a-\(i)") }
        }
        await live.server.stop()
    }

    final class Quiet: CoreAPISaleListener, CoreAPIDeviceListener, @unchecked Sendable {
        func onSaleResponse(_ response: CoreSaleResponse) {}
        func onError(_ error: CoreError, withDescription message: String?) {}
        func onTransactionCommError(_ sale: CoreSale, withError error: CoreError, withMessage message: String?) {}
        func onDeviceError(_ deviceError: CoreDeviceError, withDescription message: String?) {}
        func onDeviceConnected(_ type: DeviceEnum, withDeviceInfo deviceInfo: [String: String]) {}
        func onDeviceDisconnected(_ type: DeviceEnum) {}
    }

    @Test("two CoreAPI terminals on one configuration's RemoteGateway: sales at once, and each lists its own after the other validated its token")
    func coreTerminalsRacing() async throws {
        let (live, shared, tokenA, tokenB) = try await Self.sharedGateway("pos-core-a", "pos-core-b")
        let listener = Quiet()
        var terminals: [(CoreAPI, CoreTerminal, String)] = []
        for (token, name) in [(tokenA, "a"), (tokenB, "b")] {
            let core = CoreAPI(configuration: try Self.terminal(shared))
            let terminal = core.terminal(token: token)
            #expect(await core.initialise(terminal: terminal, saleListener: listener, deviceListener: listener))
            terminals.append((core, terminal, name))
        }
        let rounds = 4
        await withTaskGroup(of: Void.self) { group in
            for (core, _, name) in terminals {
                group.addTask {
                    for i in 0..<rounds {
                        let outcome = await core.processSale(CoreSale(amount: 1000, orderId: "core-race-\(name)-\(i)"))
                        guard case .response(let r) = outcome else {
                            Issue.record("sale core-race-\(name)-\(i): \(outcome)")
                            continue
                        }
                        #expect(r.isApproved)
                    }
                }
            }
        }
        // B validates its token last; A's terminal still lists (and may reverse) its own orders.
        _ = try await RestConnector.requestTransactionList(CoreTransactionFilter(orderId: "core-race-b-0"), with: terminals[1].1)
        for (_, terminal, name) in terminals {
            for i in 0..<rounds {
                let list = try await RestConnector.requestTransactionList(CoreTransactionFilter(orderId: "core-race-\(name)-\(i)"),
                                                                          with: terminal)
                #expect(list.transactionSummary.count == 1, "terminal \(name) lists its order core-race-\(name)-\(i)")
            }
        }
        await live.server.stop()
    }

    @Test("scenarios run over a served gateway: each terminal of the run is its own point of sale of the merchant's account")
    func scenarioTerminalsAreTheirOwn() async throws {
        let live = try LiveService()
        let gw = RemoteGateway(baseURL: live.url)
        let player = ScenarioPlayer(gateway: gw, issueToken: ScenariosRunCommand.servedTokens(gw, apiKey: live.service.apiKey),
                                    pendingStore: try PendingPaymentStore(dataDirectory: try temporaryDirectory()),
                                    callbackUrl: "http://127.0.0.1:9/webhooks", coreGateway: gw)
        let approved = try #require(ScenarioCatalogue.named("approved"))
        for t in 1...2 {
            let played = try await player.play(approved, orderId: "sc-own-t\(t)", terminal: "run-t\(t)")
            #expect(played.sdk == .approved && played.charged)
        }
        let ledger = live.service.gateway.ledger
        func claim(_ order: String, _ pos: String) throws -> OrderClaim {
            try ledger.claimOrder(order, by: TerminalIdentity(accountId: live.service.accountId, pointOfSaleId: pos),
                                  tokenId: "probe", at: Date())
        }
        #expect(try claim("sc-own-t1", "run-t1") == .mine)
        #expect(try claim("sc-own-t2", "run-t2") == .mine)
        #expect(try claim("sc-own-t2", "run-t1") == .otherTerminal)
        await live.server.stop()
    }
}
