import Foundation
import Testing
import TestSupport

/// The "What you can do with it" block of docs/CLI.md, command by command, with the exit status
/// (and the effect) each line's comment promises. PC/SC lines (`emulate`, `--reader`) are left
/// to the PCSC tests.
@Suite("README: what you can do with it", .temporaryDirectories)
struct ReadmeCommandsTests {
    @Test("the payment lines exit as their comments say, and the recovery lines find and resolve what they left")
    func paymentLines() async throws {
        let d = try temporaryDirectory()
        func run(_ args: [String]) async -> (status: Int32, out: String, err: String) {
            await runCLI(args + ["--data-dir", d])
        }
        #expect(await run(["pay", "--amount", "1250", "--order-id", "order-1042"]).status == 0)
        #expect(await run(["pay", "--amount", "1251", "--order-id", "order-1043"]).status == 2)
        #expect(await run(["pay", "--amount", "1250", "--order-id", "order-1044", "--card", "torn"]).status == 4)
        #expect(await run(["pay", "--amount", "1250", "--order-id", "order-1045", "--gateway-fault", "lost-answer"]).status == 4)
        let charges = await run(["charges", "--order-id", "order-1045", "--json"])
        let items = try #require(try jsonObject(charges.out)["items"] as? [[String: Any]])
        #expect(items.map { $0["status"] as? String } == ["approved"])   // charged, answer lost
        // charges --pending: order-1045 is found (charged) and leaves the device; order-1044 (torn
        // after early submission, approved by the gateway) too.
        let pendingPay = await run(["charges", "--pending", "--json"])
        let rows = try jsonRows(pendingPay.out)
        #expect(Set(rows.compactMap { $0["orderId"] as? String }) == ["order-1044", "order-1045"])
        #expect(rows.allSatisfy { $0["removedFromDevice"] as? Bool == true })
        #expect(pendingPay.status == 0)
        #expect(await run(["pay", "--amount", "1291", "--order-id", "order-1046", "--gateway-timeout", "100ms"]).status == 4)
        #expect(await run(["charges", "--pending"]).status == 75)   // no payment shows: kept
        let close = await run(["pending", "close", "order-1046", "--reason", "support: not charged"])
        #expect(close.status == 0 && close.out.contains("closed order order-1046"))
        #expect(await run(["charges", "--pending"]).status == 0)
        #expect(await run(["pending", "--all"]).out.contains("closed"))
        let sale = await run(["sale", "--amount", "1292", "--order-id", "sale-7"])
        #expect(sale.status == 4)
        #expect(sale.out.contains("onTransactionCommError"))
        let pending = await run(["pending"])
        #expect(pending.status == 0 && pending.out.contains("sale-7"))
        let resolve = await run(["resolve"])
        #expect(resolve.status == 0 && resolve.out.contains("reversed"))
        #expect(await run(["pending"]).out.contains("no pending sales"))
    }

    @Test("the kernel, trace and TLV lines")
    func otherLines() async throws {
        let d = try temporaryDirectory()
        let read = await runCLI(["read", "--card", "mastercard-mchip", "--json"])
        #expect(read.status == 0)
        #expect(try jsonObject(read.out)["cryptogram"] != nil)
        let trace = d + "/amex.apdu"
        #expect(await runCLI(["read", "--card", "amex", "--record", trace]).status == 0)
        let replay = await runCLI(["replay", trace])
        #expect(replay.status == 0 && replay.out.contains("1 passed, 0 failed"))
        let tlv = await runCLI(["tlv", "decode", "6F23840E325041592E5359532E4444463031A511BF0C0E610C4F07A0000000031010870101"])
        #expect(tlv.status == 0 && tlv.out.contains("2PAY.SYS.DDF01"))
        let triggers = await runCLI(["gateway", "triggers"])
        #expect(triggers.status == 0 && triggers.out.contains("amount ending 51"))
    }
}
