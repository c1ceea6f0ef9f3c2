public import Foundation
public import GatewayGraphQL
public import PaymentGateway

/// A fault on demand: the `charges` query and the dashboard see a sale only `lag` after it was
/// recorded, as a search index that trails the ledger does (MONEI's `charges` is a search:
/// `SearchableChargeFilterInput`). With a lag past the client's timeout, a client that gave up
/// on an answer looks the order up and briefly finds nothing — absence is not proof (seed 000,
/// step 4); the ledger holds the sale all along.
public struct IndexingLag: DashboardDataSource {
    public let base: any DashboardDataSource
    public let lag: Duration
    public let now: @Sendable () -> Date

    public init(_ base: any DashboardDataSource, lag: Duration, now: @escaping @Sendable () -> Date = { Date() }) {
        self.base = base
        self.lag = lag
        self.now = now
    }

    private func visible(_ p: Payment) -> Bool {
        let seconds = Double(lag.components.seconds) + Double(lag.components.attoseconds) / 1e18
        return p.createdAt.addingTimeInterval(seconds) <= now()
    }

    public func sales(orderId: String?, paymentId: String?) throws(GatewayError) -> [Payment] {
        try base.sales(orderId: orderId, paymentId: paymentId).filter(visible)
    }

    public func children(ofPaymentId paymentId: String) throws(GatewayError) -> [Payment] {
        try base.children(ofPaymentId: paymentId).filter(visible)
    }

    public func recentSales(limit: Int) throws(GatewayError) -> [Payment] {
        // The newest may be hidden: read past them so up to `limit` visible ones come back.
        try base.recentSales(limit: min(limit * 2 + 100, 10_000)).filter(visible).prefix(limit).map { $0 }
    }

    public func webhooks(ofPaymentId paymentId: String) throws(GatewayError) -> [(WebhookDelivery, [WebhookAttempt])] {
        try base.webhooks(ofPaymentId: paymentId)
    }
}
