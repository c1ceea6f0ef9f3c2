import Testing
import TestSupport
@testable import tapemu

/// `tapemu readers --watch` in process: its usage (the watch itself runs against pcscd in PCSCTests).
@Suite("tapemu readers --watch: usage", .temporaryDirectories)
struct ReadersWatchCommandTests {
    @Test("readers: --events and --reader go with --watch only")
    func readersUsage() async {
        for args in [["readers", "--events", "2"], ["readers", "--reader", "0"], ["readers", "--watch", "--events", "0"]] {
            let r = await runCLI(args)
            #expect(r.status == 64, "\(args)")
            #expect(r.err.split(separator: "\n").count == 3, "\(args): \(r.err)")
        }
    }
}
