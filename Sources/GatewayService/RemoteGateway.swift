public import Foundation
public import HTTPClient
public import PaymentGateway
import Synchronization

/// The token a ``RemoteGateway`` found valid last (its terminal's credential when none was given).
final class PreparedToken: Sendable {
    private let value = Mutex<String?>(nil)
    var token: String? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// A ``Gateway`` that talks to `tapemu gateway serve` over HTTP (its terminal API).
///
/// Transport failures map onto ``GatewayError`` exactly as the embedded gateway's injected
/// faults do, so the payment flow's submission-point logic is the same over TCP:
///
/// | Transport | GatewayError | Recorded? |
/// |-----------|--------------|-----------|
/// | could not connect (refused, no route, connect timeout) | ``GatewayError/Code/connectionLost`` | no: the request never left (the reason says so) |
/// | reset / closed before an answer (a lost answer) | ``GatewayError/Code/connectionLost`` | maybe |
/// | no complete answer within the timeout | ``GatewayError/Code/timeout`` | maybe |
/// | answer cut short (a stall mid-body) | ``GatewayError/Code/connectionLost`` | maybe |
/// | HTTP 5xx, or an answer that is not the API's JSON | ``GatewayError/Code/serverError`` | maybe |
/// | the caller's task cancelled | ``GatewayError/Code/cancelled`` | maybe |
///
/// All are communication failures (``GatewayError/isCommunicationFailure``): for an
/// authorisation the flow reports `outcomeUnknown` / `onTransactionCommError` whatever the
/// kind (it has passed the submission point once it calls ``authorize(_:options:)``); for the
/// requests before it (token, SDK version, terms) the flow's pre-submission errors apply.
/// Refusals (4xx with the gateway's code) come back as the same codes the embedded gateway
/// throws. Nothing is ever retried.
public struct RemoteGateway: Gateway {
    /// `http://HOST:PORT` or `https://HOST:PORT` of the service.
    public let baseURL: String
    /// How long a request waits when its options do not say.
    public var requestTimeout: Duration
    /// The terminal's token, sent as `Authorization: Bearer` on every terminal and CoreAPI
    /// request (the service acts on this terminal's own orders only). nil: the token this
    /// gateway (or a copy of it) last found valid in ``validateToken(_:options:)`` — the one the
    /// app prepared with (`prepare(token:)`, CoreAPI's terminal) — else none (the service
    /// answers 401 where one is needed).
    public var deviceToken: String?
    /// The token `prepare(token:)` validated, shared by this gateway's copies — one terminal's:
    /// ``forTerminal(token:)`` gives each terminal a box of its own.
    private(set) var prepared = PreparedToken()
    let client: HTTPClient

    /// `caCertificateFile`: the CA (PEM) an `https://` gateway's certificate must chain to.
    public init(baseURL: String, requestTimeout: Duration = .seconds(30), deviceToken: String? = nil,
                caCertificateFile: String? = nil) {
        var url = baseURL
        while url.hasSuffix("/") { url.removeLast() }
        self.baseURL = url
        self.requestTimeout = requestTimeout
        self.deviceToken = deviceToken
        client = HTTPClient(defaultTimeout: requestTimeout, caCertificateFile: caCertificateFile)
    }

    /// This gateway, sending `token` as the terminal's credential.
    public func with(deviceToken token: String?) -> RemoteGateway {
        var copy = self
        copy.deviceToken = token
        return copy
    }

    /// This gateway as one terminal's own: `token` on every request when given (else the one
    /// this copy validates), and a fresh box for the validated token, so a terminal that shares
    /// the gateway another terminal prepared never sends that terminal's token.
    public func forTerminal(token: String?) -> any Gateway {
        var copy = self
        copy.prepared = PreparedToken()
        if let token { copy.deviceToken = token }
        return copy
    }

    /// Checks a `--gateway` value: an `http://HOST:PORT` or `https://HOST:PORT` URL.
    public static func validate(url: String) -> String? {
        guard let u = URL(string: url), let scheme = u.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = u.host, !host.isEmpty else {
            return "the gateway must be an http://HOST:PORT or https://HOST:PORT URL"
        }
        return nil
    }

    // MARK: Exchange

    private func send<Answer: Decodable>(_ method: String, _ path: String, query: [(String, String)] = [],
                                         body: (any Encodable)? = nil, idempotent: Bool = false,
                                         options: GatewayRequestOptions,
                                         authorization: String? = nil,
                                         as: Answer.Type) async throws(GatewayError) -> Answer {
        var url = baseURL + path
        if !query.isEmpty {
            url += "?" + query.map { "\(Self.percentEncoded($0.0))=\(Self.percentEncoded($0.1))" }.joined(separator: "&")
        }
        let timeout = options.timeout ?? requestTimeout
        var headers: [(name: String, value: String)] = [
            ("Accept", "application/json"),
            ("X-Tapemu-Timeout-Ms", String(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)),
        ]
        if let credential = authorization ?? (deviceToken ?? prepared.token).map({ "Bearer \($0)" }) {
            headers.append(("Authorization", credential))
        }
        if let fault = options.fault {
            headers.append(("X-Tapemu-Fault", fault.name))
            if case .slow(let d) = fault {
                headers.append(("X-Tapemu-Slow-Ms", String(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)))
            }
        }
        var bytes: [UInt8] = []
        if let body {
            headers.append(("Content-Type", "application/json"))
            do {
                bytes = Array(try Wire.encoder.encode(body))
            } catch {
                throw GatewayError(.invalidRequest, "the request could not be encoded")
            }
        }
        let response: HTTPClientResponse
        do {
            response = try await client.send(HTTPClientRequest(method: method, url: url, headers: headers, body: bytes,
                                                               timeout: timeout, idempotent: method == "GET" || idempotent))
        } catch {
            throw Self.transportError(error)
        }
        if (200..<300).contains(response.status) {
            do {
                return try JSONDecoder().decode(Answer.self, from: Data(response.body))
            } catch {
                throw GatewayError(.serverError, "the gateway's HTTP \(response.status) answer is not the API's JSON (request \(response.header("X-Request-Id") ?? "?"))")
            }
        }
        throw Self.answerError(response)
    }

    /// Every byte but RFC 3986's unreserved characters as `%XX` (so `&`, `=`, `+`, `#` and `/`
    /// in an orderId stay inside its value).
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"):
                out.append(b)
            default:
                out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func transportError(_ error: HTTPClientError) -> GatewayError {
        switch error.kind {
        case .couldNotConnect:
            return GatewayError(.connectionLost, "\(error.reason) (nothing was recorded)")
        case .connectionClosed:
            return GatewayError(.connectionLost, "the connection dropped before the answer arrived: \(error.reason)")
        case .timedOut:
            return GatewayError(.timeout, error.reason)
        case .answerCutShort:
            return GatewayError(.connectionLost, "the answer was cut short: \(error.reason)")
        case .badAnswer:
            return GatewayError(.serverError, "the gateway's answer is not HTTP: \(error.reason)")
        case .cancelled:
            return GatewayError(.cancelled, "cancelled while the request was under way")
        case .invalidRequest:
            return GatewayError(.invalidRequest, error.reason)
        }
    }

    /// A non-2xx answer: the gateway's own code for a 4xx (or a ledger code it names), else a
    /// server error.
    static func answerError(_ response: HTTPClientResponse) -> GatewayError {
        let requestId = response.header("X-Request-Id") ?? "?"
        let decoded = try? JSONDecoder().decode(Wire.ErrorBody.self, from: Data(response.body))
        let message = decoded?.message ?? "HTTP \(response.status)"
        // The server's connection guard: the request was not whole within its deadline, so it was
        // never handled. A failure of the connection, not a refusal of the request.
        if response.status == 408 {
            return GatewayError(.connectionLost, "the gateway closed the request before it was complete (HTTP 408: \(message)); "
                                + "it was not handled (request \(requestId))")
        }
        if let name = decoded?.code, let code = GatewayError.Code(named: name) {
            if response.status >= 500 && code.isTransportFault {
                return GatewayError(.serverError, "the gateway answered HTTP \(response.status): \(message) (request \(requestId))")
            }
            return GatewayError(code, "\(message) (request \(requestId))")
        }
        if response.status >= 500 {
            return GatewayError(.serverError, "the gateway answered HTTP \(response.status): \(message) (request \(requestId))")
        }
        return GatewayError(.invalidRequest, "the gateway answered HTTP \(response.status): \(message) (request \(requestId))")
    }

    /// A terminal's token for `prepare(token:)`, as a merchant's backend gets one: the API key
    /// traded at `POST /v1/pos/auth-token` (MONEI's "Create POS Auth Token"). A terminal that
    /// must find its orders again with a later token names its `pointOfSaleId` every time.
    public func posAuthToken(apiKey: String, pointOfSaleId: String? = nil,
                             storeId: String? = nil) async throws(GatewayError) -> String {
        try await send("POST", "/v1/pos/auth-token",
                       body: GatewayService.POSAuthTokenRequest(pointOfSaleId: pointOfSaleId, storeId: storeId),
                       options: GatewayRequestOptions(), authorization: apiKey,
                       as: GatewayService.POSAuthTokenAnswer.self).token
    }

    /// A terminal token from the gateway's test controls (``GatewayService/registerTestControls(_:)``,
    /// `gateway serve --test-controls`): for `accountId` (nil: the merchant's account; another
    /// starts with its terms not accepted), already expired when `expired`. A gateway without
    /// test controls throws ``GatewayError/Code/testControlsOff``.
    public func testToken(apiKey: String, pointOfSaleId: String?, accountId: String? = nil,
                          expired: Bool = false) async throws(GatewayError) -> String {
        try await send("POST", "/admin/test/tokens",
                       body: GatewayService.TestTokenRequest(pointOfSaleId: pointOfSaleId, accountId: accountId, expired: expired),
                       options: GatewayRequestOptions(), authorization: apiKey,
                       as: GatewayService.TestTokenAnswer.self).token
    }

    /// Blocks SDK `version` through the gateway's test controls (its check then answers
    /// `sdkUpgradeRequired`). A gateway without test controls throws
    /// ``GatewayError/Code/testControlsOff``.
    public func blockSDKVersion(_ version: String, apiKey: String) async throws(GatewayError) {
        _ = try await send("POST", "/admin/test/blocked-sdk-versions",
                           body: GatewayService.BlockedSDKVersion(version: version, blocked: true), idempotent: true,
                           options: GatewayRequestOptions(), authorization: apiKey,
                           as: GatewayService.BlockedSDKVersion.self)
    }

    // MARK: Gateway

    public func authorize(_ request: AuthorisationRequest,
                          options: GatewayRequestOptions) async throws(GatewayError) -> AuthorisationResponse {
        // Idempotent by orderId (the ledger answers a repeat with the stored answer): it may go
        // over a kept connection, which libcurl may send it on again (README, "Kept connections").
        let answer = try await send("POST", "/terminal/v1/authorisations", body: Wire.authorisation(request),
                                    idempotent: true, options: options, as: Wire.AuthorisationAnswer.self)
        return Wire.response(answer)
    }

    public func charges(orderId: String, options: GatewayRequestOptions) async throws(GatewayError) -> [Payment] {
        guard !orderId.isEmpty else { throw GatewayError(.invalidRequest, "the orderId is empty") }
        let list = try await send("GET", "/terminal/v1/charges", query: [("orderId", orderId)], options: options,
                                  as: Wire.Items<Wire.PaymentItem>.self)
        return list.items.map(Wire.payment)
    }

    public func transactionList(_ filter: TransactionFilter,
                                options: GatewayRequestOptions) async throws(GatewayError) -> [TransactionSummary] {
        var query: [(String, String)] = []
        if let o = filter.orderId { query.append(("orderId", o)) }
        if let l = filter.panLastFour { query.append(("panLastFour", l)) }
        let list = try await send("GET", "/coreapi/v1/transactions", query: query, options: options,
                                  as: Wire.TransactionList.self)
        return list.transactionSummary.map(Wire.summary)
    }

    public func reverse(uniqueRef: String, options: GatewayRequestOptions) async throws(GatewayError) -> ReversalResponse {
        let a = try await send("POST", "/coreapi/v1/reversal", body: Wire.ReversalRequest(uniqueRef: uniqueRef, deviceType: nil),
                               options: options, as: Wire.ReversalAnswer.self)
        return ReversalResponse(reportedRef: a.uniqueRef, originalUniqueRef: a.originalUniqueRef, paymentId: a.paymentId,
                                orderId: a.orderId, amount: a.amount, currency: a.currency, statusCode: a.statusCode,
                                statusMessage: a.responseText)
    }

    public func refund(uniqueRef: String, amount: Int?,
                       options: GatewayRequestOptions) async throws(GatewayError) -> RefundResponse {
        let a = try await send("POST", "/terminal/v1/refunds", body: Wire.RefundRequest(uniqueRef: uniqueRef, amount: amount),
                               options: options, as: Wire.RefundAnswer.self)
        return RefundResponse(reportedRef: a.uniqueRef, refundPaymentId: a.refundPaymentId,
                              originalUniqueRef: a.originalUniqueRef, paymentId: a.paymentId, orderId: a.orderId,
                              amount: a.amount, currency: a.currency, refundedAmount: a.refundedAmount,
                              remainingAmount: a.remainingAmount, statusCode: a.statusCode, statusMessage: a.statusMessage)
    }

    public func validateToken(_ token: String, options: GatewayRequestOptions) async throws(GatewayError) -> TokenValidation {
        let a = try await send("POST", "/terminal/v1/tokens/validate", body: Wire.TokenRequest(token: token),
                               options: options, as: Wire.TokenAnswer.self)
        func claims() throws(GatewayError) -> TokenClaims {
            guard let account = a.accountId, let mode = a.mode, let iat = a.issuedAt, let exp = a.expiresAt,
                  let id = a.tokenId else {
                throw GatewayError(.serverError, "the gateway's token answer lacks its claims")
            }
            return TokenClaims(reportedAccount: account, mode: mode, issuedAt: Wire.date(iat), expiresAt: Wire.date(exp),
                               tokenId: id, pointOfSaleId: a.pointOfSaleId, storeId: a.storeId)
        }
        switch a.result {
        case "valid":
            let c = try claims()
            prepared.token = token
            return .valid(c)
        case "expired": return .expired(try claims())
        case "invalid": return .invalid(reason: a.reason ?? "not a token of this gateway")
        default: throw GatewayError(.serverError, "the gateway's token answer is not valid, expired or invalid")
        }
    }

    public func checkSDKVersion(_ version: String, options: GatewayRequestOptions) async throws(GatewayError) {
        _ = try await send("POST", "/terminal/v1/sdk-versions/check", body: Wire.SDKVersionRequest(version: version),
                           options: options, as: Wire.Empty.self)
    }

    public func termsAccepted(accountId: String, options: GatewayRequestOptions) async throws(GatewayError) -> Bool {
        try await send("GET", "/terminal/v1/terms", query: [("accountId", accountId)], options: options,
                       as: Wire.Terms.self).accepted
    }

    public func setTermsAccepted(_ accepted: Bool, accountId: String,
                                 options: GatewayRequestOptions) async throws(GatewayError) {
        _ = try await send("PUT", "/terminal/v1/terms", body: Wire.Terms(accountId: accountId, accepted: accepted),
                           options: options, as: Wire.Terms.self)
    }
}
