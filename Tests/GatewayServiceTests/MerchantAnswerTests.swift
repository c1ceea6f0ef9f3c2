import BERTLV
import PaymentRules
import Foundation
@testable import GatewayService
@testable import tapemu
import HTTPClient
import HTTPServer
import PaymentGateway
import Synchronization
import Testing
import TestSupport
import Timing

/// The SQLite ledger with hooks: `onRead` runs before every read of payments (it may throw: the
/// database went away), `afterWrite` after a refund or a reversal was stored.
final class HookedLedger: LedgerStore {
    let base: Ledger
    private let hooks = Mutex<(onRead: (@Sendable (String) throws(GatewayError) -> Void)?, afterWrite: (@Sendable () -> Void)?)>((nil, nil))
    init(_ base: Ledger) { self.base = base }
    func onRead(_ f: @escaping @Sendable (String) throws(GatewayError) -> Void) { hooks.withLock { $0.onRead = f } }
    func afterWrite(_ f: @escaping @Sendable () -> Void) { hooks.withLock { $0.afterWrite = f } }
    private func read(_ what: String) throws(GatewayError) {
        if let f = hooks.withLock({ $0.onRead }) { try f(what) }
    }
    private func wrote() { hooks.withLock { $0.afterWrite }?() }

    var webhookSecret: [UInt8] { base.webhookSecret }
    var merchantAPIKey: String { base.merchantAPIKey }
    var legacyWebhookSecret: [UInt8] { base.legacyWebhookSecret }
    var tokenSigningSecret: [UInt8] { base.tokenSigningSecret }
    func cardFingerprint(of digits: String) -> String { base.cardFingerprint(of: digits) }
    var location: String { base.location }
    func storeSale(_ sale: Payment, fingerprint: String) throws(GatewayError) -> (Payment, isReplay: Bool) {
        try base.storeSale(sale, fingerprint: fingerprint)
    }
    func storeSales(_ sales: [(sale: Payment, fingerprint: String, claim: TerminalClaim?)],
                    beforeCommit: (@Sendable ([String]) -> Void)?) -> [Result<SaleOutcome, GatewayError>] {
        base.storeSales(sales, beforeCommit: beforeCommit)
    }
    func claimOrder(_ orderId: String, by terminal: TerminalIdentity, tokenId: String,
                    at now: Date) throws(GatewayError) -> OrderClaim {
        try base.claimOrder(orderId, by: terminal, tokenId: tokenId, at: now)
    }
    func orderTerminal(_ orderId: String) throws(GatewayError) -> TerminalIdentity? {
        try read("orderTerminal")
        return try base.orderTerminal(orderId)
    }
    func storeReversal(uniqueRef: String, at now: Date) throws(GatewayError) -> (sale: Payment, reversal: Payment) {
        let r = try base.storeReversal(uniqueRef: uniqueRef, at: now)
        wrote()
        return r
    }
    func storeRefund(uniqueRef: String, amount: Int?, reason: String?, at now: Date) throws(GatewayError) -> (sale: Payment, refund: Payment) {
        let r = try base.storeRefund(uniqueRef: uniqueRef, amount: amount, reason: reason, at: now)
        wrote()
        return r
    }
    func storeCancel(uniqueRef: String, reason: String?, at now: Date) throws(GatewayError) -> (sale: Payment, reversal: Payment) {
        let r = try base.storeCancel(uniqueRef: uniqueRef, reason: reason, at: now)
        wrote()
        return r
    }
    func storeCapture(uniqueRef: String, amount: Int?, at now: Date) throws(GatewayError) -> Payment {
        let r = try base.storeCapture(uniqueRef: uniqueRef, amount: amount, at: now)
        wrote()
        return r
    }
    func payment(paymentId: String) throws(GatewayError) -> Payment? {
        try read("payment")
        return try base.payment(paymentId: paymentId)
    }
    func payment(uniqueRef: String) throws(GatewayError) -> Payment? { try base.payment(uniqueRef: uniqueRef) }
    func sales(orderId: String) throws(GatewayError) -> [Payment] {
        try read("sales")
        return try base.sales(orderId: orderId)
    }
    func allPayments() throws(GatewayError) -> [Payment] {
        try read("allPayments")
        return try base.allPayments()
    }
    func saleCount(orderId: String) throws(GatewayError) -> Int { try base.saleCount(orderId: orderId) }
    func transactions(_ filter: TransactionFilter) throws(GatewayError) -> [Payment] { try base.transactions(filter) }
    func payments(orderId: String) throws(GatewayError) -> [Payment] { try base.payments(orderId: orderId) }
    func children(ofPaymentId paymentId: String) throws(GatewayError) -> [Payment] {
        try read("children")
        return try base.children(ofPaymentId: paymentId)
    }
    func recentSales(limit: Int) throws(GatewayError) -> [Payment] {
        try read("recentSales")
        return try base.recentSales(limit: limit)
    }
    func webhooks(orderId: String?, pendingOnly: Bool) throws(GatewayError) -> [Webhook] {
        try base.webhooks(orderId: orderId, pendingOnly: pendingOnly)
    }
    func webhookDeliveries(orderId: String?, paymentId: String?) throws(GatewayError) -> [WebhookDelivery] {
        try base.webhookDeliveries(orderId: orderId, paymentId: paymentId)
    }
    func webhookAttempts(webhookId: Int64) throws(GatewayError) -> [WebhookAttempt] { try base.webhookAttempts(webhookId: webhookId) }
    func claimDueWebhooks(now: Date, owner: String, lease: Duration, limit: Int,
                          firstAttemptDelay: Duration) throws(GatewayError) -> [Webhook] {
        try base.claimDueWebhooks(now: now, owner: owner, lease: lease, limit: limit, firstAttemptDelay: firstAttemptDelay)
    }
    func nextWebhookDue(firstAttemptDelay: Duration) throws(GatewayError) -> Date? {
        try base.nextWebhookDue(firstAttemptDelay: firstAttemptDelay)
    }
    func renewWebhookLease(id: Int64, owner: String, until: Date) throws(GatewayError) -> Bool {
        try base.renewWebhookLease(id: id, owner: owner, until: until)
    }
    func recordWebhookAttempt(_ a: WebhookAttemptRecord) throws(GatewayError) { try base.recordWebhookAttempt(a) }
    func markWebhookDelivered(id: Int64, at date: Date) throws(GatewayError) { try base.markWebhookDelivered(id: id, at: date) }
    func recordWebhookFailure(id: Int64, error: String) throws(GatewayError) { try base.recordWebhookFailure(id: id, error: error) }
    func termsAccepted(accountId: String) throws(GatewayError) -> Bool { try base.termsAccepted(accountId: accountId) }
    func setTermsAccepted(_ accepted: Bool, accountId: String, at date: Date) throws(GatewayError) {
        try base.setTermsAccepted(accepted, accountId: accountId, at: date)
    }
    func blockedSDKVersions() throws(GatewayError) -> Set<String> { try base.blockedSDKVersions() }
    func blockSDKVersion(_ version: String) throws(GatewayError) { try base.blockSDKVersion(version) }
    func unblockSDKVersion(_ version: String) throws(GatewayError) { try base.unblockSDKVersion(version) }
    func secret(named name: String) throws(GatewayError) -> [UInt8] { try base.secret(named: name) }
    func appendRequestLog(_ entries: [RequestLogEntry], keeping bound: Int) throws(GatewayError) {
        try base.appendRequestLog(entries, keeping: bound)
    }
    func requestLog(after id: Int64, since: Date?, limit: Int) throws(GatewayError) -> [RequestLogEntry] {
        try base.requestLog(after: id, since: since, limit: limit)
    }
}

@Suite("Merchant REST answers what the ledger recorded", .temporaryDirectories)
struct MerchantAnswerTests {
    @Test("a refund or a cancel that was recorded is answered 200 with the new state, even when the read after it fails (a retry would refund twice)")
    func recordedWriteIsAnsweredAsDone() async throws {
        let dir = try temporaryDirectory()
        let ledger = HookedLedger(try Ledger(directory: dir))
        // The first read of a payment after a refund or a reversal fails: the database went away
        // just after the COMMIT.
        let failNext = Mutex(false)
        ledger.afterWrite { failNext.withLock { $0 = true } }
        ledger.onRead { (what) throws(GatewayError) in
            if what == "payment", failNext.withLock({ let f = $0; $0 = false; return f }) {
                throw GatewayError(.storage, "the ledger database is unreachable; nothing was read")
            }
        }
        let service = try GatewayService(gateway: EmbeddedGateway(configuration: .init(dataDirectory: dir), ledger: ledger))
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(1)),
                                    handler: service.routes())
        let live = LiveService.Client(url: server.url, key: service.apiKey)
        let sale = try await RemoteGateway(baseURL: server.url, deviceToken: service.testToken).authorize(
            AuthorisationRequest(orderId: "m-refund", amount: 1000,
                                 card: CardData(pan: PAN("378282246310005")!, expiry: "2812")))
        #expect(sale.status == .approved)

        let refund = try await live.post("/v1/payments/\(sale.paymentId)/refund", #"{"amount":300}"#)
        #expect(refund.status == 200)
        let doc = try jsonObject(refund.body)
        #expect(doc["status"] as? String == "PARTIALLY_REFUNDED")
        #expect(doc["refundedAmount"] as? Int == 300 && doc["lastRefundAmount"] as? Int == 300)
        #expect(try ledger.base.payment(paymentId: sale.paymentId)?.refundedAmount == 300)

        // MONEI cancels an AUTHORIZED payment (made by POST /v1/payments with transactionType AUTH).
        let created = try await live.post("/v1/payments", """
            {"amount":1000,"currency":"EUR","orderId":"m-cancel","transactionType":"AUTH",
             "paymentMethod":{"card":{"number":"378282246310005","expMonth":"12","expYear":"28"}}}
            """)
        let otherId = try #require(try jsonObject(created.body)["id"] as? String)
        let cancel = try await live.post("/v1/payments/\(otherId)/cancel", #"{"cancellationReason":"duplicated"}"#)
        #expect(cancel.status == 200)
        #expect(try jsonObject(cancel.body)["status"] as? String == "CANCELED")
        #expect(try ledger.base.payment(paymentId: otherId)?.reversed == true)
        await server.stop()
    }
}

extension LiveService {
    /// Merchant calls with the API key.
    struct Client {
        let url: String
        let key: String
        func post(_ path: String, _ json: String) async throws -> HTTPClientResponse {
            try await HTTPClient().send(HTTPClientRequest(
                method: "POST", url: url + path,
                headers: [("Authorization", key), ("Content-Type", "application/json")], body: Array(json.utf8)))
        }
    }
}

@Suite("The served GraphQL and dashboard read the ledger off the cooperative pool", .temporaryDirectories)
struct WebRoutesThreadTests {
    @Test("GraphQL charges and the dashboard's JSON read the ledger on the ledger's threads (a slow database never holds Swift's cooperative threads)")
    func readsOnLedgerThreads() async throws {
        let dir = try temporaryDirectory()
        let ledger = HookedLedger(try Ledger(directory: dir))
        let threads = Mutex<[String]>([])
        ledger.onRead { what in threads.withLock { $0.append(what + (BlockingExecutor.ledger.isCurrent ? "@ledger" : "@elsewhere")) } }
        let service = try GatewayService(gateway: EmbeddedGateway(configuration: .init(dataDirectory: dir), ledger: ledger))
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(1)),
                                    handler: GatewayServeCommand.makeRouter(service, dashboard: true))
        _ = try await RemoteGateway(baseURL: server.url, deviceToken: service.testToken).authorize(
            AuthorisationRequest(orderId: "t-1", amount: 1000, card: CardData(pan: PAN("378282246310005")!, expiry: "2812")))
        let client = LiveService.Client(url: server.url, key: service.apiKey)
        let graphql = try await client.post("/graphql", #"{"query":"{ charges(filter: {orderId: {eq: \"t-1\"}}) { total items { refunds { id } } } }"}"#)
        #expect(graphql.status == 200 && String(decoding: graphql.body, as: UTF8.self).contains(#""total":1"#))
        let dashboard = try await HTTPClient().send(HTTPClientRequest(url: server.url + "/dashboard/api/payments?orderId=t-1",
                                                                      headers: [("Authorization", service.apiKey)]))
        #expect(dashboard.status == 200)
        _ = try await HTTPClient().send(HTTPClientRequest(url: server.url + "/v1/payments?orderId=t-1", headers: [("Authorization", service.apiKey)]))
        let names = threads.withLock { $0 }
        #expect(!names.isEmpty)
        #expect(names.allSatisfy { $0.hasSuffix("@ledger") }, "read on \(names)")
        await server.stop()
    }
}

@Suite("Merchant REST and GraphQL say the same of one payment", .temporaryDirectories)
struct RESTGraphQLAgreementTests {
    @Test("after two refunds, GET /v1/payments/{id} and the list by orderId give GraphQL's lastRefundAmount (it was null on every read but the refund's own answer)")
    func lastRefundAmount() async throws {
        let service = try GatewayService(dataDirectory: try temporaryDirectory())
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(1)),
                                    handler: GatewayServeCommand.makeRouter(service, dashboard: false))
        let sale = try await RemoteGateway(baseURL: server.url, deviceToken: service.testToken).authorize(
            AuthorisationRequest(orderId: "agree-1", amount: 1000, card: CardData(pan: PAN("4012888888881881")!, expiry: "2812")))
        #expect(sale.status == .approved)
        let client = LiveService.Client(url: server.url, key: service.apiKey)
        for amount in [300, 200] {
            let refund = try await client.post("/v1/payments/\(sale.paymentId)/refund", #"{"amount":\#(amount)}"#)
            #expect(refund.status == 200)
            #expect(try jsonObject(refund.body)["lastRefundAmount"] as? Int == amount)
        }
        let graphql = try await client.post("/graphql", #"{"query":"{ charges(filter: {orderId: {eq: \"agree-1\"}}) { items { id status refundedAmount lastRefundAmount } } }"}"#)
        let data = try #require(try jsonObject(graphql.body)["data"] as? [String: Any])
        let charge = try #require(((data["charges"] as? [String: Any])?["items"] as? [[String: Any]])?.first)
        #expect(charge["lastRefundAmount"] as? Int == 200)

        func get(_ path: String) async throws -> [String: Any] {
            let r = try await HTTPClient().send(HTTPClientRequest(url: server.url + path, headers: [("Authorization", service.apiKey)]))
            #expect(r.status == 200, "\(path)")
            return try jsonObject(r.body)
        }
        let one = try await get("/v1/payments/\(sale.paymentId)")
        let listed = try #require((try await get("/v1/payments?orderId=agree-1")["items"] as? [[String: Any]])?.first)
        for (name, rest) in [("GET /v1/payments/{id}", one), ("GET /v1/payments?orderId=", listed)] {
            #expect(rest["id"] as? String == charge["id"] as? String, "\(name)")
            #expect(rest["status"] as? String == charge["status"] as? String, "\(name)")
            #expect(rest["refundedAmount"] as? Int == charge["refundedAmount"] as? Int, "\(name)")
            #expect(rest["lastRefundAmount"] as? Int == charge["lastRefundAmount"] as? Int, "\(name)")
        }
        await server.stop()
    }
}
