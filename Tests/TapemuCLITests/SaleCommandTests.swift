import Foundation
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
}
