import Foundation
import PaymentGateway
import Testing
@testable import tapemu
import TestSupport

@Suite("tapemu sale", .temporaryDirectories)
struct SaleCommandTests {
    /// The callbacks of `tapemu sale --json`.
    func callbacks(_ out: String) throws -> [[String: Any]] {
        try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [[String: Any]])
    }

    @Test("a sale in another currency is approved in it: the card is told the same currency",
          arguments: ["USD", "gbp", "JPY"])
    func otherCurrency(currency: String) async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["sale", "--amount", "1000", "--order-id", "cur-\(currency)", "--currency", currency,
                              "--data-dir", dir, "--json"])
        #expect(r.status == 0, "\(r.out) \(r.err)")
        let response = try #require(try callbacks(r.out).first { $0["callback"] as? String == "onSaleResponse" })
        #expect(response["currency"] as? String == currency.uppercased())
        let pending = await runCLI(["pending", "--data-dir", dir, "--json"])
        #expect((try JSONSerialization.jsonObject(with: Data(pending.out.utf8)) as? [Any])?.isEmpty == true)
    }

    @Test("a currency the terminal cannot tell the card is a usage error", arguments: ["XYZ", "EU", "€€€"])
    func unknownCurrency(currency: String) async {
        let dir = (try? temporaryDirectory()) ?? "/tmp"
        let r = await runCLI(["sale", "--amount", "1000", "--order-id", "cur-bad", "--currency", currency,
                              "--data-dir", dir])
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("tapemu: --currency"))
    }
}

@Suite("tapemu resolve", .temporaryDirectories)
struct ResolveCommandTests {
    @Test("a token the gateway refuses says to get a new one, not to wait, and keeps the sale pending")
    func refusedToken() async throws {
        let dir = try temporaryDirectory()
        let sale = await runCLI(["sale", "--amount", "1092", "--order-id", "res-tok", "--data-dir", dir])
        #expect(sale.status == 4)
        let r = await runCLI(["resolve", "--token", "garbage", "--data-dir", dir])
        #expect(r.status == 75)
        #expect(r.out.contains("get a new token"))
        #expect(!r.out.contains("try again later"))
        let again = await runCLI(["resolve", "--data-dir", dir])
        #expect(again.status == 0)
        #expect(again.out.contains("reversed"))
    }

    /// `sale` lost its answer (approved); the merchant refunded the sale through the merchant
    /// API. The gateway refuses to reverse a refunded sale, so `resolve` failed on every run and
    /// the sale never left the device. Refunded in full: resolved (exit 0). In part: kept, with
    /// what to do (exit 75). Never reversed.
    @Test("a sale refunded since: resolved when refunded in full, kept when in part, never reversed",
          arguments: [(nil as Int?, true), (500, false)])
    func refundedSince(refund: Int?, resolved: Bool) async throws {
        let dir = try temporaryDirectory()
        let sale = await runCLI(["sale", "--amount", "1092", "--order-id", "res-ref", "--data-dir", dir])
        #expect(sale.status == 4)
        do {
            let gateway = try EmbeddedGateway(dataDirectory: dir, access: .existing)
            let charged = try #require(try await gateway.charges(orderId: "res-ref", options: GatewayRequestOptions()).first)
            _ = try await gateway.refund(uniqueRef: charged.uniqueRef, amount: refund, options: GatewayRequestOptions())
        }
        let r = await runCLI(["resolve", "--data-dir", dir, "--json"])
        #expect(r.status == (resolved ? 0 : 75), "\(r.err)")
        let rows = try jsonRows(r.out)
        #expect(rows.first?["outcome"] as? String == "refunded", "\(r.out)")
        #expect(rows.first?["refundedAmount"] as? Int == refund ?? 1092)
        #expect(rows.first?["resolved"] as? Bool == resolved)
        let text = await runCLI(["resolve", "--data-dir", dir])
        if resolved {
            #expect(text.out.contains("no pending sales"), "\(text.out)")
        } else {
            #expect(text.status == 75)
            #expect(text.out.contains("refunded in part since (500 of 1092)"), "\(text.out)")
            #expect(text.out.contains("tapemu pending close res-ref"), "\(text.out)")
        }
        let gateway = try EmbeddedGateway(dataDirectory: dir, access: .existing)
        #expect(try gateway.ledger.allPayments().filter { $0.kind == .reversal }.isEmpty)
    }
}
