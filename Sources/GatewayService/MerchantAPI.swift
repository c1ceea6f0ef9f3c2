import Foundation
import HTTPServer
import PaymentGateway

/// The merchant REST routes, in the shapes of MONEI's public API reference
/// (https://docs.monei.com/apis/rest/ — "Get Payment" `GET /v1/payments/{id}`, "Refund Payment"
/// `POST /v1/payments/{id}/refund`, "Cancel Payment" `POST /v1/payments/{id}/cancel`; the API
/// key in the `Authorization` header).
///
/// Checked against MONEI's OpenAPI-generated SDK models (github.com/MONEI/monei-php-sdk,
/// lib/Model/, API document 1.5.0):
/// - `Payment.php`: the field names and types below (`id`, `amount` int32 minor units,
///   `currency`, `orderId`, `accountId`, `authorizationCode`, `livemode`, `status`,
///   `statusCode`, `statusMessage`, `refundedAmount`, `lastRefundAmount`, `lastRefundReason`,
///   `cancellationReason`, `paymentMethod`, `createdAt`/`updatedAt` int64 Unix seconds).
///   A payment has no `callbackUrl` field there, so none here.
/// - `PaymentStatus.php`: `SUCCEEDED`, `PENDING`, `FAILED`, `CANCELED`, `REFUNDED`,
///   `PARTIALLY_REFUNDED`, `AUTHORIZED`, `EXPIRED` (tapemu produces the first five but `PENDING`).
/// - `PaymentPaymentMethod.php` (`method`: `card`, …) and `PaymentPaymentMethodCard.php`
///   (`brand` lower case from MONEI's list, `last4`, `expiration` int64; no BIN) — ``MoneiCard``.
/// - `RefundPaymentRequest.php` (`amount` ≤ the original, `refundReason`) and
///   `CancelPaymentRequest.php` (`cancellationReason`); both reasons one of `duplicated`,
///   `fraudulent`, `requested_by_customer` (`PaymentRefundReason.php`,
///   `PaymentCancellationReason.php`) — anything else is 400 here.
/// - `ErrorBase.php`: errors are `{status, statusCode, message, requestId, requestTime}`
///   (``Wire/ErrorBody``; tapemu adds `code`).
///
/// The list `GET /v1/payments?orderId=` is tapemu's (MONEI lists through GraphQL `charges`).
///
/// Cancel voids an approved sale here (tapemu authorises and captures at once), as the
/// CoreAPI reversal does.
struct MerchantAPI {
    let service: GatewayService

    struct Card: Codable {
        var brand: String
        var last4: String
        /// Unix seconds (int64 in MONEI's model).
        var expiration: Int64?
    }
    struct PaymentMethod: Codable {
        var method: String
        var card: Card
    }
    struct MoneiPayment: Codable {
        var id: String
        var amount: Int
        var currency: String
        var orderId: String
        var accountId: String?
        var authorizationCode: String?
        var livemode: Bool
        var status: String
        var statusCode: String
        var statusMessage: String
        var refundedAmount: Int
        var lastRefundAmount: Int?
        var lastRefundReason: String?
        var cancellationReason: String?
        var paymentMethod: PaymentMethod
        var createdAt: Int64
        var updatedAt: Int64
    }
    struct RefundBody: Codable {
        var amount: Int?
        var refundReason: String?
    }
    struct CancelBody: Codable {
        var cancellationReason: String?
    }
    struct PaymentList: Codable {
        var items: [MoneiPayment]
        var total: Int
    }

    static func status(_ p: Payment) -> String { MoneiStatus.of(p) }

    static func shape(_ p: Payment, lastRefund: (amount: Int, reason: String?)? = nil,
                      cancellationReason: String? = nil) -> MoneiPayment {
        MoneiPayment(id: p.paymentId, amount: p.amount, currency: p.currency, orderId: p.orderId, accountId: p.accountId,
                     authorizationCode: p.authorisationCode, livemode: false, status: status(p),
                     statusCode: p.statusCode, statusMessage: p.statusMessage, refundedAmount: p.refundedAmount,
                     lastRefundAmount: lastRefund?.amount, lastRefundReason: lastRefund?.reason,
                     cancellationReason: cancellationReason,
                     paymentMethod: PaymentMethod(method: "card", card: Card(brand: MoneiCard.brand(p.cardBrand), last4: p.last4,
                                                                              expiration: MoneiCard.expiration(p.expiry))),
                     createdAt: Int64(p.createdAt.timeIntervalSince1970), updatedAt: Int64(p.updatedAt.timeIntervalSince1970))
    }

    /// `reason` when it is one of MONEI's (or absent), else 400.
    static func checkReason(_ reason: String?, _ field: String) throws(RouteError) {
        if let reason, !MoneiCard.reasons.contains(reason) {
            throw RouteError(400, "invalidRequest", "\(field) must be one of \(MoneiCard.reasons.joined(separator: ", "))")
        }
    }

    /// The sale with this id, or 404 (refund and reversal rows are not payments here). Read on
    /// the ledger's threads (``GatewayService/call(_:)``), never on the cooperative pool.
    func sale(_ id: String?) async throws(RouteError) -> Payment {
        guard let id, !id.isEmpty else { throw RouteError(400, "invalidRequest", "the payment id is missing") }
        let ledger = service.gateway.ledger
        let found = try await service.call { () async throws(GatewayError) -> Payment? in
            try ledger.payment(paymentId: id)
        }
        guard let p = found, p.kind == .sale else { throw RouteError(404, "notFound", "no payment has the id \(id)") }
        return p
    }

    /// `p` in MONEI's shape as a read answers it: with its last refund's amount
    /// (`lastRefundAmount`, as GraphQL's `charges` gives it), read on the ledger's threads. The
    /// refund's reason is not kept in the ledger: only the refund's own answer has it.
    func shapeRead(_ p: Payment) async throws(RouteError) -> MoneiPayment {
        // Every refund adds to refundedAmount: none, no read.
        guard p.refundedAmount > 0 else { return Self.shape(p) }
        let ledger = service.gateway.ledger
        let children = try await service.call { () async throws(GatewayError) in
            try ledger.children(ofPaymentId: p.paymentId)
        }
        return Self.shape(p, lastRefund: Payment.lastRefund(among: children).map { ($0.amount, nil) })
    }

    /// The sale as it stands after a refund or a cancel the ledger recorded: read again, or —
    /// when that read fails — `before` with what the write's answer says. Never an error: the
    /// write is done, and an error would tell the merchant to try again (a second refund).
    func saleAfter(_ before: Payment, _ change: (inout Payment) -> Void) async -> Payment {
        if let after = try? await sale(before.paymentId) { return after }
        var p = before
        change(&p)
        p.updatedAt = service.gateway.configuration.now()
        return p
    }

    func register(_ r: inout Router) {
        let service = self.service
        r.add("GET", "/v1/payments", .apiKey) { req, _ in
            await service.respond(req) { () throws(RouteError) in
                guard let orderId = req.queryValue("orderId"), !orderId.isEmpty else {
                    throw RouteError(400, "invalidRequest", "filter the list with ?orderId=")
                }
                let sales = try await service.call { () async throws(GatewayError) in
                    try await service.gateway.charges(orderId: orderId, options: GatewayService.passThrough)
                }
                var items: [MoneiPayment] = []
                for sale in sales { items.append(try await shapeRead(sale)) }
                return Wire.json(PaymentList(items: items, total: sales.count))
            }
        }
        r.add("GET", "/v1/payments/{id}", .apiKey) { req, params in
            await service.respond(req) { () throws(RouteError) in
                Wire.json(try await shapeRead(try await sale(params["id"])))
            }
        }
        r.add("POST", "/v1/payments/{id}/refund", .apiKey) { req, params in
            await service.respond(req) { () throws(RouteError) in
                let body = req.body.isEmpty ? RefundBody() : try req.decode(RefundBody.self)
                try Self.checkReason(body.refundReason, "refundReason")
                let p = try await sale(params["id"])
                let refund = try await service.call { () async throws(GatewayError) in
                    try await service.gateway.refund(uniqueRef: p.uniqueRef, amount: body.amount,
                                                     options: GatewayService.passThrough)
                }
                let after = await saleAfter(p) { $0.refundedAmount = refund.refundedAmount }
                return Wire.json(Self.shape(after, lastRefund: (refund.amount, body.refundReason)))
            }
        }
        r.add("POST", "/v1/payments/{id}/cancel", .apiKey) { req, params in
            await service.respond(req) { () throws(RouteError) in
                let body = req.body.isEmpty ? CancelBody() : try req.decode(CancelBody.self)
                try Self.checkReason(body.cancellationReason, "cancellationReason")
                let p = try await sale(params["id"])
                _ = try await service.call { () async throws(GatewayError) in
                    try await service.gateway.reverse(uniqueRef: p.uniqueRef, options: GatewayService.passThrough)
                }
                let after = await saleAfter(p) { $0.reversed = true }
                return Wire.json(Self.shape(after, cancellationReason: body.cancellationReason))
            }
        }
    }
}
