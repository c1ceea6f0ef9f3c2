import Foundation
import HTTPClient
import PaymentGateway
import TapToPayTesting

/// One graded scenario: what the terminal met, the truth, and what the backend concluded.
struct ScenarioGrade: Sendable {
    var scenario: Scenario
    var orderId: String
    var played: PlayedPayment?
    /// The second payment the backend asked for (`chargeAgain`), if any.
    var again: PlayedPayment?
    var conclusion: MerchantBackendClient.Conclusion?
    /// Why it failed (the seed's step that was missed), or nil when it passed.
    var failure: String?
    /// Set when the scenario was not played (it needs a served gateway's test controls, or the API key).
    var skipped: String?
    var duration: Duration

    var passed: Bool { failure == nil && skipped == nil }
}

/// The grading rule, one place: the backend's conclusion against the truth.
enum ScenarioGrader {
    /// `supportWindowPassed`: support's settle window had passed since the app's report when the
    /// conclusion was read (``Scenario/pendingRule``).
    static func grade(_ scenario: Scenario, played: PlayedPayment, again: PlayedPayment?,
                      conclusion: MerchantBackendClient.Conclusion, supportWindowPassed: Bool = false) -> String? {
        // The scenario must have happened as the catalogue says, or the grade means nothing.
        if played.sdk != scenario.sdk {
            return "the scenario did not happen: the SDK answered \(played.sdk)\(said(played)), the catalogue says \(scenario.sdk)"
        }
        if played.truth != scenario.truth {
            return "the scenario did not happen: the truth is \(played.truth.rawValue), the catalogue says \(scenario.truth.rawValue)"
        }
        if played.charged, again?.charged == true {
            return "a second charge: the backend asked to charge again after \(played.sdk) and order \(played.orderId) was already charged (seed 000 #outcome-unknown: do not retry, do not charge again with a new orderId)"
        }
        switch (played.charged, conclusion.state) {
        case (false, "paid") where played.refunded:
            return "the backend calls order \(played.orderId) paid, but its sale was refunded in full: the payment's latest state (REFUNDED) holds, whatever order its webhooks arrive in (step 2; step 3's charges query says REFUNDED)"
        case (false, "paid"):
            return "the backend calls order \(played.orderId) paid, but no charge holds it (\(played.truth.rawValue)): trust only the signed webhook or the charges query"
        case (true, "not_paid"):
            return "a charge the backend calls not paid: the customer would pay twice (seed 000 #outcome-unknown: the card can be charged; steps 2–3 find it)"
        case (true, "pending"):
            return "still pending after the settle wait, but the seed's steps reach an answer: step 2 (the signed webhook) or step 3 (GraphQL charges by orderId) shows SUCCEEDED"
        case (false, "pending") where scenario.pendingRule != nil && supportWindowPassed:
            return "still pending after support's settle window has passed: seed 000 step 4 (contact support with the orderId) answers that no payment was received — the order is not paid"
        case (false, "pending") where !scenario.acceptedStates.contains("pending"):
            let step = played.recorded ? "step 3 (GraphQL charges by orderId) shows the payment FAILED"
                : "the SDK's \(played.sdk) means no payment occurred"
            return "still pending after the settle wait, but the seed reaches an answer: \(step)"
        case (true, "paid"):
            if let amount = conclusion.amount, amount != played.amount {
                return "the backend says paid \(amount), the charge is \(played.amount)"
            }
            return nil
        default:
            return nil
        }
    }
}

extension ScenarioGrader {
    /// What the SDK said under an answer the catalogue did not expect — the error it got, which a
    /// reader needs to find the cause — as ` (…)`, at most ``detailLimit`` characters; empty when
    /// it said nothing more.
    static func said(_ played: PlayedPayment) -> String {
        guard let detail = played.detail, !detail.isEmpty else { return "" }
        return " (" + (detail.count > detailLimit ? String(detail.prefix(detailLimit)) + "…" : detail) + ")"
    }
    static let detailLimit = 600

    /// The CoreAPI face's grade (seeds 002/003): the conclusion against the order's sales once
    /// the backend has settled — its recovery may have reversed one.
    static func gradeCoreAPI(_ scenario: Scenario, played: PlayedPayment, final: CoreLedgerState,
                             conclusion: MerchantBackendClient.Conclusion) -> String? {
        if played.sdk != scenario.sdk {
            return "the scenario did not happen: the SDK called \(played.sdk)\(said(played)), the catalogue says \(scenario.sdk)"
        }
        if played.truth != scenario.truth {
            return "the scenario did not happen: the truth is \(played.truth.rawValue), the catalogue says \(scenario.truth.rawValue)"
        }
        let approved = TransactionCode.approved.rawValue
        if let prior = played.core?.prior, prior.code == approved, final.prior?.code != approved {
            let card = prior.cardNumber.map { "card …\($0.suffix(4))" } ?? "another card"
            return "the backend reversed an earlier sale of order \(played.orderId) (\(prior.amount), \(card)), not this sale (\(played.amount), card …\(played.core?.cardLastFour ?? "?")): seed 003 reverses only a transaction whose amount and card suffix are the sale's"
        }
        let standing = final.this?.code == approved
        let now = final.this.map { "code \($0.code)" } ?? "no transaction"
        switch conclusion.state {
        case "pending":
            return "still pending after the settle wait, but the transaction list answers at once (seed 002 step 3: \(now))"
        case "paid":
            if !standing {
                return "the backend calls order \(played.orderId) paid, but no standing sale holds it (\(now))"
            }
            if scenario.expectsReversal {
                return "the sale authorised after the communication error still stands: seed 002 step 4, reverse it (CoreReversal with its uniqueRef)"
            }
            if let amount = conclusion.amount, amount != played.amount {
                return "the backend says paid \(amount), the sale is \(played.amount)"
            }
            return nil
        default:
            if standing {
                return scenario.expectsReversal
                    ? "a charge the backend calls not paid: the sale authorised after the communication error was not reversed (seed 002 steps 3–4: code A, reverse it)"
                    : "a charge the backend calls not paid: the sale stands (code A)"
            }
            return nil
        }
    }
}

/// Runs scenarios against a backend: each payment played, reported, settled and graded.
struct ScenarioRunner: Sendable {
    var player: ScenarioPlayer
    var backend: MerchantBackendClient
    var settle: Duration
    /// Why the scenarios that need a served gateway's test controls (``Scenario/needsTestControls``)
    /// are skipped: nil when they are played (the embedded gateway, or one served with `--test-controls`).
    var withoutTestControls: String? = nil
    var runId: String
    /// The merchant API key, when the run knows it (the embedded gateway's; else --api-key).
    var apiKey: String?
    /// The backend's webhook URL (forged and stale webhooks go there).
    var callbackUrl: String
    /// The relay's base URL (each payment's callbackUrl is `{relay}/relay/{cross}`).
    var relayURL: String
    /// The relay itself (what it has forwarded).
    var relay: WebhookRelay? = nil
    /// Support's settle window at the gateway (``Scenario/pendingRule``).
    var supportWindow: Duration = .seconds(60)

    func run(_ scenario: Scenario, repetition: Int, terminal: Int) async -> ScenarioGrade {
        let clock = ContinuousClock()
        let start = clock.now
        let orderId = "\(runId)-\(scenario.name)-t\(terminal)-r\(repetition)"
        var grade = ScenarioGrade(scenario: scenario, orderId: orderId, duration: .zero)
        if scenario.needsTestControls, let reason = withoutTestControls {
            grade.skipped = reason
            return grade
        }
        if scenario.needsAPIKey && apiKey == nil {
            grade.skipped = "needs the merchant API key (a webhook signed with it)"
            return grade
        }
        do {
            try await backend.createOrder(orderId, amount: scenario.setup.amount, currency: "EUR")
            var player = self.player
            player.callbackUrl = relayURL + WebhookRelay.callbackPath(scenario.webhook)
            // The terminal's own point of sale: a served gateway lets it act only on its own orders.
            let pos = "\(runId)-t\(terminal)"
            // The MONEI face's payment as the library played it (its attempt, for the settled truth).
            var payment: ScenarioPayment?
            var played: PlayedPayment
            if scenario.face == .monei {
                let p = try await player.play(scenario, orderId: orderId, terminal: pos)
                (payment, played) = (p, PlayedPayment(p))
            } else {
                played = try await player.playCoreAPI(scenario, orderId: orderId, terminal: pos)
            }
            grade.played = played
            try await sendFakeWebhook(scenario.webhook, orderId: orderId, amount: played.amount)
            let reported = clock.now
            let again = try await backend.reportAppResult(
                orderId, outcome: played.sdk.appOutcome,
                error: { if case .error(let code) = played.sdk { return code } else { return nil } }(),
                paymentId: played.paymentId, core: played.core)
            if again && scenario.face == .monei {
                var plain = Scenario.Setup.plain
                plain.amount = played.amount > 0 ? played.amount : 1000
                var second = scenario
                second.setup = plain
                second.webhook = .asIs
                grade.again = PlayedPayment(try await player.play(second, orderId: orderId + "-again", terminal: pos))
            }
            var conclusion = try await backend.settledConclusion(orderId, settle: settle)
            // A late webhook not in yet: the backend waiting for it does what step 2 says, so it
            // is graded once the webhook reached it (a pending read before that says nothing).
            let lateAndPending = scenario.webhook == .late && conclusion.state == "pending"
            if scenario.webhooksBeforeGrade > 1 || lateAndPending, let relay {
                // Every webhook of the order delivered (both copies of a duplicate, a refund's
                // after the sale's, in whatever order the cross sends them), then the conclusion again.
                // The gateway delivers every webhook (at least once): on a loaded machine its queue
                // is long, and the wait with it — bounded well past --settle (a refund's webhook
                // 10 s behind made approved-then-refunded graded paid under load).
                await relay.waitForwarded(orderId, count: scenario.webhooksBeforeGrade, limit: max(settle, Self.deliveryWait))
                conclusion = try await backend.conclusion(orderId)
            }
            grade.conclusion = conclusion
            if let payment, payment.sdk == .error("outcomeUnknown"), payment.submitted {
                // The truth once the gateway is done with the request (a served one may have
                // recorded it after the SDK gave up): read again now the backend has concluded.
                let settled = try await player.settledTruth(of: payment, terminal: pos)
                (played.charged, played.recorded) = (settled.charged, settled.recorded)
                grade.played = played
            }
            if let core = played.core {
                let final = try await player.coreLedgerState(orderId, amount: played.amount, play: core)
                grade.failure = ScenarioGrader.gradeCoreAPI(scenario, played: played, final: final, conclusion: conclusion)
            } else {
                grade.failure = ScenarioGrader.grade(scenario, played: played, again: grade.again, conclusion: conclusion,
                                                     supportWindowPassed: clock.now - reported >= supportWindow)
            }
        } catch {
            grade.failure = "\(error)"
        }
        grade.duration = clock.now - start
        return grade
    }
}

extension ScenarioRunner {
    /// How long a grade waits for the gateway to deliver an order's webhooks (at least once).
    static let deliveryWait: Duration = .seconds(180)

    /// The forged or replayed webhook of a cross, sent to the backend as a gateway would send it.
    func sendFakeWebhook(_ cross: WebhookCross, orderId: String, amount: Int) async throws {
        let now = Int64(Date().timeIntervalSince1970)
        let fake: (body: [UInt8], signature: String)
        switch cross {
        case .forged:
            // Signed, but not with the API key: a key of the same shape, one character off.
            let key = apiKey ?? "tpk_test_forged"
            fake = WebhookRelay.fakeSucceeded(orderId: orderId, amount: amount, key: Array((key + "x").utf8), timestamp: now)
        case .stale:
            guard let apiKey else { return }
            fake = WebhookRelay.fakeSucceeded(orderId: orderId, amount: amount, key: Array(apiKey.utf8), timestamp: now - 600)
        case .asIs, .neverDelivered, .duplicated, .late, .outOfOrder:
            return
        }
        // The backend's answer is its own business (it should refuse with 401): only its conclusion is graded.
        _ = try? await HTTPClient(defaultTimeout: .seconds(10)).send(HTTPClientRequest(
            method: "POST", url: callbackUrl,
            headers: [("Content-Type", "application/json"), ("MONEI-Signature", fake.signature)], body: fake.body))
    }
}
