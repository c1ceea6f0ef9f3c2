public import Foundation
public import HTTPServer
public import PaymentGateway
import PaymentRules
import StrictJSON

/// The JSON the gateway service and ``RemoteGateway`` exchange (the terminal API), and the
/// merchant REST shapes. Amounts are minor units; times are milliseconds since 1970 in the
/// terminal API and seconds in the MONEI-shaped merchant API (as MONEI's `createdAt`).
enum Wire {
    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    static func millis(_ d: Date) -> Int64 { Int64((d.timeIntervalSince1970 * 1000).rounded(.down)) }
    static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(ms) / 1000) }

    // MARK: Terminal API

    struct Card: Codable {
        /// The full PAN: the terminal sends it to the gateway (and nowhere else). Never logged.
        var pan: String
        var expiry: String?
        var panSequenceNumber: Int?
        var brand: String?
        /// Hex.
        var emvData: String?
    }

    struct Authorisation: Codable {
        var orderId: String
        var amount: Int
        var currency: String?
        var callbackUrl: String?
        var card: Card
        var sdkVersion: String?
        var accountId: String?
    }

    struct AuthorisationAnswer: Codable {
        var paymentId: String
        var orderId: String
        var status: AuthorisationStatus
        var statusCode: String
        var statusMessage: String
        var authorisationCode: String?
        var uniqueRef: String
        var amount: Int
        var currency: String
        var cardBrand: String
        var last4: String
        var maskedPAN: String
        var cryptogram: CryptogramCheck
        var transactionCode: String
        var isReplay: Bool
        var createdAt: Int64
        var updatedAt: Int64?
    }

    struct PaymentItem: Codable {
        var paymentId: String
        var kind: TransactionKind
        var orderId: String
        var parentPaymentId: String?
        var amount: Int
        var currency: String
        var status: AuthorisationStatus
        var state: PaymentState
        var statusCode: String
        var statusMessage: String
        var authorisationCode: String?
        var uniqueRef: String
        var cardBrand: String
        var last4: String
        var maskedPAN: String
        var expiry: String?
        var panSequenceNumber: Int?
        var emvData: String
        var cryptogram: CryptogramCheck
        var callbackUrl: String?
        var accountId: String?
        var sdkVersion: String?
        var reversed: Bool
        var refundedAmount: Int
        var transactionCode: String
        var createdAt: Int64
        var updatedAt: Int64
    }

    struct Items<T: Codable>: Codable { var items: [T] }

    struct TransactionItem: Codable {
        var code: String
        var uniqueRef: String
        var amount: Int
        var currency: String
        var cardNumber: String
        var orderId: String
        var kind: TransactionKind
        var paymentId: String
        var statusCode: String
        var statusMessage: String
        var date: Int64
    }

    struct TransactionList: Codable { var transactionSummary: [TransactionItem] }

    struct ReversalRequest: Codable {
        var uniqueRef: String
        var deviceType: String?
    }

    struct ReversalAnswer: Codable {
        /// `A`: the reversal was approved (CoreAPI's response code).
        var code: String
        var uniqueRef: String
        var originalUniqueRef: String
        var paymentId: String
        var orderId: String
        var amount: Int
        var currency: String
        var deviceType: String?
        var statusCode: String
        var responseText: String
    }

    struct RefundRequest: Codable {
        var uniqueRef: String
        var amount: Int?
    }

    struct RefundAnswer: Codable {
        var uniqueRef: String
        var refundPaymentId: String
        var originalUniqueRef: String
        var paymentId: String
        var orderId: String
        var amount: Int
        var currency: String
        var refundedAmount: Int
        var remainingAmount: Int
        var statusCode: String
        var statusMessage: String
    }

    struct TokenRequest: Codable { var token: String }

    /// `GET /support/v1/orders/{orderId}`: `paymentHolds` (with the payment), `noPaymentReceived`
    /// (safe to charge again) or `askAgainLater` (with `askAgainAfter`, unix ms).
    struct SupportAnswer: Codable {
        var orderId: String
        var answer: String
        var paymentId: String?
        var amount: Int?
        var currency: String?
        var askAgainAfter: Int64?

        init(orderId: String, _ a: SupportDesk.Answer) {
            self.orderId = orderId
            switch a {
            case .paymentHolds(let id, let amount, let currency, _):
                (answer, paymentId, self.amount, self.currency) = ("paymentHolds", id, amount, currency)
            case .noPaymentReceived:
                answer = "noPaymentReceived"
            case .askAgainLater(let after):
                (answer, askAgainAfter) = ("askAgainLater", Wire.millis(after))
            }
        }
    }

    struct TokenAnswer: Codable {
        /// `valid`, `expired` or `invalid`.
        var result: String
        var accountId: String?
        var mode: TokenMode?
        var issuedAt: Int64?
        var expiresAt: Int64?
        var tokenId: String?
        var pointOfSaleId: String?
        var storeId: String?
        var reason: String?
    }

    struct SDKVersionRequest: Codable { var version: String }
    struct Terms: Codable {
        var accountId: String
        var accepted: Bool
    }
    struct Empty: Codable {}

    /// An error answer, in MONEI's error shape (`status`, `statusCode`, `message`) plus the
    /// gateway's error `code` and the request's id. MONEI's API reference
    /// (https://docs.monei.com/apis/rest/ — "Errors") answers errors as a JSON object with the
    /// HTTP status code and a human-readable message.
    /// MONEI's error (monei-php-sdk lib/Model/ErrorBase.php: `status`, `statusCode` the HTTP
    /// status, `message`, `requestId`, `requestTime` date-time) and tapemu's `code`.
    struct ErrorBody: Codable {
        var status: String
        var statusCode: Int
        var message: String
        var code: String?
        var requestId: String?
        var requestTime: String?
    }

    // MARK: Conversions

    static func authorisation(_ r: AuthorisationRequest) -> Authorisation {
        Authorisation(orderId: r.orderId, amount: r.amount, currency: r.currency, callbackUrl: r.callbackUrl,
                      card: Card(pan: r.card.pan.digits, expiry: r.card.expiry,
                                 panSequenceNumber: Int(r.card.panSequenceNumber), brand: r.card.brand?.rawValue,
                                 emvData: Encoding.hex(r.card.emvData)),
                      sdkVersion: r.sdkVersion, accountId: r.accountId)
    }

    static func answer(_ r: AuthorisationResponse) -> AuthorisationAnswer {
        AuthorisationAnswer(paymentId: r.paymentId, orderId: r.orderId, status: r.status, statusCode: r.statusCode,
                            statusMessage: r.statusMessage, authorisationCode: r.authorisationCode,
                            uniqueRef: r.uniqueRef, amount: r.amount, currency: r.currency,
                            cardBrand: r.cardBrand.rawValue, last4: r.last4, maskedPAN: r.maskedPAN,
                            cryptogram: r.cryptogram, transactionCode: r.transactionCode.rawValue,
                            isReplay: r.isReplay, createdAt: millis(r.createdAt), updatedAt: nil)
    }

    static func response(_ a: AuthorisationAnswer) -> AuthorisationResponse {
        let p = Payment(reportedId: a.paymentId, kind: .sale, orderId: a.orderId, parentPaymentId: nil, amount: a.amount,
                        currency: a.currency, status: a.status, statusCode: a.statusCode,
                        statusMessage: a.statusMessage, authorisationCode: a.authorisationCode,
                        uniqueRef: a.uniqueRef, cardBrand: CardBrand(rawValue: a.cardBrand), last4: a.last4,
                        maskedPAN: a.maskedPAN, expiry: nil, panSequenceNumber: nil, emvData: [],
                        cryptogram: a.cryptogram, callbackUrl: nil, accountId: nil, sdkVersion: nil,
                        reversed: false, refundedAmount: 0, createdAt: date(a.createdAt),
                        updatedAt: date(a.updatedAt ?? a.createdAt))
        var r = AuthorisationResponse(payment: p, isReplay: a.isReplay)
        r.transactionCode = TransactionCode(rawValue: a.transactionCode)
        return r
    }

    static func item(_ p: Payment) -> PaymentItem {
        PaymentItem(paymentId: p.paymentId, kind: p.kind, orderId: p.orderId, parentPaymentId: p.parentPaymentId,
                    amount: p.amount, currency: p.currency, status: p.status, state: p.state,
                    statusCode: p.statusCode, statusMessage: p.statusMessage,
                    authorisationCode: p.authorisationCode, uniqueRef: p.uniqueRef,
                    cardBrand: p.cardBrand.rawValue, last4: p.last4, maskedPAN: p.maskedPAN, expiry: p.expiry,
                    panSequenceNumber: p.panSequenceNumber.map(Int.init), emvData: Encoding.hex(p.emvData),
                    cryptogram: p.cryptogram, callbackUrl: p.callbackUrl, accountId: p.accountId,
                    sdkVersion: p.sdkVersion, reversed: p.reversed, refundedAmount: p.refundedAmount,
                    transactionCode: p.transactionCode.rawValue, createdAt: millis(p.createdAt),
                    updatedAt: millis(p.updatedAt))
    }

    static func payment(_ i: PaymentItem) -> Payment {
        Payment(reportedId: i.paymentId, kind: i.kind, orderId: i.orderId, parentPaymentId: i.parentPaymentId,
                amount: i.amount, currency: i.currency, status: i.status, statusCode: i.statusCode,
                statusMessage: i.statusMessage, authorisationCode: i.authorisationCode, uniqueRef: i.uniqueRef,
                cardBrand: CardBrand(rawValue: i.cardBrand), last4: i.last4, maskedPAN: i.maskedPAN,
                expiry: i.expiry, panSequenceNumber: i.panSequenceNumber.map { UInt8(clamping: $0) },
                emvData: Encoding.unhex(i.emvData) ?? [], cryptogram: i.cryptogram, callbackUrl: i.callbackUrl,
                accountId: i.accountId, sdkVersion: i.sdkVersion, reversed: i.reversed,
                refundedAmount: i.refundedAmount, createdAt: date(i.createdAt), updatedAt: date(i.updatedAt))
            .withCaptured(i.state != .authorized)
    }

    static func transaction(_ t: TransactionSummary) -> TransactionItem {
        TransactionItem(code: t.code.rawValue, uniqueRef: t.uniqueRef, amount: t.amount, currency: t.currency,
                        cardNumber: t.cardNumber, orderId: t.orderId, kind: t.kind, paymentId: t.paymentId,
                        statusCode: t.statusCode, statusMessage: t.statusMessage, date: millis(t.date))
    }

    static func summary(_ t: TransactionItem) -> TransactionSummary {
        // Rebuilt through a Payment (TransactionSummary's only public initialiser).
        let p = Payment(reportedId: t.paymentId, kind: t.kind, orderId: t.orderId, parentPaymentId: nil,
                        amount: t.amount, currency: t.currency, status: .approved, statusCode: t.statusCode,
                        statusMessage: t.statusMessage, authorisationCode: nil, uniqueRef: t.uniqueRef,
                        cardBrand: .unknown, last4: String(t.cardNumber.suffix(4)), maskedPAN: t.cardNumber,
                        expiry: nil, panSequenceNumber: nil, emvData: [], cryptogram: .unverified,
                        callbackUrl: nil, accountId: nil, sdkVersion: nil, reversed: false, refundedAmount: 0,
                        createdAt: date(t.date), updatedAt: date(t.date))
        var s = TransactionSummary(p)
        s.code = TransactionCode(rawValue: t.code)
        return s
    }

    // MARK: Errors

    /// The HTTP status a gateway error is answered with.
    static func httpStatus(_ code: GatewayError.Code) -> Int { code.httpStatus }

    static func errorResponse(status: Int, code: String?, message: String, requestId: String) -> HTTPResponse {
        HTTPResponse.jsonError(status: status, code: code, message: message, requestId: requestId)
    }

    static func errorResponse(_ error: GatewayError, requestId: String) -> HTTPResponse {
        errorResponse(status: httpStatus(error.code), code: error.code.description, message: error.reason,
                      requestId: requestId)
    }

    static func json(_ value: some Encodable, status: Int = 200) -> HTTPResponse {
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: Array(data))
    }
}

/// A typed failure of a route: answered as JSON in the error shape.
struct RouteError: Error {
    var status: Int
    var code: String
    var message: String

    init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    init(_ error: GatewayError) {
        // A terminal's order that is not its own: the terminal API's one 403 shape.
        if error.code == .orderNotOwned {
            self.init(403, "forbidden", error.reason)
            return
        }
        self.init(Wire.httpStatus(error.code), error.code.description, error.reason)
    }

    /// A body that ``StrictJSON`` refused: not JSON, a name repeated in one object, or JSON that
    /// is not the route's shape (a missing field, a wrong type, a number that is not an integer
    /// where one is needed). Names the field; an integer amount field says what it takes.
    static func badJSON(_ error: StrictJSONError) -> RouteError {
        let detail: String
        switch error {
        case .syntax(let e) where e.duplicateKey != nil:
            detail = "the key \"\(e.duplicateKey!)\" appears more than once in one object (at byte \(e.offset))"
        case .syntax(let e):
            detail = "the body is not valid JSON: \(e)"
        case .shape(.typeMismatch(let type, let c)) where type is any FixedWidthInteger.Type && !c.codingPath.isEmpty:
            let path = StrictJSONReader.path(c.codingPath)
            detail = path.lowercased().hasSuffix("amount")
                ? "the field \(path) must be an integer number of minor units (a JSON integer such as 1250, no fraction or exponent)"
                : "the field \(path) \(c.debugDescription)"
        case .shape(.dataCorrupted(let c)) where !c.codingPath.isEmpty && StrictJSONReader.path(c.codingPath).lowercased().hasSuffix("amount"):
            detail = "the field \(StrictJSONReader.path(c.codingPath)) \(c.debugDescription): an amount is an integer number of minor units of at most 12 digits"
        case .shape(let e):
            detail = StrictJSONReader.describe(e)
        }
        return RouteError(400, "invalidRequest", "malformed JSON body: \(detail)")
    }
}

extension HTTPRequest {
    /// The body decoded as `T`, or a typed 400; 415 unless it came as `Content-Type:
    /// application/json`. A web page can make a browser send a cross-site POST without asking
    /// first only as text/plain, a form or with no type at all: the service takes none of those,
    /// so a page open in the tester's browser cannot refund, reverse or authorise through it.
    func decode<T: Decodable>(_ type: T.Type) throws(RouteError) -> T {
        guard !body.isEmpty else { throw RouteError(400, "invalidRequest", "the request needs a JSON body") }
        guard hasJSONContentType else {
            let given = header("Content-Type").map { "Content-Type: \($0)" } ?? "no Content-Type"
            throw RouteError(415, "unsupportedMediaType",
                             "the body must be sent as Content-Type: application/json (the request has \(given))")
        }
        // The one strict reader (StrictJSON), not Foundation's JSONDecoder: that one keeps one
        // copy of a repeated key without a word, reads 12.0 or 1e3 into an Int amount and calls
        // 12.50, 1e400 and 2^63 "not valid JSON".
        do throws(StrictJSONError) {
            return try StrictJSONReader.decode(T.self, from: body)
        } catch {
            throw RouteError.badJSON(error)
        }
    }
}
