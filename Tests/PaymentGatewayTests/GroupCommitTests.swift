import Foundation
@testable import PaymentGateway
import Testing
import TestSupport

/// Group commit (``SaleGroupCommit``, ``Ledger/recordSales(_:beforeCommit:)``): concurrent authorisations
/// share one transaction and one durable commit, each answered exactly as if alone.
@Suite("Group commit of authorisations")
struct GroupCommitTests {
    /// Runs the requests concurrently; the first leader waits until all the others queue
    /// behind it, so they form ONE batch. Returns each request's result, in request order.
    static func oneBatch(_ g: EmbeddedGateway, _ requests: [AuthorisationRequest],
                         queued: Int? = nil) async -> [Result<AuthorisationResponse, GatewayError>] {
        g.groupCommit.setGate(queued ?? requests.count - 1)
        defer { g.groupCommit.setGate(nil) }
        return await withTaskGroup(of: (Int, Result<AuthorisationResponse, GatewayError>).self) { group in
            for (i, r) in requests.enumerated() {
                group.addTask {
                    do throws(GatewayError) {
                        return (i, .success(try await g.authorize(r)))
                    } catch {
                        return (i, .failure(error))
                    }
                }
            }
            var out = [Result<AuthorisationResponse, GatewayError>?](repeating: nil, count: requests.count)
            for await (i, r) in group { out[i] = r }
            return out.map { $0! }
        }
    }

    @Test("32 concurrent authorisations in one batch, 4 per orderId: one payment per orderId, replays get the stored answer, a different amount is orderConflict")
    func duplicatesInOneBatch() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        // Per order: three alike and one with another amount; whichever of them the batch
        // meets first is the sale, and the others are measured against it.
        var requests: [AuthorisationRequest] = []
        for k in 0..<8 {
            for j in 0..<4 { requests.append(Fixture.request(orderId: "dup-\(k)", amount: j == 3 ? 2000 : 1000)) }
        }
        requests.shuffle()
        let results = await Self.oneBatch(g, requests)
        let stats = g.groupCommit.statistics
        #expect(stats.batches == 1 && stats.largest == 32)

        for k in 0..<8 {
            let orderId = "dup-\(k)"
            let sales = try g.ledger.sales(orderId: orderId)
            try #require(sales.count == 1)
            let stored = sales[0]
            #expect(try g.ledger.webhooks(orderId: orderId).count == 1)
            var originals = 0
            for (request, result) in zip(requests, results) where request.orderId == orderId {
                if request.amount == stored.amount {
                    let answer = try result.get()
                    #expect(answer.paymentId == stored.paymentId && answer.uniqueRef == stored.uniqueRef
                            && answer.status == .approved)
                    if !answer.isReplay { originals += 1 }
                } else {
                    #expect(throws: GatewayError.self) { try result.get() }
                    if case .failure(let e) = result { #expect(e.code == .orderConflict) }
                }
            }
            #expect(originals == 1, "exactly one request of \(orderId) made the payment")
        }
        #expect(try g.ledger.allPayments().count == 8)
    }

    @Test("an invalid request among 32 concurrent ones fails alone; the other 31 are recorded")
    func invalidRequestAmongMany() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        var requests = (0..<31).map { Fixture.request(orderId: "ok-\($0)") }
        var bad = Fixture.request(orderId: "bad")
        bad.currency = "eur"
        requests.insert(bad, at: 13)
        // The invalid one is refused before it queues: the batch holds the 31 others.
        let results = await Self.oneBatch(g, requests, queued: 30)
        for (r, result) in zip(requests, results) {
            if r.orderId == "bad" {
                if case .failure(let e) = result { #expect(e.code == .invalidRequest) } else { Issue.record("bad was accepted") }
            } else {
                #expect(try result.get().status == .approved)
            }
        }
        #expect(g.groupCommit.statistics.largest == 31)
        #expect(try g.ledger.allPayments().count == 31 && g.ledger.saleCount(orderId: "bad") == 0)
    }

    static func sale(_ orderId: String, amount: Int = 1000, uniqueRef: String? = nil,
                     callbackUrl: String? = "https://merchant.example/hook") -> Payment {
        Payment(paymentId: Encoding.paymentId(), orderId: orderId, amount: amount, uniqueRef: uniqueRef ?? Encoding.uniqueRef(),
                last4: "0010", maskedPAN: "476173******0010", callbackUrl: callbackUrl,
                createdAt: Date(timeIntervalSince1970: 1_800_000_000))
    }

    @Test("inside one batch, a sale whose write fails (a constraint) rolls back to its savepoint alone; the rest commit, each decided in order")
    func savepointPerSale() throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let l = try #require(g.ledger as? Ledger)
        let a = Self.sale("a")
        let results = l.recordSales([
            (a, "fp-1"),
            (Self.sale("a"), "fp-1"),                  // replay of the first, inside the batch
            (Self.sale("a", amount: 2000), "fp-1"),   // conflict with the first
            (Self.sale("b", uniqueRef: a.uniqueRef), "fp-2"), // UNIQUE(unique_ref) fails mid-batch
            (Self.sale("c"), "fp-3"),
        ])
        try #require(results.count == 5)
        #expect(try results[0].get().isReplay == false && results[0].get().payment.paymentId == a.paymentId)
        #expect(try results[1].get().isReplay == true && results[1].get().payment.paymentId == a.paymentId)
        if case .failure(let e) = results[2] { #expect(e.code == .orderConflict) } else { Issue.record("no conflict") }
        if case .failure(let e) = results[3] { #expect(e.code == .storage) } else { Issue.record("no constraint failure") }
        #expect(try results[4].get().isReplay == false)
        #expect(try l.allPayments().map(\.orderId).sorted() == ["a", "c"])
        #expect(try l.webhooks().map(\.orderId).sorted() == ["a", "c"])
    }

    @Test("a failed commit of a batch fails every request of it and records nothing; the same requests then succeed")
    func commitFailure() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let requests = (0..<8).map { Fixture.request(orderId: "cf-\($0)") }
        try #require(g.ledger as? Ledger).batchHooks.withLock { $0.failCommits = 1 }
        let failed = await Self.oneBatch(g, requests)
        #expect(g.groupCommit.statistics.largest == 8)
        for result in failed {
            switch result {
            case .success(let a): Issue.record("answered \(a.status) although the commit failed")
            case .failure(let e): #expect(e.code == .storage)
            }
        }
        #expect(try g.ledger.allPayments().isEmpty && g.ledger.webhooks().isEmpty)
        let retried = await Self.oneBatch(g, requests)
        for result in retried {
            let a = try result.get()
            #expect(a.status == .approved && !a.isReplay)
        }
        #expect(try g.ledger.allPayments().count == 8 && g.ledger.webhooks().count == 8)
    }

    @Test("a lone authorisation is a batch of one")
    func alone() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let a = try await g.authorize(Fixture.request(orderId: "solo"))
        let b = try await g.authorize(Fixture.request(orderId: "solo"))
        #expect(!a.isReplay && b.isReplay && a.paymentId == b.paymentId)
        let stats = g.groupCommit.statistics
        #expect(stats.batches == 2 && stats.largest == 1)
    }
}
