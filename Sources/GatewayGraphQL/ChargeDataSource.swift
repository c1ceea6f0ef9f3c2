public import PaymentGateway
public import PaymentRules

/// Where the `charges` query reads payments. The ledger is one (``LedgerChargeDataSource``);
/// tests use ``InMemoryChargeDataSource``.
///
/// Implementations throw ``GatewayError`` (a damaged or unreadable ledger); the query answers
/// such an error as a field error, never as an empty list ("absence is not proof").
public protocol ChargeDataSource: Sendable {
    /// Sales (never refunds or reversals), for one order when `orderId` is given, for one
    /// payment id when `paymentId` is given, else all; any order.
    func sales(orderId: String?, paymentId: String?) throws(GatewayError) -> [Payment]
    /// The refunds and the reversal of a sale, oldest first.
    func children(ofPaymentId paymentId: String) throws(GatewayError) -> [Payment]
}

/// The ledger of an ``EmbeddedGateway`` (or of a data directory) as a data source.
public struct LedgerChargeDataSource: ChargeDataSource {
    public let ledger: any LedgerStore
    public init(ledger: any LedgerStore) { self.ledger = ledger }

    public func sales(orderId: String?, paymentId: String?) throws(GatewayError) -> [Payment] {
        if let paymentId {
            guard let p = try ledger.payment(paymentId: paymentId), p.kind == .sale else { return [] }
            if let orderId, !OrderID.same(p.orderId, orderId) { return [] }
            return [p]
        }
        if let orderId { return try ledger.sales(orderId: orderId) }
        return try ledger.allPayments().filter { $0.kind == .sale }
    }

    public func children(ofPaymentId paymentId: String) throws(GatewayError) -> [Payment] {
        try ledger.children(ofPaymentId: paymentId)
    }
}

/// Payments held in memory.
public struct InMemoryChargeDataSource: ChargeDataSource {
    public var payments: [Payment]
    public init(_ payments: [Payment]) { self.payments = payments }

    public func sales(orderId: String?, paymentId: String?) throws(GatewayError) -> [Payment] {
        payments.filter { p in
            p.kind == .sale && (orderId.map { OrderID.same(p.orderId, $0) } ?? true)
                && (paymentId == nil || p.paymentId == paymentId)
        }
    }

    public func children(ofPaymentId paymentId: String) throws(GatewayError) -> [Payment] {
        payments.filter { $0.parentPaymentId == paymentId }.sorted { $0.createdAt < $1.createdAt }
    }
}
