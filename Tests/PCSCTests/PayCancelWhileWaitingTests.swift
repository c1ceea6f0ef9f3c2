import Foundation
import PCSC
import VPCD
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 32: `tapemu pay` on a reader with no card. Ctrl-C while it waits for a card is the user's
/// cancel on the payment sheet before a card was read: `cancelled`, exit 3, nothing submitted (once
/// the card is being read it is `outcomeUnknown`: PayUnclearOutcomeTests). In the serialized PC/SC
/// suite's family: it uses vpcd slot 0.
extension PCSCIntegrationTests {
    @Test("`tapemu pay --reader` with no card: Ctrl-C while waiting is cancelled, exit 3")
    func payCtrlCWhileWaitingForACard() async throws {
        guard let context = await RealPCSC.context() else { return }
        let reader = VPCDEndpoint.readerName(slot: 0)
        _ = try await context.waitForEmpty(reader, timeout: RealPCSC.patience)
        let dir = TempDir(prefix: "tapemu-pay-ctrlc")
        let child = try TapemuChild(["pay", "--amount", "1000", "--order-id", "w-1", "--reader", reader,
                                     "--data-dir", dir.path, "--json"])
        #expect(await child.waitForStderr(containing: "tapemu: waiting for a card"))
        child.signal(SIGINT)
        let r = await child.finish()
        #expect(r.status == 3, "\(r.stderr)")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)")
        #expect(doc["code"] as? String == "cancelled")
        let truth = try #require(doc["groundTruth"] as? [String: Any])
        #expect(truth["submitted"] as? Bool == false && truth["charged"] as? Bool == false)
        // Nothing was read: nothing is left pending.
        let pending = await (try TapemuChild(["pending", "--all", "--json", "--data-dir", dir.path])).finish()
        #expect(pending.status == 0, "\(pending.stderr)")
        #expect((try JSONSerialization.jsonObject(with: Data(pending.stdout.utf8)) as? [Any])?.isEmpty == true, "\(pending.stdout)")
    }
}
