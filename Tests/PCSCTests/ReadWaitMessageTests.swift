import Foundation
import PCSC
import VPCD
import Testing

extension PCSCIntegrationTests {
    /// Issue 36, item 8: `read --reader` with no card said nothing until its --wait ran out.
    @Test("`tapemu read --reader` with no card says it waits for one, and for how long")
    func readSaysItWaits() async throws {
        guard let context = await RealPCSC.context(), let tapemu = tapemuExecutable() else { return }
        let reader = VPCDEndpoint.readerName(slot: 0)
        _ = try await context.waitForEmpty(reader, timeout: RealPCSC.patience)
        let r = try await runProgram(tapemu, ["read", "--reader", reader, "--wait", "300ms"])
        #expect(r.status == 75, "\(r.stderr)")
        #expect(r.stderr.hasPrefix("tapemu: waiting up to 300 ms for a card on reader '\(reader)' (--wait to change; Ctrl-C to stop)\n"), "\(r.stderr)")
    }
}
