import Foundation
import Testing
import TestSupport

/// MONEI's official Python SDK, unpatched, against a real `tapemu gateway serve`
/// (Tests/MoneiSDKConformance/conformance.py): every call a card-present merchant makes, every
/// webhook kind verified by the SDK's `verify_signature`, the seed's GraphQL `charges` query,
/// and every field and value of the SDK's models served or ruled out.
///
/// Runs with the Python of `TAPEMU_MONEI_PYTHON` (`scripts/dev test` and `scripts/dev setup`
/// install the pinned SDK in .build/monei-venv and set it), else .build/monei-venv's when it is
/// there; skipped only when neither is (a plain `swift test` on a machine never set up).
@Suite("MONEI's official SDK against gateway serve", .serialized)
struct MoneiSDKConformanceTests {
    @Test("conformance.py passes: the SDK's payments.get/refund/cancel/capture/create, errors, webhooks and GraphQL",
          .enabled(if: moneiPython != nil, "run scripts/dev setup (installs MONEI's SDK in .build/monei-venv)"),
          .timeLimit(.minutes(10)))
    func sdkConformance() throws {
        let python = try #require(moneiPython)
        #expect(FileManager.default.isExecutableFile(atPath: python), "TAPEMU_MONEI_PYTHON=\(python) is not an executable")
        let report = FileManager.default.temporaryDirectory.appendingPathComponent("monei-sdk-\(UUID().uuidString).xml")
        defer { try? FileManager.default.removeItem(at: report) }
        let run = try runToEnd(python, [repositoryRoot.appendingPathComponent("Tests/MoneiSDKConformance/conformance.py").path,
                                        "--tapemu", try tapemuExecutable().path, "--junit", report.path],
                               mergingStandardError: true)
        let output = run.stdout
        print(output)
        let closing = output.split(separator: "\n").last { $0.hasPrefix("MONEI SDK conformance") }
        #expect(run.status == 0, "conformance.py failed:\n\(output)")
        #expect(closing?.contains(" 0 failed") == true, "no closing line with 0 failed:\n\(output)")
        // The JUnit report (junitparser) lists every check.
        let xml = try String(contentsOf: report, encoding: .utf8)
        #expect(xml.contains("MONEI SDK conformance") && xml.contains("verify_signature"))
    }
}
