public import PaymentGateway
import PostgresClient

extension EmbeddedGateway {
    /// The gateway over a PostgreSQL ledger (`postgres://USER@HOST:PORT/DB`) that several
    /// gateway processes share; the configuration's data directory is not used. The library
    /// equivalent of `tapemu gateway serve --ledger URL` (`GatewayService(gateway:)` serves it).
    ///
    /// Its ledger calls block their thread for a network round trip: call it off Swift's
    /// cooperative pool — `GatewayService` does; elsewhere
    /// `withTaskExecutorPreference(BlockingExecutor.postgres) { … }`.
    public static func shared(ledgerURL: String, configuration: Configuration = Configuration(),
                              connections: Int = 8) throws(GatewayError) -> EmbeddedGateway {
        guard PostgresURL.isPostgres(ledgerURL) else {
            throw GatewayError(.invalidRequest, "a shared ledger is a postgres:// URL (got \(PostgresURL.redacted(ledgerURL)))")
        }
        return EmbeddedGateway(configuration: configuration,
                               ledger: try PostgresLedger(url: ledgerURL, connections: connections))
    }
}
