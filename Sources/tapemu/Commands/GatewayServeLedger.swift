import Foundation
import HTTPClient
import PaymentGateway
import PostgresClient
import PostgresLedger

/// `gateway serve --ledger postgres://…`: the gateway over a PostgreSQL ledger several servers
/// share, each delivering the shared webhook outbox (claims and leases keep one server on
/// each webhook at a time; a server that dies leaves its webhooks to the others).
enum SharedLedgerServe {
    static let help = OptionHelp("--ledger <url>",
                                 "Keep the ledger in PostgreSQL (postgres://USER@HOST:PORT/DB) shared by several gateway servers, instead of --data-dir; each server also delivers the shared webhook outbox.")

    static func parse(_ arguments: inout Arguments) throws(UsageError) -> String? {
        guard let url = try arguments.option("--ledger", valueName: "<url>") else { return nil }
        guard PostgresURL.isPostgres(url) else {
            throw UsageError("--ledger must be a postgres://USER@HOST:PORT/DB URL")
        }
        return url
    }

    static func open(_ url: String) throws(GatewayError) -> EmbeddedGateway {
        try EmbeddedGateway.shared(ledgerURL: url)
    }

    /// Delivers the outbox until the task is cancelled (a database away: retried every poll),
    /// on the PostgreSQL client's own threads (its ledger calls block).
    static func deliver(_ gateway: EmbeddedGateway) -> Task<Void, Never> {
        let deliverer = WebhookDeliverer(ledger: gateway.ledger, transport: HTTPWebhookTransport(), timeout: .seconds(5),
                                         pollInterval: .milliseconds(200))
        return Task.detached {
            await withTaskExecutorPreference(PostgresExecutor.shared) { await deliverer.run() }
        }
    }
}

/// Webhooks POSTed over libcurl.
struct HTTPWebhookTransport: WebhookTransport {
    let client = HTTPClient(defaultTimeout: .seconds(10))

    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int {
        let r = try await client.send(HTTPClientRequest(method: "POST", url: url,
                                                        headers: headers.map { (name: $0.0, value: $0.1) },
                                                        body: body, timeout: timeout))
        return r.status
    }
}
