public import GatewayGraphQL
public import PaymentGateway
import Foundation
import GraphQL

/// What the dashboard reads: sales (a ``ChargeDataSource``), and each sale's webhooks with
/// their delivery attempts.
public protocol DashboardDataSource: ChargeDataSource {
    /// The newest sales first, at most `limit`.
    func recentSales(limit: Int) throws(GatewayError) -> [Payment]
    /// The webhooks of a sale, in outbox order, each with its attempts (oldest first).
    func webhooks(ofPaymentId paymentId: String) throws(GatewayError) -> [(WebhookDelivery, [WebhookAttempt])]
}

extension LedgerChargeDataSource: DashboardDataSource {
    public func recentSales(limit: Int) throws(GatewayError) -> [Payment] { try ledger.recentSales(limit: limit) }

    public func webhooks(ofPaymentId paymentId: String) throws(GatewayError) -> [(WebhookDelivery, [WebhookAttempt])] {
        var out: [(WebhookDelivery, [WebhookAttempt])] = []
        for d in try ledger.webhookDeliveries(paymentId: paymentId) {
            out.append((d, try ledger.webhookAttempts(webhookId: d.webhook.id)))
        }
        return out
    }
}

/// The JSON the dashboard's page reads. Never a full PAN: brand and last four only.
enum DashboardJSON {
    static let iso = Date.ISO8601FormatStyle(includingFractionalSeconds: false)

    static func time(_ d: Date?) -> JSONValue { d.map { .string($0.formatted(iso)) } ?? .null }
    static func opt(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
    static func opt(_ i: Int?) -> JSONValue { i.map { .int($0) } ?? .null }

    static func summary(_ p: Payment) -> JSONValue {
        .object([
            ("id", .string(p.paymentId)),
            ("orderId", .string(p.orderId)),
            ("status", .string(ChargesSchema.status(p))),
            ("amount", .int(p.amount)),
            ("currency", .string(p.currency)),
            ("refundedAmount", .int(p.refundedAmount)),
            ("reversed", .bool(p.reversed)),
            ("cardBrand", .string(p.cardBrand.rawValue)),
            ("last4", .string(p.last4)),
            ("statusCode", .string(p.statusCode)),
            ("statusMessage", .string(p.statusMessage)),
            ("createdAt", time(p.createdAt)),
            ("updatedAt", time(p.updatedAt)),
        ])
    }

    static func operation(_ p: Payment) -> JSONValue {
        .object([
            ("id", .string(p.paymentId)), ("type", .string(p.kind.rawValue)), ("amount", .int(p.amount)),
            ("currency", .string(p.currency)), ("uniqueRef", .string(p.uniqueRef)),
            ("statusMessage", .string(p.statusMessage)), ("createdAt", time(p.createdAt)),
        ])
    }

    static func detail(_ p: Payment, children: [Payment], webhooks: [(WebhookDelivery, [WebhookAttempt])]) -> JSONValue {
        guard case .object(var payment) = summary(p) else { return .null }
        payment.append(("authorizationCode", opt(p.authorisationCode)))
        payment.append(("uniqueRef", .string(p.uniqueRef)))
        payment.append(("transactionCode", .string(p.transactionCode.rawValue)))
        payment.append(("callbackUrl", opt(p.callbackUrl)))
        return .object([
            ("payment", .object(payment)),
            ("refunds", .array(children.filter { $0.kind == .refund }.map(operation))),
            ("reversal", children.first { $0.kind == .reversal }.map(operation) ?? .null),
            ("webhooks", .array(webhooks.map { d, attempts in
                .object([
                    ("id", .int(Int(d.webhook.id))), ("event", .string(d.webhook.event.rawValue)),
                    ("url", .string(d.webhook.url)), ("state", .string(d.state)), ("attempts", .int(d.webhook.attempts)),
                    ("nextAttemptAt", time(d.nextAttemptAt)), ("lastStatus", opt(d.lastStatus)),
                    ("lastError", opt(d.webhook.lastError)), ("deliveredAt", time(d.webhook.deliveredAt)),
                    ("createdAt", time(d.webhook.createdAt)),
                    ("tries", .array(attempts.map { a in
                        .object([
                            ("attempt", .int(a.attempt)), ("startedAt", time(a.startedAt)), ("status", opt(a.status)),
                            ("error", opt(a.error)), ("nextAttemptAt", time(a.nextAttemptAt)), ("fault", opt(a.fault)),
                        ])
                    })),
                ])
            })),
        ])
    }
}
