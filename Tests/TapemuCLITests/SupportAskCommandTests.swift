import Foundation
import Testing
import TestSupport

@Suite("tapemu support ask: seed 000's step 4 from the ledger, after the settle window", .temporaryDirectories)
struct SupportAskCommandTests {
    @Test("an unclear payment that recorded nothing: too early within the window (75); after it, no payment received, and --close closes the record with that answer")
    func nothingReceived() async throws {
        let d = try temporaryDirectory()
        #expect(await runCLI(["pay", "--amount", "1291", "--order-id", "sup-1", "--gateway-timeout", "100ms", "--data-dir", d]).status == 4)
        let early = await runCLI(["support", "ask", "sup-1", "--data-dir", d])
        #expect(early.status == 75 && early.out.contains("ask again after"))
        let late = await runCLI(["support", "ask", "sup-1", "--data-dir", d, "--settle-window", "0s", "--close", "--json"])
        #expect(late.status == 0)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(late.out.utf8)) as? [String: Any])
        #expect(doc["answer"] as? String == "noPaymentReceived")
        #expect((doc["closedAttempts"] as? [String])?.count == 1)
        #expect(await runCLI(["pending", "--all", "--data-dir", d]).out.contains("closed"))
    }

    @Test("a charged order whose answer was lost: support names the payment that holds it, whatever the window, and closes nothing")
    func paymentHolds() async throws {
        let d = try temporaryDirectory()
        #expect(await runCLI(["pay", "--amount", "1292", "--order-id", "sup-2", "--data-dir", d]).status == 4)
        let r = await runCLI(["support", "ask", "sup-2", "--data-dir", d, "--close", "--json"])
        #expect(r.status == 0)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        #expect(doc["answer"] as? String == "paymentHolds" && doc["amount"] as? Int == 1292)
        #expect((doc["closedAttempts"] as? [String])?.isEmpty == true)
    }
}
