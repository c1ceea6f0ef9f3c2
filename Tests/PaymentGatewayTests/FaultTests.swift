import CardChannel
import Foundation
@testable import PaymentGateway
import Testing
import Timing
import TestSupport

@Suite("Faults")
struct FaultTests {
    /// A gateway on `dir` whose waits (timeouts, slow answers) run on a manual clock.
    private func clockedGateway(_ dir: TempDir, timeout: Duration = .seconds(30)) throws -> (clock: ManualClock, g: EmbeddedGateway) {
        let clock = ManualClock()
        return (clock, try Fixture.gateway(dir, clock: clock, timeout: timeout))
    }

    /// Starts an authorisation in a task of its own and returns it once it sleeps on the clock.
    private func startWaiting(_ g: EmbeddedGateway, _ clock: ManualClock, _ request: AuthorisationRequest,
                              options: GatewayRequestOptions = GatewayRequestOptions()) async
        -> Task<AuthorisationResponse, any Error> {
        let task = Task { () async throws(GatewayError) -> AuthorisationResponse in
            try await g.authorize(request, options: options)
        }
        await clock.waitForSleepers(1)
        return task
    }

    /// The error code `task` ends with (nil for an answer).
    private func code(_ task: Task<AuthorisationResponse, any Error>) async -> GatewayError.Code? {
        switch await task.result {
        case .success: return nil
        case .failure(let e): return (e as? GatewayError)?.code
        }
    }

    /// Starts an authorisation, waits until it sleeps on the clock, advances by `by`, and
    /// returns the error code it ends with (nil for an answer).
    private func runWaiting(_ g: EmbeddedGateway, _ clock: ManualClock, _ request: AuthorisationRequest,
                            options: GatewayRequestOptions = GatewayRequestOptions(),
                            advance by: Duration) async -> GatewayError.Code? {
        let task = await startWaiting(g, clock, request, options: options)
        clock.advance(by: by)
        return await code(task)
    }

    @Test("no answer ends with timeout at the caller's timeout on the clock, and records nothing")
    func noAnswer() async throws {
        let dir = TempDir()
        let (clock, g) = try clockedGateway(dir, timeout: .seconds(30))
        let task = await startWaiting(g, clock, Fixture.request(orderId: "no-answer", amount: 1000),
                                      options: GatewayRequestOptions(timeout: .seconds(12), fault: .noAnswer))
        clock.advance(by: .seconds(11))
        #expect(clock.sleeperCount == 1)   // still waiting before the deadline
        clock.advance(by: .seconds(1))
        #expect(await code(task) == .timeout)
        #expect(try await g.charges(orderId: "no-answer").isEmpty)
        #expect(try await g.transactionList(orderId: "no-answer").isEmpty)
    }

    /// Amount ending 91 is no answer, 93 a slow answer (5 s by default): past the gateway's
    /// timeout (20 s, 4 s), both end in the caller's timeout; the no-answer records nothing, the
    /// slow answer its sale.
    @Test("amounts ending 91 (no answer) and 93 (slow answer) end at the gateway's default timeout; only the slow one is recorded",
          arguments: [(1091, Duration.seconds(20), 0), (1093, .seconds(4), 1)])
    func timedTriggers(amount: Int, timeout: Duration, recorded: Int) async throws {
        let dir = TempDir()
        let (clock, g) = try clockedGateway(dir, timeout: timeout)
        let code = await runWaiting(g, clock, Fixture.request(orderId: "t\(amount)", amount: amount), advance: timeout)
        #expect(code == .timeout)
        #expect(try g.ledger.allPayments().count == recorded)
        #expect(try g.ledger.saleCount(orderId: "t\(amount)") == recorded)
    }

    /// Amount ending 92: the host approved and recorded it; 95: it declined (05) and recorded it.
    @Test("lost answer: the host decided and recorded it, the caller gets connectionLost",
          arguments: [(1092, TransactionCode.approved, "00", PaymentState.approved), (1095, .declined, "05", .declined)])
    func lostAnswer(amount: Int, decision: TransactionCode, statusCode: String, state: PaymentState) async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let code = await gatewayErrorCode { () async throws(GatewayError) in
            try await g.authorize(Fixture.request(orderId: "lost-\(amount)", amount: amount))
        }
        #expect(code == .connectionLost)
        let list = try await g.transactionList(orderId: "lost-\(amount)", panLastFour: "0010")
        #expect(list.map(\.code) == [decision])
        #expect(list.first?.statusCode == statusCode)
        #expect(try await g.charges(orderId: "lost-\(amount)").first?.state == state)
    }

    @Test("a lost answer composes with any decision: per-request fault on a decline amount")
    func lostAnswerPerRequest() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let code = await gatewayErrorCode { () async throws(GatewayError) in
            try await g.authorize(Fixture.request(orderId: "lost-51", amount: 1051),
                                  options: GatewayRequestOptions(fault: .lostAnswer))
        }
        #expect(code == .connectionLost)
        #expect(try await g.charges(orderId: "lost-51").first?.statusCode == "51")
    }

    @Test("a slow answer within the timeout arrives after its delay on the clock")
    func slowWithinTimeout() async throws {
        let dir = TempDir()
        let (clock, g) = try clockedGateway(dir)
        let task = await startWaiting(g, clock, Fixture.request(orderId: "slow-ok", amount: 1000),
                                      options: GatewayRequestOptions(timeout: .seconds(10), fault: .slow(.seconds(3))))
        // Recorded at once, before the answer.
        #expect(try g.ledger.saleCount(orderId: "slow-ok") == 1)
        clock.advance(by: .seconds(3))
        let r = try await task.value
        #expect(r.status == .approved)
    }

    @Test("a slow answer past the timeout is a timeout, and the sale stays recorded")
    func slowPastTimeout() async throws {
        let dir = TempDir()
        let (clock, g) = try clockedGateway(dir)
        let code = await runWaiting(g, clock, Fixture.request(orderId: "slow-late", amount: 1000),
                                    options: GatewayRequestOptions(timeout: .seconds(5), fault: .slow(.seconds(60))),
                                    advance: .seconds(5))
        #expect(code == .timeout)
        #expect(try await g.transactionList(orderId: "slow-late").map(\.code) == [.approved])
    }

    @Test("server error: 5xx at once, nothing recorded", arguments: [true, false])
    func serverError(_ byTrigger: Bool) async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let code = await gatewayErrorCode { () async throws(GatewayError) in
            if byTrigger {
                return try await g.authorize(Fixture.request(orderId: "5xx", amount: 1094))
            }
            return try await g.authorize(Fixture.request(orderId: "5xx", amount: 1000),
                                         options: GatewayRequestOptions(fault: .serverError))
        }
        #expect(code == .serverError)
        #expect(try g.ledger.allPayments().isEmpty)
    }

    @Test("an armed fault applies to the next request only and beats the amount trigger")
    func armedFault() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        g.armFault(.serverError)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in
            try await g.authorize(Fixture.request(orderId: "armed", amount: 1092))
        } == .serverError)
        #expect(try g.ledger.allPayments().isEmpty)
        // Consumed: the next one follows the trigger (92: approved, answer lost).
        #expect(await gatewayErrorCode { () async throws(GatewayError) in
            try await g.authorize(Fixture.request(orderId: "armed", amount: 1092))
        } == .connectionLost)
        // A per-request fault beats an armed one, which stays armed.
        g.armFault(.serverError)
        let r = try await g.authorize(Fixture.request(orderId: "armed-2", amount: 1000),
                                      options: GatewayRequestOptions(fault: GatewayFault.none))
        #expect(r.status == .approved)
        g.clearArmedFaults()
        #expect(try await g.authorize(Fixture.request(orderId: "armed-3", amount: 1000)).status == .approved)
    }

    @Test("faults on queries and reversals", arguments: GatewayOperation.allCases)
    func faultsOnEveryOperation(_ op: GatewayOperation) async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let sale = try await g.authorize(Fixture.request(orderId: "q", amount: 1000))
        g.armFault(.serverError, for: op)
        let code = await gatewayErrorCode { () async throws(GatewayError) -> Bool in
            switch op {
            case .authorise: _ = try await g.authorize(Fixture.request(orderId: "q2", amount: 1000))
            case .charges: _ = try await g.charges(orderId: "q")
            case .transactionList: _ = try await g.transactionList(orderId: "q")
            case .reversal: _ = try await g.reverse(uniqueRef: sale.uniqueRef)
            case .refund: _ = try await g.refund(uniqueRef: sale.uniqueRef, amount: 100)
            case .capture: _ = try await g.capture(uniqueRef: sale.uniqueRef, amount: nil, options: GatewayRequestOptions())
            case .validateToken: _ = try await g.validateToken("x")
            case .checkSDKVersion: try await g.checkSDKVersion("1.0.0")
            case .terms: _ = try await g.termsAccepted(accountId: "a")
            }
            return true
        }
        #expect(code == .serverError)
        // Nothing changed.
        let stored = try #require(try g.ledger.payment(uniqueRef: sale.uniqueRef))
        #expect(!stored.reversed && stored.refundedAmount == 0)
        #expect(try g.ledger.allPayments().count == 1)
    }

    @Test("cancelling the caller while it waits for no answer ends with cancelled, nothing recorded")
    func cancelDuringWait() async throws {
        let dir = TempDir()
        let (clock, g) = try clockedGateway(dir)
        let task = await startWaiting(g, clock, Fixture.request(orderId: "cancel", amount: 1000),
                                      options: GatewayRequestOptions(fault: .noAnswer))
        task.cancel()
        #expect(await code(task) == .cancelled)
        #expect(try g.ledger.allPayments().isEmpty)
    }

    @Test("every transport fault is a communication failure; refusals are not")
    func communicationFailure() {
        for c in [GatewayError.Code.timeout, .connectionLost, .serverError, .cancelled] {
            #expect(GatewayError(c, "x").isCommunicationFailure)
        }
        for c in [GatewayError.Code.invalidRequest, .orderConflict, .alreadyReversed, .storage, .corruptLedger] {
            #expect(!GatewayError(c, "x").isCommunicationFailure)
        }
    }

    @Test("fault names parse as the command line writes them")
    func faultNames() {
        for name in GatewayFault.names { #expect(GatewayFault(name: name)?.name == name) }
        #expect(GatewayFault(name: "slow", slowDelay: .seconds(2)) == .slow(.seconds(2)))
        #expect(GatewayFault(name: "bogus") == nil)
    }
}
