import Foundation
import PaymentGateway
import Testing
@testable import tapemu

/// MONEI's E-codes for the emulated issuer's ISO 8583 answers: one table (`MoneiStatusCode`),
/// shown by `tapemu gateway triggers` beside the ISO code.
@Suite("MONEI status codes (E-codes) of the issuer's answers")
struct MoneiStatusCodeTests {
    @Test("every decision the gateway can make has its own row in the E-code table (none falls back)")
    func everyDecisionIsMapped() {
        var iso = Set(TestTriggers.all.compactMap { $0.decline?.statusCode })
        iso.formUnion([DeclineReason.approved.statusCode, DeclineReason.invalidCardNumber.statusCode,
                       DeclineReason.cryptogramFailed.statusCode, DeclineReason.cardDeclinedOffline.statusCode])
        let mapped = Set(MoneiStatusCode.table.map(\.isoCode))
        #expect(iso.isSubset(of: mapped), "not in the table: \(iso.subtracting(mapped).sorted())")
        #expect(MoneiStatusCode.of("00").code == "E000" && MoneiStatusCode.of("51").code == "E221")
        #expect(MoneiStatusCode.of("99").code == "E500")   // an answer the table does not name
        #expect(MoneiStatusCode.table.allSatisfy { $0.code.hasPrefix("E") && $0.code.count == 4 })
    }

    @Test("gateway triggers shows the ISO code and MONEI's E-code of each decision")
    func triggersShowBoth() async throws {
        let r = await runCLI(["gateway", "triggers", "--json"])
        #expect(r.status == 0)
        let rows = try jsonRows(r.out)
        let funds = try #require(rows.first { $0["match"] as? String == "amount ending 51" })
        #expect(funds["statusCode"] as? String == "51" && funds["moneiStatusCode"] as? String == "E221")
        let noAnswer = try #require(rows.first { $0["match"] as? String == "amount ending 91" })
        #expect(noAnswer["moneiStatusCode"] == nil)
        let slow = try #require(rows.first { $0["match"] as? String == "amount ending 93" })
        #expect(slow["moneiStatusCode"] as? String == "E000")
        let text = await runCLI(["gateway", "triggers"])
        #expect(text.out.contains("declined 51, insufficient funds [MONEI E221: Transaction declined due to insufficient funds]"))
    }
}
