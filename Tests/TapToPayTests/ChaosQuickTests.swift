import Foundation
import Testing

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
        let dir = CoreTempDir()
        let (status, out, err) = try await Self.run(["/usr/bin/env", "python3", script, "--quick",
                                                     "--tapemu", try CoreAPIProcessKillTests.binary().path,
                                                     "--data-dir", dir.path + "/chaos"], in: dir)
        let last = out.split(separator: "\n").last.map(String.init) ?? ""
        #expect(status == 0, "scripts/chaos failed:\n\(out)\n\(err.suffix(3000))")
        #expect(last.hasSuffix(": 0 lost, 0 double, 0 misreported"), "\(last)")
        let kills = Int(last.split(separator: " ").first ?? "") ?? 0
        #expect(kills >= 25, "\(last)")
    }

    static func run(_ argv: [String], in dir: CoreTempDir) async throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: argv[0])
        process.arguments = Array(argv.dropFirst())
        let out = dir.path + "/chaos-stdout", err = dir.path + "/chaos-stderr"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let outHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        let errHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            process.terminationHandler = { _ in c.resume() }
            do { try process.run() } catch {
                Issue.record("cannot start scripts/chaos: \(error)")
                process.terminationHandler = nil
                c.resume()
            }
        }
        try? outHandle.close()
        try? errHandle.close()
        return (process.terminationStatus, (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
                (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }
}
