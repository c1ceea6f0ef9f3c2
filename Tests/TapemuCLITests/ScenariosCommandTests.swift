import Foundation
import Testing
import TestSupport
@testable import tapemu

@Suite("tapemu scenarios: the catalogue, the grading rule, and the reference backend with its mistaken variants")
struct ScenariosCommandTests {
    @Test("scenarios list --json names every error of seed 000's table, each failure code, declined and each unclear cause, with its seed reference")
    func catalogueCoversSeed000() async throws {
        let r = await runCLI(["scenarios", "list", "--json"])
        #expect(r.status == 0)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [[String: Any]])
        let names = rows.compactMap { $0["name"] as? String }
        #expect(Set(names).count == names.count, "names are unique")
        #expect(rows.allSatisfy { ($0["seed"] as? String)?.hasPrefix("seed 000 #") == true })
        let sdk = Set(rows.compactMap { $0["sdk"] as? String })
        for code in ["approved", "declined", "notSupported", "locationDenied", "termsDeclined", "invalidArgument", "tokenExpired",
                     "invalidToken", "notPrepared", "cancelled", "sdkUpgradeRequired", "outcomeUnknown",
                     "paymentFailed.cardDeclined", "paymentFailed.readerNotReady", "paymentFailed.locationTimeout"] {
            #expect(sdk.contains(code), "no scenario where the SDK answers \(code)")
        }
        let seeds = rows.compactMap { $0["seed"] as? String }.joined(separator: "\n")
        for cause in ["a connection error", "a server error", "a card read error", "a PIN entry error", "a lost reader session",
                      "not a clear approval or decline", "a cancelled task"] {
            #expect(seeds.contains(cause), "no scenario for seed 000's unclear cause '\(cause)'")
        }
        // The human list says the same rows.
        let text = await runCLI(["scenarios", "list"])
        #expect(text.status == 0 && text.out.contains("\(names.count) scenarios"))
    }

    static func played(_ truth: Scenario.Truth, sdk: Scenario.SDKOutcome, amount: Int = 1000) -> PlayedPayment {
        PlayedPayment(orderId: "o-1", amount: amount, sdk: sdk, paymentId: nil,
                      submitted: truth == .charged || truth == .declinedInLedger || truth == .nothingRecorded,
                      charged: truth == .charged, recorded: truth == .charged || truth == .declinedInLedger)
    }

    struct GradeCase: Sendable, CustomTestStringConvertible {
        var scenario: String
        var state: String
        var amount: Int? = nil
        var againCharged: Bool? = nil
        /// A piece of the failure, or nil for a pass.
        var failure: String?
        var testDescription: String { "\(scenario) → \(state)\(againCharged == true ? " + charged again" : ""): \(failure ?? "pass")" }
    }

    @Test("the grade: each wrong conclusion fails with the step that was missed, each right one passes", arguments: [
        GradeCase(scenario: "approved", state: "paid", amount: 1000, failure: nil),
        GradeCase(scenario: "approved", state: "paid", amount: 999, failure: "says paid 999"),
        GradeCase(scenario: "approved", state: "pending", failure: "step 2"),
        GradeCase(scenario: "unknown-lost-answer-approved", state: "not_paid", failure: "the customer would pay twice"),
        GradeCase(scenario: "unknown-lost-answer-approved", state: "not_paid", againCharged: true, failure: "a second charge"),
        GradeCase(scenario: "unknown-no-answer", state: "not_paid", againCharged: true, failure: nil),
        GradeCase(scenario: "unknown-no-answer", state: "pending", failure: nil),
        GradeCase(scenario: "unknown-no-answer", state: "paid", failure: "no charge holds it"),
        GradeCase(scenario: "unknown-lost-answer-declined", state: "pending", failure: "step 3"),
        GradeCase(scenario: "unknown-lost-answer-declined", state: "not_paid", failure: nil),
        GradeCase(scenario: "declined-insufficient-funds", state: "paid", failure: "no charge holds it"),
        GradeCase(scenario: "failed-card-declined", state: "pending", failure: "no payment occurred"),
        GradeCase(scenario: "cancelled", state: "not_paid", failure: nil),
    ])
    func grade(_ c: GradeCase) throws {
        let scenario = try #require(ScenarioCatalogue.named(c.scenario))
        let played = Self.played(scenario.truth, sdk: scenario.sdk)
        let again = c.againCharged.map { Self.played($0 ? .charged : .nothingSent, sdk: .approved) }
        let failure = ScenarioGrader.grade(scenario, played: played, again: again,
                                           conclusion: .init(state: c.state, amount: c.amount))
        if let expected = c.failure {
            #expect(failure?.contains(expected) == true, "\(failure ?? "passed")")
        } else {
            #expect(failure == nil)
        }
    }

    @Test("a scenario whose payment did not go as the catalogue says is a failure, not a pass")
    func didNotHappen() throws {
        let scenario = try #require(ScenarioCatalogue.named("unknown-lost-answer-approved"))
        let failure = ScenarioGrader.grade(scenario, played: Self.played(.charged, sdk: .approved), again: nil,
                                           conclusion: .init(state: "paid", amount: 1000))
        #expect(failure?.contains("did not happen") == true)
    }

    @Test("JUnit text escapes what XML cannot hold as it is")
    func junitEscapes() {
        #expect(ScenarioReport.escape("a<b & \"c\"\n\u{1}") == "a&lt;b &amp; &quot;c&quot;&#10;?")
    }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static var python: String? {
        if let p = ProcessInfo.processInfo.environment["TAPEMU_MONEI_PYTHON"], !p.isEmpty { return p }
        let venv = repository.appendingPathComponent(".build/monei-venv/bin/python").path
        return FileManager.default.isExecutableFile(atPath: venv) ? venv : nil
    }

    @Test("the reference backend passes every scenario over the embedded gateway; each mistaken variant fails exactly its scenarios (JUnit read by junitparser)",
          .enabled(if: python != nil, "run scripts/dev setup (installs MONEI's SDK and junitparser in .build/monei-venv)"),
          .timeLimit(.minutes(10)))
    func referenceBackendAndVariants() throws {
        let python = try #require(Self.python)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Self.repository.appendingPathComponent("examples/merchant-backend/check.py").path,
                             "--tapemu", try tapemuExecutable().path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        print(output)
        #expect(process.terminationStatus == 0, "check.py failed:\n\(output)")
        #expect(output.contains("scenario kit: ") && output.contains(" 0 failed"), "\(output)")
    }
}
