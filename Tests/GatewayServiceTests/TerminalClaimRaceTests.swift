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
    @Test("two terminals race for one orderId into one batch (both past the read-only check): one charge, the other refused 403, the claim the winner's")
    func raceInOneBatch() async throws {
        let service = try GatewayService(dataDirectory: try temporaryDirectory())
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(5)),
                                    handler: GatewayServeCommand.makeHandler(service, listenHost: "127.0.0.1"))
        let terminals = [TerminalIdentity(accountId: service.accountId, pointOfSaleId: "pos-a"),
                         TerminalIdentity(accountId: service.accountId, pointOfSaleId: "pos-b")]
        let remotes = terminals.map {
            RemoteGateway(baseURL: server.url,
                          deviceToken: service.gateway.issueToken(accountId: $0.accountId, pointOfSaleId: $0.pointOfSaleId))
        }
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
}
