import Foundation
import HTTPClient
import HTTPServer
import PaymentGateway
import TapToPayTesting

/// Stands between the gateway's webhook deliverer and the backend's --callback-url: each
/// payment's callbackUrl is `{relay}/relay/{cross}`; it forwards the webhook (its body and
/// MONEI-Signature untouched) as the cross says.
struct WebhookRelay: HTTPHandler {
    var target: String
    var client = HTTPClient(defaultTimeout: .seconds(60))
    /// What it has forwarded, per order.
    var log = RelayLog()

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let parts = request.path.split(separator: "/")
        guard request.method == "POST", parts.count == 2, parts[0] == "relay",
              let cross = WebhookCross(rawValue: parts[1] == "as-is" ? "" : String(parts[1])) else {
            return HTTPResponse(status: 404)
        }
        if cross == .neverDelivered { return HTTPResponse(status: 200) }
        let headers = request.headers.filter { ["monei-signature", "content-type"].contains($0.name.lowercased()) }
        if cross == .outOfOrder, let orderId = Self.orderId(request.body) {
            // The order's first webhook is held (answered 200 at once, so the gateway's delivery
            // goes on); its next is forwarded, then the held one.
            guard let held = log.hold(orderId, (headers, request.body)) else { return HTTPResponse(status: 200) }
            var status = 502
            for (h, body) in [(headers, request.body), held] {
                let r = try? await client.send(HTTPClientRequest(method: "POST", url: target, headers: h, body: body))
                status = r?.status ?? 502
                if (200..<300).contains(status) { log.forwarded(orderId) }
            }
            return HTTPResponse(status: status)
        }
        if cross == .late {
            // Taken now (the gateway's delivery is not held up), forwarded later — and, since the
            // gateway will not deliver it again, at least once: again until the backend takes it
            // (a late forward the loaded backend did not answer was lost, and a backend that waits
            // for the webhook graded pending).
            let (client, target, body, log) = (client, target, request.body, log)
            let orderId = Self.orderId(request.body)
            Task {
                let clock = ContinuousClock()
                try? await clock.sleep(for: Self.lateBy)
                for _ in 0..<Self.lateAttempts {
                    let r = try? await client.send(HTTPClientRequest(method: "POST", url: target, headers: headers, body: body))
                    if let r, (200..<300).contains(r.status) {
                        if let orderId { log.forwarded(orderId) }
                        return
                    }
                    try? await clock.sleep(for: Self.lateRetryPause)
                }
            }
            return HTTPResponse(status: 200)
        }
        var status = 502
        let orderId = Self.orderId(request.body)
        for _ in 0..<(cross == .duplicated ? 2 : 1) {
            let r = try? await client.send(HTTPClientRequest(method: "POST", url: target, headers: headers, body: request.body))
            status = r?.status ?? 502
            // Counted once the backend took it (an answer not 2xx: the gateway delivers it again).
            if let orderId, (200..<300).contains(status) { log.forwarded(orderId) }
        }
        return HTTPResponse(status: status)
    }

    /// Waits (at most `limit`) until `count` webhooks of `orderId` have been forwarded: a duplicate
    /// is graded once both copies reached the backend, not when the first made the order paid.
    func waitForwarded(_ orderId: String, count: Int, limit: Duration) async {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: limit)
        while log.count(orderId) < count, clock.now < deadline {
            try? await clock.sleep(for: .milliseconds(20))
        }
    }

    static func orderId(_ body: [UInt8]) -> String? {
        ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any])?["orderId"] as? String
    }

    /// How late a `webhook-late` webhook arrives.
    static let lateBy: Duration = WebhookCross.lateBy
    /// How many times a late webhook is forwarded until the backend takes it, a pause apart.
    static let lateAttempts = 60
    static let lateRetryPause: Duration = .seconds(1)

    static func callbackPath(_ cross: WebhookCross) -> String { "/relay/" + (cross == .asIs ? "as-is" : cross.rawValue) }

    /// The webhook a forger or a replayer sends for `orderId`: SUCCEEDED, signed with `key` at `timestamp`.
    static func fakeSucceeded(orderId: String, amount: Int, key: [UInt8], timestamp: Int64) -> (body: [UInt8], signature: String) {
        let doc: [String: Any] = ["id": "fake-\(orderId)", "orderId": orderId, "amount": amount, "currency": "EUR",
                                  "status": "SUCCEEDED", "statusCode": "E000", "livemode": false]
        let body = Array((try? JSONSerialization.data(withJSONObject: doc, options: [.sortedKeys])) ?? Data())
        return (body, WebhookSignature.header(body: body, secret: key, timestamp: timestamp))
    }
}

/// The relay's count of forwarded webhooks per order.
final class RelayLog: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]
    private var held: [String: (headers: [(name: String, value: String)], body: [UInt8])] = [:]
    func forwarded(_ orderId: String) { lock.withLock { counts[orderId, default: 0] += 1 } }
    /// Holds `webhook` when the order has none held (returns nil); else hands back the held one.
    func hold(_ orderId: String, _ webhook: (headers: [(name: String, value: String)], body: [UInt8]))
        -> (headers: [(name: String, value: String)], body: [UInt8])? {
        lock.withLock {
            if let first = held.removeValue(forKey: orderId) { return first }
            held[orderId] = webhook
            return nil
        }
    }
    func count(_ orderId: String) -> Int { lock.withLock { counts[orderId] ?? 0 } }
}
