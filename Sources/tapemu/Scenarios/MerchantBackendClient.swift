import Foundation
import HTTPClient
import TapToPayTesting

/// The one small contract `tapemu scenarios run` speaks with a merchant backend (docs/SCENARIOS.md,
/// "Prove your integration"), all JSON over HTTP under `--backend-check URL`:
///
/// - `PUT /tapemu/gateway` `{url, apiKey}` — only with the embedded gateway: the gateway the run
///   serves for this run (its MONEI REST at `url/v1`, GraphQL at `url/graphql`, webhooks signed
///   with `apiKey`). With `--gateway` the backend is configured by its operator and this is not sent.
/// - `POST /orders` `{orderId, amount, currency}` — the merchant's order, before the app takes payment.
/// - `POST /orders/{orderId}/app-result` `{outcome, error, paymentId}` — what the SDK told the
///   app: outcome `approved`, `declined`, `failed` (an error after which no payment occurred) or
///   `outcomeUnknown`; `error` the SDK's code. The answer may say `{"chargeAgain": true}`: the
///   terminal then takes a second payment for the order, under `{orderId}-again`.
///   CoreAPI scenarios (seeds 002/003) add `face: "coreapi"`, `terminalToken` (the terminal's
///   credential for the gateway's `GET /coreapi/v1/transactions` and `POST /coreapi/v1/reversal`),
///   `uniqueRef` (when the gateway answered) and `cardLastFour` (the sale's card, when read);
///   outcome `commError` is `onTransactionCommError`; the order's amount is the sale's.
/// - `GET /orders/{orderId}` → `{"state": "paid" | "not_paid" | "pending", "amount": N}` — the
///   backend's conclusion, asked until it is not `pending` or the settle wait ends.
struct MerchantBackendClient: Sendable {
    var baseURL: String
    /// How long one call may take: generous, since a loaded machine answers late, not wrong
    /// (a backend that does not answer at all is still a failure, after this long).
    var client = HTTPClient(defaultTimeout: .seconds(60))

    struct Conclusion: Sendable, Hashable {
        var state: String
        var amount: Int?
    }

    func announceGateway(url: String, apiKey: String) async throws {
        _ = try await send("PUT", "/tapemu/gateway", ["url": url, "apiKey": apiKey])
    }

    func createOrder(_ orderId: String, amount: Int, currency: String) async throws {
        _ = try await send("POST", "/orders", ["orderId": orderId, "amount": amount, "currency": currency])
    }

    /// Returns whether the backend asks for the customer to be charged again.
    func reportAppResult(_ orderId: String, outcome: String, error: String?, paymentId: String?,
                         core: CorePlay? = nil) async throws -> Bool {
        var body: [String: Any] = ["outcome": outcome, "error": error ?? NSNull(), "paymentId": paymentId ?? NSNull()]
        if let core {
            body["face"] = "coreapi"
            body["terminalToken"] = core.token
            body["uniqueRef"] = core.uniqueRef ?? NSNull()
            body["cardLastFour"] = core.cardLastFour ?? NSNull()
        }
        let answer = try await send("POST", "/orders/\(Self.pathComponent(orderId))/app-result", body)
        return (answer as? [String: Any])?["chargeAgain"] as? Bool ?? false
    }

    func conclusion(_ orderId: String) async throws -> Conclusion {
        let answer = try await send("GET", "/orders/\(Self.pathComponent(orderId))", nil)
        guard let doc = answer as? [String: Any], let state = doc["state"] as? String,
              ["paid", "not_paid", "pending"].contains(state) else {
            throw ScenarioRunError("GET /orders/\(orderId): not {\"state\": \"paid\"|\"not_paid\"|\"pending\", …}")
        }
        return Conclusion(state: state, amount: (doc["amount"] as? NSNumber)?.intValue)
    }

    /// Asks for the conclusion until it is not pending or `settle` has passed — `settle` of the
    /// backend's time: whatever one answer takes beyond `promptAnswer` (a machine so loaded that
    /// the backend answers late, and its recovery job runs late with it) moves the deadline on by
    /// as much, so a slow machine makes the wait longer, not the grade wrong. A backend that
    /// answers "pending" promptly meets the deadline after `settle`.
    func settledConclusion(_ orderId: String, settle: Duration, poll: Duration = .milliseconds(100),
                           promptAnswer: Duration = .milliseconds(50)) async throws -> Conclusion {
        let clock = ContinuousClock()
        var deadline = clock.now.advanced(by: settle)
        while true {
            let asked = clock.now
            let c = try await conclusion(orderId)
            let took = clock.now - asked
            if took > promptAnswer { deadline = deadline.advanced(by: took - promptAnswer) }
            if c.state != "pending" || clock.now >= deadline { return c }
            try await clock.sleep(for: poll)
        }
    }

    static func pathComponent(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? s
    }

    private func send(_ method: String, _ path: String, _ body: [String: Any]?) async throws -> Any? {
        let bytes = try body.map { Array(try JSONSerialization.data(withJSONObject: $0)) } ?? []
        let request = HTTPClientRequest(method: method, url: baseURL + path,
                                        headers: body == nil ? [] : [("Content-Type", "application/json")], body: bytes)
        let response: HTTPClientResponse
        do {
            response = try await client.send(request)
        } catch {
            throw ScenarioRunError("\(method) \(path): the backend did not answer (\(error))")
        }
        guard (200...299).contains(response.status) else {
            throw ScenarioRunError("\(method) \(path): HTTP \(response.status)")
        }
        if response.body.isEmpty { return nil }
        return try? JSONSerialization.jsonObject(with: Data(response.body))
    }
}
