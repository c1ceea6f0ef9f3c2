import Foundation
import Testing
import CoreAPI
import PaymentFlow
import TestSupport
import TapToPayTesting
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
        #expect(rows.allSatisfy { row in
            ["seed 000 #", "seed 002 #", "seed 003 #"].contains { (row["seed"] as? String)?.hasPrefix($0) == true }
        })
        let sdk = Set(rows.compactMap { $0["sdk"] as? String })
        for code in ["approved", "declined", "notSupported", "locationDenied", "termsDeclined", "invalidArgument", "tokenExpired",
                     "invalidToken", "notPrepared", "busy", "cancelled", "sdkUpgradeRequired", "outcomeUnknown", "paymentFailed.unknown",
                     "paymentFailed.cardDeclined", "paymentFailed.readerNotReady", "paymentFailed.locationTimeout"] {
            #expect(sdk.contains(code), "no scenario where the SDK answers \(code)")
        }
        let seeds = rows.compactMap { $0["seed"] as? String }.joined(separator: "\n")
        for cause in ["a connection error", "a server error", "a card read error", "a PIN entry error", "a lost reader session",
                      "not a clear approval or decline", "a cancelled task"] {
            #expect(seeds.contains(cause), "no scenario for seed 000's unclear cause '\(cause)'")
        }
        // Seeds 002/003: each kind of error, the recovery's three answers, and 003's two checks.
        let core = rows.filter { $0["face"] as? String == "coreapi" }
        let coreSDK = core.compactMap { $0["sdk"] as? String }
        for callback in ["onError.", "onTransactionCommError.", "onDeviceError."] {
            #expect(coreSDK.contains { $0.contains(callback) }, "no CoreAPI scenario calls \(callback)")
        }
        let coreSeeds = core.compactMap { $0["seed"] as? String }.joined(separator: "\n")
        for step in ["step 3: no transaction", "step 3: `code` not `A`", "step 4: if we authorized the sale, reverse it",
                     "seed 003 #communication-errors: reverse only when the card suffix matches",
                     "seed 003 #communication-errors: reverse only when the amount matches"] {
            #expect(coreSeeds.contains(step), "no CoreAPI scenario for '\(step)'")
        }
        // The human list says the same rows.
        let text = await runCLI(["scenarios", "list"])
        #expect(text.status == 0 && text.out.contains("\(names.count) scenarios"))
    }

    static func played(_ truth: Scenario.Truth, sdk: Scenario.SDKOutcome, amount: Int = 1000) -> PlayedPayment {
        PlayedPayment(orderId: "o-1", amount: amount, sdk: sdk, paymentId: nil,
                      submitted: truth != .nothingSent,
                      charged: truth == .charged, recorded: [.charged, .declinedInLedger, .refunded].contains(truth),
                      refunded: truth == .refunded)
    }

    struct GradeCase: Sendable, CustomTestStringConvertible {
        var scenario: String
        var state: String
        var amount: Int? = nil
        var againCharged: Bool? = nil
        /// Support's settle window had passed when the conclusion was read.
        var windowPassed = false
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
        GradeCase(scenario: "unknown-no-answer", state: "pending", windowPassed: true, failure: "step 4"),
        GradeCase(scenario: "unknown-card-read-error", state: "pending", windowPassed: true, failure: "no payment was received"),
        GradeCase(scenario: "unknown-no-answer", state: "not_paid", windowPassed: true, failure: nil),
        GradeCase(scenario: "unknown-lost-answer-approved", state: "paid", amount: 1000, windowPassed: true, failure: nil),
        GradeCase(scenario: "unknown-no-answer", state: "paid", failure: "no charge holds it"),
        GradeCase(scenario: "unknown-lost-answer-declined", state: "pending", failure: "step 3"),
        GradeCase(scenario: "unknown-lost-answer-declined", state: "not_paid", failure: nil),
        GradeCase(scenario: "declined-insufficient-funds", state: "paid", failure: "no charge holds it"),
        GradeCase(scenario: "failed-card-declined", state: "pending", failure: "no payment occurred"),
        GradeCase(scenario: "cancelled", state: "not_paid", failure: nil),
        GradeCase(scenario: "approved-then-refunded+webhook-out-of-order", state: "paid", amount: 1000, failure: "refunded in full"),
        GradeCase(scenario: "approved-then-refunded+webhook-out-of-order", state: "pending", failure: "step 3"),
        GradeCase(scenario: "approved-then-refunded+webhook-out-of-order", state: "not_paid", failure: nil),
        GradeCase(scenario: "approved-then-refunded", state: "not_paid", failure: nil),
    ])
    func grade(_ c: GradeCase) throws {
        let scenario = try #require(ScenarioCatalogue.named(c.scenario))
        let played = Self.played(scenario.truth, sdk: scenario.sdk)
        let again = c.againCharged.map { Self.played($0 ? .charged : .nothingSent, sdk: .approved) }
        let failure = ScenarioGrader.grade(scenario, played: played, again: again,
                                           conclusion: .init(state: c.state, amount: c.amount), supportWindowPassed: c.windowPassed)
        if let expected = c.failure {
            #expect(failure?.contains(expected) == true, "\(failure ?? "passed")")
        } else {
            #expect(failure == nil)
        }
    }

    struct CoreGradeCase: Sendable, CustomTestStringConvertible {
        var scenario: String
        /// This sale's code once the backend settled (nil: no transaction).
        var code: String?
        /// The earlier sale's code once the backend settled.
        var priorCode: String? = nil
        var state: String
        var failure: String?
        var testDescription: String { "\(scenario): sale \(code ?? "none"), earlier \(priorCode ?? "-") → \(state): \(failure ?? "pass")" }
    }

    static func coreSale(_ code: String, amount: Int = 1000, card: String = "476173******0010", ref: String) -> CoreTransactionSummary {
        CoreTransactionSummary(code: code, uniqueRef: ref, amount: amount, currency: "EUR", cardNumber: card, orderId: "o-1",
                               type: "sale", date: Date(timeIntervalSince1970: 0))
    }

    @Test("the CoreAPI grade (seeds 002/003): the conclusion against the order's sales after the backend's recovery", arguments: [
        CoreGradeCase(scenario: "coreapi-approved", code: "A", state: "paid", failure: nil),
        CoreGradeCase(scenario: "coreapi-approved", code: "A", state: "not_paid", failure: "the sale stands"),
        CoreGradeCase(scenario: "coreapi-comm-error-lost-answer-approved", code: "C", state: "not_paid", failure: nil),
        CoreGradeCase(scenario: "coreapi-comm-error-lost-answer-approved", code: "A", state: "not_paid", failure: "was not reversed"),
        CoreGradeCase(scenario: "coreapi-comm-error-lost-answer-approved", code: "A", state: "paid", failure: "step 4, reverse it"),
        CoreGradeCase(scenario: "coreapi-comm-error-lost-answer-approved", code: "C", state: "paid", failure: "no standing sale"),
        CoreGradeCase(scenario: "coreapi-comm-error-lost-answer-approved", code: "A", state: "pending", failure: "answers at once"),
        CoreGradeCase(scenario: "coreapi-comm-error-no-answer", code: nil, state: "not_paid", failure: nil),
        CoreGradeCase(scenario: "coreapi-comm-error-no-answer", code: nil, state: "pending", failure: "no transaction"),
        CoreGradeCase(scenario: "coreapi-comm-error-other-card", code: nil, priorCode: "A", state: "not_paid", failure: nil),
        CoreGradeCase(scenario: "coreapi-comm-error-other-card", code: nil, priorCode: "C", state: "not_paid", failure: "seed 003"),
        CoreGradeCase(scenario: "coreapi-comm-error-other-amount", code: nil, priorCode: "C", state: "not_paid", failure: "amount and card suffix"),
        CoreGradeCase(scenario: "coreapi-transaction-error-card-declined", code: nil, state: "not_paid", failure: nil),
        CoreGradeCase(scenario: "coreapi-transaction-error-card-declined", code: nil, state: "pending", failure: "pending"),
    ])
    func coreGrade(_ c: CoreGradeCase) throws {
        let scenario = try #require(ScenarioCatalogue.named(c.scenario))
        var played = Self.played(scenario.truth, sdk: scenario.sdk)
        let prior = scenario.setup.priorSale.map { p in
            Self.coreSale("A", amount: p.amount, card: p.card == "visa-qvsdc" ? "476173******0010" : "541333******0434", ref: "prior")
        }
        played.core = CorePlay(token: "t", cardLastFour: "0010", uniqueRef: nil, prior: prior)
        var final = CoreLedgerState(this: c.code.map { Self.coreSale($0, ref: "this") })
        if let pc = c.priorCode, let prior { final.prior = Self.coreSale(pc, amount: prior.amount, card: prior.cardNumber!, ref: "prior") }
        let failure = ScenarioGrader.gradeCoreAPI(scenario, played: played, final: final, conclusion: .init(state: c.state, amount: 1000))
        if let expected = c.failure {
            #expect(failure?.contains(expected) == true, "\(failure ?? "passed")")
        } else {
            #expect(failure == nil, "\(failure ?? "")")
        }
    }

    @Test("a scenario whose payment did not go as the catalogue says is a failure, not a pass")
    func didNotHappen() throws {
        let scenario = try #require(ScenarioCatalogue.named("unknown-lost-answer-approved"))
        let failure = ScenarioGrader.grade(scenario, played: Self.played(.charged, sdk: .approved), again: nil,
                                           conclusion: .init(state: "paid", amount: 1000))
        #expect(failure?.contains("did not happen") == true)
    }

    @Test("a scenario that did not happen names what the SDK got under its answer (the gateway's error), on both faces")
    func didNotHappenNamesTheError() throws {
        let cause = "connectionLost: the connection was closed before an answer: Recv failure"
        let core = try #require(ScenarioCatalogue.named("coreapi-approved"))
        var played = Self.played(.nothingRecorded, sdk: .error("onTransactionCommError.networkError"))
        played.detail = "onTransactionCommError.networkError: \(cause); the outcome of order o-1 is unknown"
        played.core = CorePlay(token: "t", cardLastFour: "0010", uniqueRef: nil, prior: nil)
        let coreFailure = ScenarioGrader.gradeCoreAPI(core, played: played, final: CoreLedgerState(),
                                                      conclusion: .init(state: "not_paid", amount: 1000))
        #expect(coreFailure?.contains("did not happen") == true && coreFailure?.contains(cause) == true, "\(coreFailure ?? "passed")")
        let monei = try #require(ScenarioCatalogue.named("approved"))
        var unclear = Self.played(.nothingRecorded, sdk: .error("outcomeUnknown"))
        unclear.detail = cause
        let moneiFailure = ScenarioGrader.grade(monei, played: unclear, again: nil, conclusion: .init(state: "not_paid", amount: nil))
        #expect(moneiFailure?.contains("outcomeUnknown (\(cause))") == true, "\(moneiFailure ?? "passed")")
        // A long one is cut.
        unclear.detail = String(repeating: "x", count: 5000)
        let cut = try #require(ScenarioGrader.grade(monei, played: unclear, again: nil, conclusion: .init(state: "not_paid", amount: nil)))
        #expect(cut.count < 1000 && cut.contains("…"))
    }

    @Test("JUnit text escapes what XML cannot hold as it is")
    func junitEscapes() {
        #expect(ScenarioReport.escape("a<b & \"c\"\n\u{1}") == "a&lt;b &amp; &quot;c&quot;&#10;?")
    }

    static let repository = repositoryRoot
    static var python: String? { moneiPython }

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
