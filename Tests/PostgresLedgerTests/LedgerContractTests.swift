import Foundation
import PaymentGateway
import PostgresClient
import PostgresLedger
import Synchronization
import Testing
import TestSupport

/// One backend of the contract: how to make a gateway over a new ledger, and a second gateway
/// over the same ledger (another process, another server).
struct Backend: Sendable, CustomStringConvertible {
    var description: String
    var fresh: @Sendable () throws -> (gateway: EmbeddedGateway, reopen: @Sendable () throws -> EmbeddedGateway)

    static let sqlite = Backend(description: "SQLite") {
        let dir = try temporaryDirectory()
        let open: @Sendable () throws -> EmbeddedGateway = { try EmbeddedGateway(dataDirectory: dir) }
        return (try open(), open)
    }

    static let postgres = Backend(description: "PostgreSQL") {
        let url = try TestPostgres.freshDatabase()
        let open: @Sendable () throws -> EmbeddedGateway = { try EmbeddedGateway.shared(ledgerURL: url) }
        return (try open(), open)
    }
}

/// The gateway contract, the same on every backend (each test runs once per backend below).
enum LedgerContract {
    static func idempotentPerOrder(_ b: Backend) async throws {
        let g = try b.fresh().gateway
        let first = try await g.authorize(Card.request("o-1"))
        #expect(first.status == .approved && !first.isReplay)
        let again = try await g.authorize(Card.request("o-1"))
        #expect(again.isReplay && again.paymentId == first.paymentId)
        await #expect(throws: GatewayError.self) { try await g.authorize(Card.request("o-1", amount: 999)) }
        do throws(GatewayError) { _ = try await g.authorize(Card.request("o-1", pan: Card.other)); Issue.record("another card was charged") }
        catch { #expect(error.code == .orderConflict) }
        #expect(try g.ledger.saleCount(orderId: "o-1") == 1)
        #expect(try await g.charges(orderId: "o-1").map(\.paymentId) == [first.paymentId])
        #expect(try g.ledger.webhooks(orderId: "o-1").map(\.event) == [.approved])
    }

    static func reversalOnce(_ b: Backend) async throws {
        let g = try b.fresh().gateway
        let sale = try await g.authorize(Card.request("o-rev"))
        let r = try await g.reverse(uniqueRef: sale.uniqueRef)
        #expect(r.originalUniqueRef == sale.uniqueRef && r.amount == 1250)
        do throws(GatewayError) { _ = try await g.reverse(uniqueRef: sale.uniqueRef); Issue.record("reversed twice") }
        catch { #expect(error.code == .alreadyReversed) }
        do throws(GatewayError) { _ = try await g.refund(uniqueRef: sale.uniqueRef, amount: 1); Issue.record("refunded a reversed sale") }
        catch { #expect(error.code == .notRefundable) }
        do throws(GatewayError) { _ = try await g.reverse(uniqueRef: "NOSUCHREF"); Issue.record("reversed nothing") }
        catch { #expect(error.code == .notFound) }
        #expect(try g.ledger.webhooks(orderId: "o-rev").map(\.event) == [.approved, .reversed])
        let list = try await g.transactionList(orderId: "o-rev")
        #expect(list.count == 1 && list[0].code == .cancelled)
    }

    static func refundsWithinRemainder(_ b: Backend) async throws {
        let g = try b.fresh().gateway
        let sale = try await g.authorize(Card.request("o-ref", amount: 1000))
        let r1 = try await g.refund(uniqueRef: sale.uniqueRef, amount: 400)
        #expect(r1.remainingAmount == 600 && r1.refundedAmount == 400)
        do throws(GatewayError) { _ = try await g.refund(uniqueRef: sale.uniqueRef, amount: 601); Issue.record("refunded beyond the remainder") }
        catch { #expect(error.code == .refundExceedsRemaining) }
        let r2 = try await g.refund(uniqueRef: sale.uniqueRef)
        #expect(r2.amount == 600 && r2.remainingAmount == 0)
        do throws(GatewayError) { _ = try await g.reverse(uniqueRef: sale.uniqueRef); Issue.record("reversed a refunded sale") }
        catch { #expect(error.code == .notReversible) }
        #expect(try g.ledger.webhooks(orderId: "o-ref").map(\.event) == [.approved, .partiallyRefunded, .refunded])
        let list = try await g.transactionList(orderId: "o-ref")
        #expect(list.count == 3 && list.first?.uniqueRef == sale.uniqueRef)
        #expect(try g.ledger.children(ofPaymentId: sale.paymentId).map(\.amount) == [400, 600])
    }

    /// 32 concurrent authorisations of one order and 10 concurrent refunds of one sale.
    static func races(_ b: Backend) async throws {
        let (g, reopen) = try b.fresh()
        let others = try (0..<3).map { _ in try reopen() }
        let gateways = [g] + others
        let answers = try await withTaskExecutorPreference(testLedgerThreads) {
            try await withThrowingTaskGroup(of: AuthorisationResponse.self) { group in
                for i in 0..<32 { group.addTask { try await gateways[i % gateways.count].authorize(Card.request("o-race")) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(Set(answers.map { $0.paymentId }).count == 1)
        #expect(answers.filter { !$0.isReplay }.count == 1)
        #expect(try g.ledger.saleCount(orderId: "o-race") == 1)
        #expect(try g.ledger.webhooks(orderId: "o-race").count == 1)

        let sale = try await g.authorize(Card.request("o-refunds", amount: 1000))
        let refunds = await withTaskExecutorPreference(testLedgerThreads) {
            await withTaskGroup(of: GatewayError.Code?.self) { group in
                for i in 0..<10 {
                    group.addTask {
                        do throws(GatewayError) { _ = try await gateways[i % gateways.count].refund(uniqueRef: sale.uniqueRef, amount: 300); return nil }
                        catch { return error.code }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(refunds.filter { $0 == nil }.count == 3)
        #expect(refunds.compactMap { $0 }.allSatisfy { $0 == GatewayError.Code.refundExceedsRemaining || $0 == GatewayError.Code.busy })
        #expect(try g.ledger.payment(uniqueRef: sale.uniqueRef)?.refundedAmount == 900)
    }

    /// Group commit through the store (``LedgerStore/storeSales(_:beforeCommit:)``): one batch
    /// with an in-batch replay, an in-batch conflict, a write the database refuses (a taken
    /// uniqueRef), a replay of a committed sale and a new order; the hook runs once before
    /// COMMIT with the batch's orderIds; the ledger then holds exactly the sales that succeeded.
    static func batchOfSales(_ b: Backend) async throws {
        let g = try b.fresh().gateway
        let seed = try await g.authorize(Card.request("o-seed"))
        let template = try #require(try g.ledger.payment(paymentId: seed.paymentId))
        let fp = g.ledger.cardFingerprint(of: Card.visa.digits)
        func sale(_ orderId: String, amount: Int = 1250, uniqueRef: String? = nil) -> Payment {
            Card.sale(like: template, orderId: orderId, amount: amount, uniqueRef: uniqueRef)
        }
        let a = sale("b-a")
        let c = sale("b-c")
        let hooked = Mutex<[[String]]>([])
        let results = g.ledger.storeSales([
            (a, fp),
            (sale("b-a"), fp),                          // replay of the first, inside the batch
            (sale("b-a", amount: 2000), fp),            // conflict with the first
            (sale("b-b", uniqueRef: a.uniqueRef), fp),  // the database refuses it mid-batch
            (sale("o-seed"), fp),                       // replay of a committed sale
            (c, fp),
        ], beforeCommit: { ids in hooked.withLock { $0.append(ids) } })
        try #require(results.count == 6)
        #expect(try results[0].get().payment.paymentId == a.paymentId && !results[0].get().isReplay)
        #expect(try results[1].get().payment.paymentId == a.paymentId && results[1].get().isReplay)
        if case .failure(let e) = results[2] { #expect(e.code == .orderConflict) } else { Issue.record("no conflict") }
        if case .failure(let e) = results[3] { #expect(e.code == .storage) } else { Issue.record("a taken uniqueRef was stored") }
        #expect(try results[4].get().payment.paymentId == seed.paymentId && results[4].get().isReplay)
        #expect(try results[5].get().payment.paymentId == c.paymentId && !results[5].get().isReplay)
        #expect(hooked.withLock { $0 } == [["b-a", "b-a", "b-a", "b-b", "o-seed", "b-c"]])
        #expect(try g.ledger.allPayments().map(\.orderId).sorted() == ["b-a", "b-c", "o-seed"])
        #expect(try g.ledger.webhooks().map(\.orderId).sorted() == ["b-a", "b-c", "o-seed"])
        #expect(try g.ledger.saleCount(orderId: "b-b") == 0)
    }

    /// A terminal's claim on its orderId rides in its sale's savepoint of the group commit
    /// (``TerminalClaim``): in one batch, a second terminal's sale of a claimed order is refused
    /// `orderNotOwned` (one charge), the claimant's replay is answered, a sale of an order that
    /// holds a payment no terminal claimed is refused, and a sale the database refuses takes its
    /// claim back with it — alone or in a batch: never a claim without its sale.
    static func claimsWithSales(_ b: Backend) async throws {
        let g = try b.fresh().gateway
        let seed = try await g.authorize(Card.request("o-seed"))
        let template = try #require(try g.ledger.payment(paymentId: seed.paymentId))
        let fp = g.ledger.cardFingerprint(of: Card.visa.digits)
        func sale(_ orderId: String, uniqueRef: String? = nil) -> Payment {
            Card.sale(like: template, orderId: orderId, amount: 1250, uniqueRef: uniqueRef)
        }
        let a = TerminalIdentity(accountId: "acct-1", pointOfSaleId: "pos-a")
        let other = TerminalIdentity(accountId: "acct-1", pointOfSaleId: "pos-b")
        let claimA = TerminalClaim(terminal: a, tokenId: "tok-a"), claimB = TerminalClaim(terminal: other, tokenId: "tok-b")
        let first = sale("c-1")
        let results = g.ledger.storeSales([
            (first, fp, claimA),
            (sale("c-1"), fp, claimB),                          // another terminal, same order
            (sale("c-1"), fp, claimA),                          // the claimant's replay
            (sale("o-seed"), fp, claimA),                       // a payment no terminal claimed
            (sale("c-2", uniqueRef: first.uniqueRef), fp, claimA), // the database refuses the sale
            (sale("c-3"), fp, claimB),
        ], beforeCommit: nil)
        try #require(results.count == 6)
        func refusedNotOwned(_ r: Result<SaleOutcome, GatewayError>) -> Bool {
            if case .failure(let e) = r { return e.code == .orderNotOwned } else { return false }
        }
        #expect(try results[0].get().payment.paymentId == first.paymentId && !results[0].get().isReplay)
        #expect(refusedNotOwned(results[1]))
        #expect(try results[2].get().payment.paymentId == first.paymentId && results[2].get().isReplay)
        #expect(refusedNotOwned(results[3]))
        if case .failure(let e) = results[4] { #expect(e.code == .storage) } else { Issue.record("a taken uniqueRef was stored") }
        #expect(try results[5].get().isReplay == false)
        #expect(try g.ledger.orderTerminal("c-1") == a)
        #expect(try g.ledger.orderTerminal("c-2") == nil, "a claim outlived its refused sale")
        #expect(try g.ledger.orderTerminal("c-3") == other)
        #expect(try g.ledger.orderTerminal("o-seed") == nil)
        #expect(try g.ledger.allPayments().map(\.orderId).sorted() == ["c-1", "c-3", "o-seed"])
        // Alone (no batch): a refused sale takes its claim back; another terminal is refused.
        let alone = g.ledger.storeSales([(sale("c-4", uniqueRef: first.uniqueRef), fp, claimB)], beforeCommit: nil)
        if case .failure(let e) = alone[0] { #expect(e.code == .storage) } else { Issue.record("a taken uniqueRef was stored") }
        #expect(try g.ledger.orderTerminal("c-4") == nil, "a claim outlived its refused sale")
        #expect(refusedNotOwned(g.ledger.storeSales([(sale("c-1"), fp, claimB)], beforeCommit: nil)[0]))
        #expect(try g.ledger.saleCount(orderId: "c-1") == 1)
    }

    /// One deliverer holds a webhook under its lease; another gets it once the lease ran out.
    static func webhookClaims(_ b: Backend) async throws {
        let g = try b.fresh().gateway
        _ = try await g.authorize(Card.request("o-hook"))
        let now = Date()
        let a = try g.ledger.claimDueWebhooks(now: now, owner: "a", lease: .seconds(30), limit: 10)
        #expect(a.count == 1)
        #expect(try g.ledger.claimDueWebhooks(now: now.addingTimeInterval(1), owner: "b", lease: .seconds(30), limit: 10).isEmpty)
        // "a" died: after its lease, "b" claims it and delivers it.
        let later = now.addingTimeInterval(31)
        let b2 = try g.ledger.claimDueWebhooks(now: later, owner: "b", lease: .seconds(30), limit: 10)
        #expect(b2.map(\.id) == a.map(\.id))
        try g.ledger.recordWebhookAttempt(WebhookAttemptRecord(
            webhookId: b2[0].id, owner: "b", startedAt: later, finishedAt: later, status: 200, error: nil,
            delivered: true, nextAttemptAt: nil))
        #expect(try g.ledger.webhooks(pendingOnly: true).isEmpty)
        #expect(try g.ledger.webhookAttempts(webhookId: b2[0].id).map(\.status) == [200])
        #expect(try g.ledger.webhookDeliveries(orderId: "o-hook").map(\.state) == ["delivered"])
        #expect(try g.ledger.claimDueWebhooks(now: later.addingTimeInterval(100), owner: "c", lease: .seconds(30), limit: 10).isEmpty)
    }

    /// A deliverer renews its lease before each POST of a batch; a renewal after another
    /// deliverer took the webhook over, or after it was delivered, is refused.
    static func webhookLeaseRenewal(_ b: Backend) async throws {
        let g = try b.fresh().gateway
        _ = try await g.authorize(Card.request("o-renew"))
        let now = Date()
        let id = try #require(try g.ledger.claimDueWebhooks(now: now, owner: "a", lease: .seconds(30), limit: 10).first?.id)
        #expect(try g.ledger.renewWebhookLease(id: id, owner: "a", until: now.addingTimeInterval(60)))
        #expect(try g.ledger.claimDueWebhooks(now: now.addingTimeInterval(31), owner: "b", lease: .seconds(30), limit: 10).isEmpty)
        #expect(try g.ledger.claimDueWebhooks(now: now.addingTimeInterval(61), owner: "b", lease: .seconds(30), limit: 10).map(\.id) == [id])
        #expect(try !g.ledger.renewWebhookLease(id: id, owner: "a", until: now.addingTimeInterval(120)))
        try g.ledger.recordWebhookAttempt(WebhookAttemptRecord(
            webhookId: id, owner: "b", startedAt: now, finishedAt: now, status: 200, error: nil, delivered: true,
            nextAttemptAt: nil))
        #expect(try !g.ledger.renewWebhookLease(id: id, owner: "b", until: now.addingTimeInterval(120)))
    }

    /// A sale (a terminal's, or MONEI's SALE) whose orderId holds an authorisation not captured
    /// yet, for the same card and amount, is an order conflict, not a replay: answered with the
    /// AUTHORIZED payment it would read as approved (the terminal's APPROVED, a CoreAPI `A`) for
    /// funds only held, which the merchant's cancel then releases. An AUTH replayed, or a sale
    /// once the authorisation was captured, is still a replay.
    static func saleIsNotAnsweredWithAnAuthorisation(_ b: Backend) async throws {
        let g = try b.fresh().gateway
        var auth = Card.request("o-held")
        auth.capture = false
        auth.cardPresent = false
        let held = try await g.authorize(auth)
        do throws(GatewayError) {
            let answer = try await g.authorize(Card.request("o-held"))
            Issue.record("a sale was answered with the authorisation \(answer.paymentId) (replay \(answer.isReplay))")
        } catch {
            #expect(error.code == .orderConflict)
        }
        #expect(try g.ledger.saleCount(orderId: "o-held") == 1)
        #expect(try g.ledger.payment(paymentId: held.paymentId)?.state == .authorized)
        let again = try await g.authorize(auth)
        #expect(again.isReplay && again.paymentId == held.paymentId)
        _ = try await g.capture(uniqueRef: held.uniqueRef, amount: nil, options: .init())
        let sale = try await g.authorize(Card.request("o-held"))
        #expect(sale.isReplay && sale.paymentId == held.paymentId)
    }

    /// MONEI's two-step flow and reasons (ledger version 3 / PostgreSQL version 2): an AUTH is
    /// AUTHORIZED, captured once in full or cancelled once with its reason; a captured sale is
    /// not cancelled; refund reasons are kept; webhooks are signed with the merchant API key.
    static func authorizeCaptureCancel(_ b: Backend) async throws {
        let (g, reopen) = try b.fresh()
        func auth(_ orderId: String) -> AuthorisationRequest {
            var r = Card.request(orderId)
            r.capture = false
            r.cardPresent = false
            return r
        }
        let held = try await g.authorize(auth("o-auth"))
        #expect(held.status == .approved && held.transactionCode == .approved)
        #expect(try g.ledger.payment(paymentId: held.paymentId).map(MoneiStatus.of) == "AUTHORIZED")
        func code(_ body: () async throws(GatewayError) -> Void) async -> GatewayError.Code? {
            do throws(GatewayError) { try await body(); return nil } catch { return error.code }
        }
        #expect(await code { () async throws(GatewayError) in _ = try await g.refund(uniqueRef: held.uniqueRef, amount: 1) } == .notRefundable)
        #expect(await code { () async throws(GatewayError) in _ = try await g.capture(uniqueRef: held.uniqueRef, amount: 1, options: .init()) } == .notCapturable)
        let captured = try await g.capture(uniqueRef: held.uniqueRef, amount: 1250, options: .init())
        #expect(MoneiStatus.of(captured) == "SUCCEEDED" && captured.captured)
        #expect(await code { () async throws(GatewayError) in _ = try await g.capture(uniqueRef: held.uniqueRef, amount: nil, options: .init()) } == .notCapturable)
        #expect(await code { () async throws(GatewayError) in _ = try await g.cancel(uniqueRef: held.uniqueRef, reason: nil, options: .init()) } == .notCancelable)

        let other = try await g.authorize(auth("o-cancel"))
        let canceled = try await g.cancel(uniqueRef: other.uniqueRef, reason: "order_canceled", options: .init())
        #expect(MoneiStatus.of(canceled) == "CANCELED" && canceled.cancellationReason == "order_canceled")
        #expect(await code { () async throws(GatewayError) in _ = try await g.cancel(uniqueRef: other.uniqueRef, reason: nil, options: .init()) } == .notCancelable)
        #expect(await code { () async throws(GatewayError) in _ = try await g.capture(uniqueRef: other.uniqueRef, amount: nil, options: .init()) } == .notCapturable)

        _ = try await g.refund(uniqueRef: held.uniqueRef, amount: 250, reason: "fraudulent", options: .init())
        let h = try reopen()
        let back = try #require(try h.ledger.payment(paymentId: held.paymentId))
        #expect(back.lastRefundReason == "fraudulent" && back.lastRefundAmount == 250 && back.refundedAmount == 250)
        #expect(try h.ledger.payment(paymentId: other.paymentId)?.cancellationReason == "order_canceled")
        #expect(try g.ledger.webhooks(orderId: "o-auth").map(\.event) == [.authorized, .captured, .partiallyRefunded])
        #expect(try g.ledger.webhooks(orderId: "o-cancel").map(\.event) == [.authorized, .canceled])
        // Signed as MONEI signs: with the merchant API key.
        #expect(h.ledger.merchantAPIKey.hasPrefix("tpk_test_") && h.ledger.merchantAPIKey == g.ledger.merchantAPIKey)
        let w = try #require(try g.ledger.webhooks(orderId: "o-cancel").last)
        #expect(w.body.contains(#""cancellationReason":"order_canceled""#))
        let t = try #require(Int64(w.signature.split(separator: ",")[0].dropFirst(2)))
        #expect(w.signature == WebhookSignature.header(body: Array(w.body.utf8), secret: Array(g.ledger.merchantAPIKey.utf8), timestamp: t))
    }

    /// Settings and secrets are the ledger's: a second gateway on it agrees.
    static func sharedSettings(_ b: Backend) async throws {
        let (g, reopen) = try b.fresh()
        let key = try g.ledger.secret(named: "merchant_api_key")
        #expect(key.count == 32)
        do throws(GatewayError) { _ = try g.ledger.secret(named: "webhook_secret"); Issue.record("handed out the webhook secret") }
        catch { #expect(error.code == .invalidRequest) }
        try await g.setTermsAccepted(true, accountId: "acct-1")
        try g.blockSDKVersion("0.9.0")
        let sale = try await g.authorize(Card.request("o-shared"))
        let h = try reopen()
        #expect(try h.ledger.secret(named: "merchant_api_key") == key)
        #expect(h.webhookSecret == g.webhookSecret)
        #expect(try await h.termsAccepted(accountId: "acct-1"))
        do throws(GatewayError) { try await h.checkSDKVersion("0.9.0"); Issue.record("a blocked SDK passed") }
        catch { #expect(error.code == .sdkUpgradeRequired) }
        #expect(try await h.charges(orderId: "o-shared").map(\.paymentId) == [sale.paymentId])
        let token = g.issueToken(accountId: "acct-1")
        guard case .valid = try await h.validateToken(token) else { Issue.record("the other gateway refused the token"); return }
    }
}

/// The request log (`tapemu gateway logs`): the same on every backend.
extension LedgerContract {
    /// Lines written through one handle are read through another (another server, another
    /// process) after a cursor, oldest first; a webhook attempt writes its line with the attempt;
    /// each write prunes beyond the bound; ids are never reused.
    static func requestLog(_ b: Backend) async throws {
        let (g, reopen) = try b.fresh()
        let other = try reopen()
        func line(_ target: String) -> RequestLogEntry {
            RequestLogEntry(at: Date(), kind: .request, method: "GET", target: target, status: 200, durationMs: 1)
        }
        try g.ledger.appendRequestLog([line("/a"), line("/b")])
        let first = try other.ledger.requestLog(after: 0, since: nil, limit: 10)
        #expect(first.map(\.target) == ["/a", "/b"])
        try other.ledger.appendRequestLog([line("/c")])
        #expect(try g.ledger.requestLog(after: first[1].id, since: nil, limit: 10).map(\.target) == ["/c"])
        _ = try await g.authorize(Card.request("o-log"))
        let w = try #require(try g.ledger.webhooks(orderId: "o-log").first)
        try other.ledger.recordWebhookAttempt(WebhookAttemptRecord(webhookId: w.id, owner: "t", startedAt: Date(), finishedAt: Date(),
                                                                  status: nil, error: "couldNotConnect", delivered: false,
                                                                  nextAttemptAt: nil))
        let hook = try #require(try g.ledger.requestLog(after: 0, since: nil, limit: 10).last)
        #expect(hook.kind == .webhook && hook.status == nil && hook.orderId == "o-log")
        #expect(hook.detail?.hasSuffix("attempt 1: couldNotConnect, gave up") == true, "\(hook)")
        for k in 0..<6 { try g.ledger.appendRequestLog([line("/p\(k)")], keeping: 3) }
        let kept = try other.ledger.requestLog(after: 0, since: nil, limit: 10)
        #expect(kept.map(\.target) == ["/p3", "/p4", "/p5"] && kept[0].id > hook.id)
        #expect(try g.ledger.requestLog(after: 0, since: Date().addingTimeInterval(60), limit: 10).isEmpty)
    }
}

@Suite("Gateway ledger contract: SQLite", .temporaryDirectories)
struct SQLiteLedgerContractTests {
    @Test func idempotentPerOrder() async throws { try await LedgerContract.idempotentPerOrder(.sqlite) }
    @Test func reversalOnce() async throws { try await LedgerContract.reversalOnce(.sqlite) }
    @Test func refundsWithinRemainder() async throws { try await LedgerContract.refundsWithinRemainder(.sqlite) }
    @Test func races() async throws { try await LedgerContract.races(.sqlite) }
    @Test func batchOfSales() async throws { try await LedgerContract.batchOfSales(.sqlite) }
    @Test func claimsWithSales() async throws { try await LedgerContract.claimsWithSales(.sqlite) }
    @Test func webhookClaims() async throws { try await LedgerContract.webhookClaims(.sqlite) }
    @Test func webhookLeaseRenewal() async throws { try await LedgerContract.webhookLeaseRenewal(.sqlite) }
    @Test func sharedSettings() async throws { try await LedgerContract.sharedSettings(.sqlite) }
    @Test func authorizeCaptureCancel() async throws { try await LedgerContract.authorizeCaptureCancel(.sqlite) }
    @Test func saleIsNotAnsweredWithAnAuthorisation() async throws { try await LedgerContract.saleIsNotAnsweredWithAnAuthorisation(.sqlite) }
    @Test func requestLog() async throws { try await LedgerContract.requestLog(.sqlite) }
}

@Suite("Gateway ledger contract: PostgreSQL", .enabled(if: TestPostgres.available, Comment(rawValue: TestPostgres.skipMessage)))
struct PostgresLedgerContractTests {
    @Test func idempotentPerOrder() async throws { try await LedgerContract.idempotentPerOrder(.postgres) }
    @Test func reversalOnce() async throws { try await LedgerContract.reversalOnce(.postgres) }
    @Test func refundsWithinRemainder() async throws { try await LedgerContract.refundsWithinRemainder(.postgres) }
    @Test func races() async throws { try await LedgerContract.races(.postgres) }
    @Test func batchOfSales() async throws { try await LedgerContract.batchOfSales(.postgres) }
    @Test func claimsWithSales() async throws { try await LedgerContract.claimsWithSales(.postgres) }
    @Test func webhookClaims() async throws { try await LedgerContract.webhookClaims(.postgres) }
    @Test func webhookLeaseRenewal() async throws { try await LedgerContract.webhookLeaseRenewal(.postgres) }
    @Test func sharedSettings() async throws { try await LedgerContract.sharedSettings(.postgres) }
    @Test func authorizeCaptureCancel() async throws { try await LedgerContract.authorizeCaptureCancel(.postgres) }
    @Test func saleIsNotAnsweredWithAnAuthorisation() async throws { try await LedgerContract.saleIsNotAnsweredWithAnAuthorisation(.postgres) }
    @Test func requestLog() async throws { try await LedgerContract.requestLog(.postgres) }
}
