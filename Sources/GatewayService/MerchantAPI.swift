import BERTLV
import PaymentRules
import Foundation
import HTTPServer
import PaymentGateway

/// The merchant REST routes, as MONEI's official Python SDK (`monei` 2.8.0, OpenAPI document
/// 1.12.3; its `Monei/api/payments_api.py` and `Monei/model/`) calls and parses them:
/// `payments.get` `GET /v1/payments/{id}`, `payments.create` `POST /v1/payments`,
/// `payments.refund` `POST /v1/payments/{id}/refund`, `payments.cancel`
/// `POST /v1/payments/{id}/cancel`, `payments.capture` `POST /v1/payments/{id}/capture`; the API
/// key in the `Authorization` header. `Tests/MoneiSDK/conformance.py` drives every one with the
/// SDK itself against a real `gateway serve`.
///
/// - `Payment` (model/payment.py): the fields below; `id`, `amount`, `currency`, `accountId`,
///   `livemode` and `status` are required. `statusCode` is MONEI's E-code
///   (``MoneiStatusCode``), `statusMessage` its documented message; `createdAt`/`updatedAt` Unix
///   seconds. tapemu adds `issuerResponseCode` (the emulated issuer's ISO 8583 answer), never
///   changing a field of MONEI's.
/// - `PaymentStatus`: `SUCCEEDED`, `FAILED`, `CANCELED`, `REFUNDED`, `PARTIALLY_REFUNDED`,
///   `AUTHORIZED` (``MoneiStatus``).
/// - `PaymentPaymentMethodCard`: `brand` lower case from MONEI's list, `last4`, `expiration`
///   (``MoneiCard``).
/// - `RefundPaymentRequest` (`amount`, `refundReason`: `PaymentRefundReason`),
///   `CancelPaymentRequest` (`cancellationReason`: `PaymentCancellationReason`, with
///   `order_canceled`), `CapturePaymentRequest` (`amount`), `CreatePaymentRequest` (`amount`,
///   `currency`, `orderId`, `callbackUrl`, `transactionType` SALE or AUTH, `paymentMethod.card`).
/// - Errors (`ApiException` and its `BadRequestError`, `UnauthorizedError`, `NotFoundError`,
///   `UnprocessableEntityError`…): `{status, statusCode, message, requestId, requestTime}` with
///   `status` the error's name (``HTTPServer/HTTPResponse/jsonError(status:code:message:requestId:)``);
///   tapemu adds `code`. Refusals of a payment's state are 422 with MONEI's message for the
///   E-code (``MoneiStatusCode/Refusal``).
///
/// Cancel and capture act on AUTHORIZED payments only (MONEI's rule); a captured sale is
/// refunded (or, through the CoreAPI, reversed). A terminal sale is authorised and captured at
/// once. The list `GET /v1/payments?orderId=` is tapemu's (MONEI lists through GraphQL `charges`).
struct MerchantAPI {
    let service: GatewayService

    struct RefundBody: Codable {
        var amount: Int?
        var refundReason: String?
    }
    struct CancelBody: Codable {
        var cancellationReason: String?
    }
    struct CaptureBody: Codable {
        var amount: Int?
    }
    struct CardInput: Codable {
        /// The full PAN: used for the decision, never stored or logged (first 6 + last 4 are).
        var number: String
        var expMonth: String?
        var expYear: String?
        var cvc: String?
        var cardholderName: String?
        var cardholderEmail: String?
    }
    struct PaymentMethodInput: Codable {
        var card: CardInput?
    }
    /// `CreatePaymentRequest`'s fields that tapemu uses; the SDK's others are accepted and ignored.
    struct CreateBody: Codable {
        var amount: Int
        var currency: String
        var orderId: String
        var callbackUrl: String?
        var transactionType: String?
        var paymentMethod: PaymentMethodInput?
        var description: String?
    }
    struct PaymentList: Codable {
        var items: [MoneiPayment]
        var total: Int
    }

    /// `reason` when it is one of `allowed` (or absent), else 400.
    static func checkReason(_ reason: String?, _ field: String, allowed: [String]) throws(RouteError) {
        if let reason, !allowed.contains(reason) {
            throw RouteError(400, "invalidRequest", "\(field) must be one of \(allowed.joined(separator: ", "))")
        }
    }

    /// `body`, its refusal naming the payment by the id the merchant used (the ledger's rules name
    /// the terminal's uniqueRef, which a MONEI client never sees).
    static func naming<T>(_ p: Payment, _ body: () async throws(RouteError) -> T) async throws(RouteError) -> T {
        do {
            return try await body()
        } catch {
            var named = error
            if p.uniqueRef != p.paymentId {
                named.message = named.message.replacingOccurrences(of: p.uniqueRef, with: "payment \(p.paymentId)")
            }
            throw named
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
        guard let p = found, p.kind == .sale else { throw RouteError(404, "notFound", "Payment not found: no payment has the id \(id)") }
        return p
    }

    /// `p` in MONEI's shape as a read answers it. A sale refunded before ledger version 3 keeps
    /// no `lastRefundAmount` of its own: its newest refund row says it (as GraphQL's `charges`).
    func shapeRead(_ p: Payment) async throws(RouteError) -> MoneiPayment {
        guard p.refundedAmount > 0, p.lastRefundAmount == nil else { return MoneiPayment(p) }
        let ledger = service.gateway.ledger
        let children = try await service.call { () async throws(GatewayError) in
            try ledger.children(ofPaymentId: p.paymentId)
        }
        return MoneiPayment(p, lastRefundAmount: Payment.lastRefund(among: children)?.amount)
    }

    /// The sale as it stands after a refund the ledger recorded: read again, or — when that
    /// read fails — `before` with what the write's answer says. Never an error: the write is
    /// done, and an error would tell the merchant to try again (a second refund).
    func saleAfter(_ before: Payment, _ change: (inout Payment) -> Void) async -> Payment {
        if let after = try? await sale(before.paymentId) { return after }
        var p = before
        change(&p)
        p.updatedAt = service.gateway.configuration.now()
        return p
    }

    /// The request of `POST /v1/payments`, or its refusal.
    static func authorisation(_ body: CreateBody) throws(RouteError) -> AuthorisationRequest {
        let capture: Bool
        switch body.transactionType ?? "SALE" {
        case "SALE": capture = true
        case "AUTH": capture = false
        case "PAYOUT", "VERIF":
            throw RouteError(422, "invalidRequest", "transactionType \(body.transactionType ?? ""): tapemu's gateway makes SALE and AUTH payments only")
        default:
            throw RouteError(400, "invalidRequest", "transactionType must be one of SALE, AUTH, PAYOUT, VERIF")
        }
        guard let card = body.paymentMethod?.card else {
            throw RouteError(422, "invalidRequest", "tapemu's gateway decides a payment when it is created: give paymentMethod.card (a test card number); a payment without one (PENDING, confirmed later) is not emulated")
        }
        guard let pan = PAN(card.number) else {
            throw RouteError(400, "invalidRequest", "paymentMethod.card.number must be 12 to 19 digits")
        }
        var expiry: String?
        if card.expMonth != nil || card.expYear != nil {
            guard let m = card.expMonth.flatMap({ Int($0) }), (1...12).contains(m),
                  let yText = card.expYear, yText.utf8.count == 2 || yText.utf8.count == 4,
                  yText.allSatisfy({ $0.isASCII && $0.isNumber }), let y = Int(yText) else {
                throw RouteError(400, "invalidRequest", "paymentMethod.card.expMonth must be 1 to 12 and expYear two or four digits")
            }
            expiry = String(format: "%02d%02d", y % 100, m)
        }
        var request = AuthorisationRequest(orderId: body.orderId, amount: body.amount, currency: body.currency,
                                           callbackUrl: body.callbackUrl, card: CardData(pan: pan, expiry: expiry))
        request.capture = capture
        request.cardPresent = false
        return request
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
        r.add("POST", "/v1/payments", .apiKey) { req, _ in
            await service.respond(req) { () throws(RouteError) in
                let request = try Self.authorisation(try req.decode(CreateBody.self))
                let answer = try await service.call { () async throws(GatewayError) in
                    try await service.gateway.authorize(request, options: GatewayService.passThrough)
                }
                return Wire.json(try await shapeRead(try await sale(answer.paymentId)))
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
                try Self.checkReason(body.refundReason, "refundReason", allowed: MoneiCard.refundReasons)
                let p = try await sale(params["id"])
                let refund = try await Self.naming(p) { () async throws(RouteError) in try await service.call { () async throws(GatewayError) in
                    try await service.gateway.refund(uniqueRef: p.uniqueRef, amount: body.amount, reason: body.refundReason,
                                                     options: GatewayService.passThrough)
                } }
                let after = await saleAfter(p) {
                    $0.refundedAmount = refund.refundedAmount
                    $0.lastRefundAmount = refund.amount
                    $0.lastRefundReason = body.refundReason
                }
                return Wire.json(MoneiPayment(after))
            }
        }
        r.add("POST", "/v1/payments/{id}/cancel", .apiKey) { req, params in
            await service.respond(req) { () throws(RouteError) in
                let body = req.body.isEmpty ? CancelBody() : try req.decode(CancelBody.self)
                try Self.checkReason(body.cancellationReason, "cancellationReason", allowed: MoneiCard.cancellationReasons)
                let p = try await sale(params["id"])
                let after = try await Self.naming(p) { () async throws(RouteError) in try await service.call { () async throws(GatewayError) in
                    try await service.gateway.cancel(uniqueRef: p.uniqueRef, reason: body.cancellationReason,
                                                     options: GatewayService.passThrough)
                } }
                return Wire.json(try await shapeRead(after))
            }
        }
        r.add("POST", "/v1/payments/{id}/capture", .apiKey) { req, params in
            await service.respond(req) { () throws(RouteError) in
                let body = req.body.isEmpty ? CaptureBody() : try req.decode(CaptureBody.self)
                let p = try await sale(params["id"])
                let after = try await Self.naming(p) { () async throws(RouteError) in try await service.call { () async throws(GatewayError) in
                    try await service.gateway.capture(uniqueRef: p.uniqueRef, amount: body.amount,
                                                      options: GatewayService.passThrough)
                } }
                return Wire.json(try await shapeRead(after))
            }
        }
    }
}
