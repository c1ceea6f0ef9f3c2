import Foundation
import Testing
import TestSupport

/// `scripts/chaos --quick` as part of the suite: parallel `pay`/`sale` processes on one data
/// directory, recoveries beside them, SIGKILLs at random moments and at every kill point, damaged
/// files — then the invariants from the ledger, the device store and every output. A fresh seed
/// each run (printed by the script, so a failure can be replayed with `--seed`).
@Suite(.serialized) struct ChaosQuickTests {
    @Test func aQuickCampaignLosesAndMisreportsNothing() async throws {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let script = repo.appendingPathComponent("scripts/chaos").path
        try #require(FileManager.default.isExecutableFile(atPath: script), "scripts/chaos is missing")
        let dir = TempDir()
        let chaos = try await CoreAPIProcessKillTests.run(
            ["python3", script, "--quick", "--tapemu", try CoreAPIProcessKillTests.binary().path,
             "--data-dir", dir.path + "/chaos"], in: dir, executable: URL(fileURLWithPath: "/usr/bin/env"))
        let last = chaos.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(chaos.status == 0, "scripts/chaos failed:\n\(chaos.stdout)\n\(chaos.stderr.suffix(3000))")
        #expect(last.hasSuffix(": 0 lost, 0 double, 0 misreported"), "\(last)")
        let kills = Int(last.split(separator: " ").first ?? "") ?? 0
        #expect(kills >= 25, "\(last)")
    }
}
