import Foundation
@testable import GatewayService
@testable import tapemu
import HTTPServer
@testable import PaymentGateway
import PaymentRules
import Testing
import TestSupport

/// A terminal's authorisation claims its orderId inside its sale's savepoint of the group commit
/// (``TerminalClaim``), not in a commit of its own before it.
@Suite("terminal claims in the group commit", .temporaryDirectories)
struct TerminalClaimRaceTests {
    /// A served gateway and two terminals of its account (points of sale pos-a and pos-b), each
    /// with its own token over HTTP.
    static func twoTerminals() throws -> (GatewayService, HTTPServer, [TerminalIdentity], [RemoteGateway]) {
        let service = try GatewayService(dataDirectory: try temporaryDirectory())
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(5)),
                                    handler: GatewayServeCommand.makeHandler(service, listenHost: "127.0.0.1"))
        let terminals = ["pos-a", "pos-b"].map { TerminalIdentity(accountId: service.accountId, pointOfSaleId: $0) }
        let remotes = terminals.map {
            RemoteGateway(baseURL: server.url,
                          deviceToken: service.gateway.issueToken(accountId: $0.accountId, pointOfSaleId: $0.pointOfSaleId))
        }
        return (service, server, terminals, remotes)
    }

    @Test("two terminals race for one orderId into one batch (both past the read-only check): one charge, the other refused 403, the claim the winner's")
    func raceInOneBatch() async throws {
        let (service, server, terminals, remotes) = try Self.twoTerminals()
        // Each leader waits for one more sale: both requests of a round share one batch, so the
        // second meets the first's claim inside the commit, not in an earlier read.
        service.gateway.groupCommit.setGate(1)
        defer { service.gateway.groupCommit.setGate(nil) }
        for round in 0..<8 {
            let orderId = "race-\(round)"
            let outcomes = await withTaskGroup(of: (Int, Result<AuthorisationResponse, GatewayError>).self) { group in
                for (k, remote) in remotes.enumerated() {
                    group.addTask {
                        do throws(GatewayError) {
                            return (k, .success(try await remote.authorize(AuthorisationRequest(
                                orderId: orderId, amount: 1000, card: CardData(pan: PAN("4012888888881881")!, expiry: "2812")))))
                        } catch {
                            return (k, .failure(error))
                        }
                    }
                }
                var out: [(Int, Result<AuthorisationResponse, GatewayError>)] = []
                for await o in group { out.append(o) }
                return out
            }
            let approved = outcomes.filter { if case .success(let r) = $0.1 { r.status == .approved } else { false } }
            try #require(approved.count == 1, "round \(round): \(outcomes)")
            for (_, r) in outcomes {
                if case .failure(let e) = r {
                    #expect(!e.isCommunicationFailure && e.reason.contains("sent by another terminal"), "\(e)")
                }
            }
            #expect(try service.gateway.ledger.saleCount(orderId: orderId) == 1)
            #expect(try service.gateway.ledger.orderTerminal(orderId) == terminals[approved[0].0])
        }
        #expect(service.gateway.groupCommit.statistics.largest == 2)
        await server.stop()
    }

    @Test("the terminal API's read-only checks answer while a group commit holds the ledger's writer before its COMMIT: another terminal's order refused 403, an SDK version checked; the held sale then commits",
          .timeLimit(.minutes(1)))
    func readChecksDoNotWaitForACommit() async throws {
        let (service, server, terminals, remotes) = try Self.twoTerminals()
        let card = CardData(pan: PAN("4012888888881881")!, expiry: "2812")
        _ = try await remotes[0].authorize(AuthorisationRequest(orderId: "own-a", amount: 1000, card: card))
        // The next group commit stops after writing its sale and before its COMMIT until
        // `release`: the writer is held (its connection locked, its transaction open), as a
        // commit holds it through its fsync.
        let inCommit = OneShotEvent(), released = OneShotEvent()
        let release = DispatchSemaphore(value: 0)
        service.gateway.setBeforeBatchCommit { _ in
            inCommit.fire()
            release.wait()
        }
        let held = Task { () async throws(GatewayError) -> AuthorisationResponse in
            try await remotes[0].authorize(AuthorisationRequest(orderId: "held-a", amount: 1000, card: card))
        }
        await inCommit.wait()
        service.gateway.setBeforeBatchCommit(nil)
        let letGo: @Sendable () -> Void = { released.fire(); release.signal() }
        // Terminal B, while A's commit is held. Reads that waited for the writer would never
        // answer here: the time limit cancels this wait, which lets the commit go, and the
        // expectations below fail.
        let (refusal, sdkCheck) = await withTaskCancellationHandler {
            () async -> (GatewayError?, GatewayError?) in
            var refusal: GatewayError?, sdkCheck: GatewayError?
            do throws(GatewayError) {
                _ = try await remotes[1].authorize(AuthorisationRequest(orderId: "own-a", amount: 1000, card: card))
            } catch {
                refusal = error
            }
            do throws(GatewayError) {
                try await remotes[1].checkSDKVersion("1.2.3", options: GatewayRequestOptions())
            } catch {
                sdkCheck = error
            }
            return (refusal, sdkCheck)
        } onCancel: {
            letGo()
        }
        let answeredWhileHeld = !released.hasFired
        letGo()
        let sale = try await held.value
        #expect(answeredWhileHeld, "terminal B's read-only checks waited for terminal A's commit")
        let e = try #require(refusal, "terminal B charged terminal A's order")
        #expect(!e.isCommunicationFailure && e.reason.contains("sent by another terminal"), "\(e)")
        #expect(sdkCheck == nil, "\(String(describing: sdkCheck))")
        #expect(sale.status == .approved && !sale.isReplay)
        #expect(try service.gateway.ledger.saleCount(orderId: "held-a") == 1)
        #expect(try service.gateway.ledger.saleCount(orderId: "own-a") == 1)
        #expect(try service.gateway.ledger.orderTerminal("held-a") == terminals[0])
        await server.stop()
    }
}
