public import HTTPClient
public import PaymentGateway
import Synchronization
import Timing

/// ``WebhookTransport`` over ``HTTPClient`` (libcurl): one `POST` per attempt on a fresh
/// connection, the receiver's status returned whatever it is; a request that got no status
/// (refused, reset, timed out, cut short, not an `http(s)://` URL) throws the client's typed
/// ``HTTPClientError`` (its description names the kind, never the body).
public struct HTTPWebhookTransport: WebhookTransport {
    public let client: HTTPClient

    public init(client: HTTPClient = HTTPClient()) {
        self.client = client
    }

    /// How much of a receiver's answer is kept: its status is all delivery needs, and a receiver
    /// answering without end (within the attempt's timeout) must not fill the gateway's memory.
    public static let maxAnswerBytes = 64 << 10

    public func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int {
        let request = HTTPClientRequest(method: "POST", url: url, headers: headers.map { (name: $0.0, value: $0.1) },
                                        body: body, timeout: timeout, maxResponseBodyBytes: Self.maxAnswerBytes)
        let response = try await client.send(request)
        return response.status
    }
}

extension GatewayService {
    /// A deliverer of this service's webhook outbox over HTTP (``HTTPWebhookTransport``).
    /// The caller runs ``WebhookDeliverer/run()`` in a task (``runWebhookDelivery(_:)``) and
    /// cancels it to stop; `POST /admin/webhook-faults` changes its faults while it runs.
    public func makeWebhookDeliverer(policy: WebhookRetryPolicy = .standard, timeout: Duration = .seconds(10),
                                     pollInterval: Duration = .seconds(1),
                                     faults: WebhookFaults = .none,
                                     onAttempt: (@Sendable (Webhook, WebhookAttemptRecord) -> Void)? = nil) -> WebhookDeliverer {
        let deliverer = WebhookDeliverer(ledger: gateway.ledger, transport: HTTPWebhookTransport(), policy: policy,
                                         timeout: timeout, pollInterval: pollInterval, faults: faults,
                                         onAttempt: onAttempt)
        webhookDeliverer.withLock { $0 = deliverer }
        return deliverer
    }

    /// Runs `deliverer` until the task is cancelled, its ledger work on the ledger's own threads
    /// (``Timing/BlockingExecutor/ledger``), never on the cooperative pool.
    public func runWebhookDelivery(_ deliverer: WebhookDeliverer) async {
        await BlockingExecutor.ledger.run {
            await deliverer.run()
        }
    }
}
