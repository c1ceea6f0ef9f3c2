import Foundation
import HTTPClient
import HTTPServer
import Synchronization
import TapToPayTesting
import Testing
import TestSupport
@testable import tapemu

/// `tapemu scenarios run`'s webhook relay: each cross forwards the gateway's webhooks to the
/// backend as it says — and a late one, which the gateway will not deliver again (the relay took
/// it at once), still at least once.
@Suite("The scenario run's webhook relay")
struct WebhookRelayTests {
    /// A backend that does not take the first `refusals` webhooks (503), then takes them.
    final class Reluctant: HTTPHandler, @unchecked Sendable {
        let refusals: Int
        let seen = Mutex(0)
        init(refusals: Int) { self.refusals = refusals }
        func handle(_ request: HTTPRequest) async -> HTTPResponse {
            let n = seen.withLock { $0 += 1; return $0 }
            return HTTPResponse(status: n <= refusals ? 503 : 200)
        }
    }

    @Test("a late webhook the backend does not take at first is forwarded again until it does, and counted (the grade waits for it)")
    func lateIsDeliveredAtLeastOnce() async throws {
        let backend = Reluctant(refusals: 2)
        let target = try HTTPServer(configuration: HTTPServerConfiguration(), handler: backend)
        let relay = WebhookRelay(target: target.url + "/webhooks/monei")
        let server = try HTTPServer(configuration: HTTPServerConfiguration(), handler: relay)
        let body = Array(#"{"id":"pay_1","orderId":"o-late","status":"SUCCEEDED"}"#.utf8)
        let taken = try await HTTPClient().send(HTTPClientRequest(
            method: "POST", url: server.url + WebhookRelay.callbackPath(.late),
            headers: [("Content-Type", "application/json")], body: body))
        #expect(taken.status == 200, "the gateway's delivery is taken at once")
        #expect(relay.log.count("o-late") == 0, "not forwarded yet: it is late")
        await relay.waitForwarded("o-late", count: 1, limit: .seconds(60))
        #expect(relay.log.count("o-late") == 1)
        #expect(backend.seen.withLock { $0 } == 3, "refused twice, then taken once")
        await server.stop()
        await target.stop()
    }
}
