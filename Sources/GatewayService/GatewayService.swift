import BERTLV
public import PaymentRules
public import Foundation
public import HTTPServer
public import PaymentGateway
import Synchronization
import Timing

/// The emulated gateway as a network service: an ``EmbeddedGateway`` (its durable ledger) behind
/// the routes of ``routes()``.
///
/// Every route takes the credential of its row in ``routes()`` (``RouteCredential``;
/// docs/GATEWAY.md's API table lists them): the merchant API key, a terminal's token (acting on its own orders
/// only: ``claim(_:_:)``, ``requireOwn(_:_:)``), the dashboard's session, or none.
///
/// The terminal-facing routes carry the request's ``GatewayRequestOptions``: `X-Tapemu-Fault`
/// (a ``GatewayFault`` name; `slow` takes `X-Tapemu-Slow-Ms`) is made a real network fault here
/// (`no-answer`: nothing recorded and no answer; `lost-answer`: recorded, then the connection
/// closes without an answer; `server-error`: HTTP 500, nothing recorded; `slow`: recorded,
/// answered late). An authorisation without one meets the amount's test trigger the same way.
public final class GatewayService: Sendable {
    public let gateway: EmbeddedGateway
    /// The merchant API key (`Authorization: <key>` on the merchant and admin routes). Kept in
    /// the ledger, so it survives restarts.
    public let apiKey: String
    /// The merchant account the API key is for: the account of every token
    /// `POST /v1/pos/auth-token` issues.
    public let accountId: String
    /// The account of a service that names none.
    public static let defaultAccountId = "acct_tapemu_test"
    let faults: FaultInjector
    /// How long past the client's timeout a `no-answer` request is held before its connection
    /// closes (so the client gives up first). Zero only where nobody waits (the fuzz harness).
    public let noAnswerGrace: Duration
    /// Seed 000 step 4's support desk (`GET /support/v1/orders/{orderId}`): how long after an
    /// order's last attempt it waits before saying that no payment was received.
    public let supportSettleWindow: Duration
    /// Whether the test controls (``RouteCredential/testControls``: `/admin/test/…`) answer:
    /// off unless the operator enables them (`gateway serve --test-controls`).
    public let testControls: Bool
    /// The deliverer of ``makeWebhookDeliverer(policy:timeout:pollInterval:faults:)``, for the
    /// admin route that changes its faults.
    let webhookDeliverer = Mutex<WebhookDeliverer?>(nil)
    /// The dashboard's session cookie value: random per process (``authenticate(_:for:)``).
    let dashboardSession: String = {
        var g = SystemRandomNumberGenerator()
        return Encoding.hex((0..<32).map { _ in UInt8.random(in: 0...255, using: &g) })
    }()

    /// Opens (or creates) the ledger in `dataDirectory`; `fault` hits every authorisation.
    public convenience init(dataDirectory: String, fault: ServerFault? = nil) throws(GatewayError) {
        try self.init(gateway: EmbeddedGateway(dataDirectory: dataDirectory), fault: fault)
    }

    public init(gateway: EmbeddedGateway, fault: ServerFault? = nil,
                noAnswerGrace: Duration = .milliseconds(500),
                accountId: String = GatewayService.defaultAccountId,
                supportSettleWindow: Duration = .seconds(60), testControls: Bool = false) throws(GatewayError) {
        self.gateway = gateway
        self.supportSettleWindow = supportSettleWindow
        self.testControls = testControls
        self.accountId = accountId
        self.noAnswerGrace = noAnswerGrace
        // The ledger's key (``MerchantAPIKey``): it also signs the webhooks.
        apiKey = gateway.ledger.merchantAPIKey
        faults = FaultInjector(standing: fault)
        // `kill-mid-batch`: dies inside a group commit of two or more, before its COMMIT.
        gateway.setBeforeBatchCommit { [faults] orderIds in
            let armed = faults.armed
            guard orderIds.count >= 2,
                  armed.standing == .killMidBatch || armed.counted.contains(where: { $0.fault == .killMidBatch })
            else { return }
            let line = "tapemu gateway: kill-mid-batch: SIGKILL before the commit of \(orderIds.count) authorisations: \(orderIds.joined(separator: " "))\n"
            _ = line.utf8CString.withUnsafeBufferPointer { write(STDOUT_FILENO, $0.baseAddress, $0.count - 1) }
            kill(getpid(), SIGKILL)
        }
    }

    /// Arms `fault` for the next `count` authorisations (nil: every one until cleared).
    public func armFault(_ fault: ServerFault, count: Int? = 1) { faults.arm(fault, count: count) }
    public func clearFaults() { faults.clear() }

    /// The service's routes, each with its credential. Mount more before serving:
    /// `var router = service.routes(); router.mount("/graphql", .apiKey, graphQL)`.
    public func routes() -> Router {
        var r = Router(authenticator: self)
        // Answered on the server's polling thread: no ledger, nothing to wait for.
        r.addImmediate("GET", "/health", .none) { _, _ in Self.healthAnswer }
        // Terminal API: the terminal's token; each acts on its own orders only.
        r.add("POST", "/terminal/v1/authorisations", .deviceToken) { [self] req, match in await authorise(req, match.claims!) }
        r.add("GET", "/terminal/v1/charges", .deviceToken) { [self] req, match in
            await terminal(req, .charges) { () throws(RouteError) in
                guard let orderId = req.queryValue("orderId"), !orderId.isEmpty else {
                    throw RouteError(400, "invalidRequest", "the query needs an orderId")
                }
                try await requireOwn(orderId, match.claims!)
                let items = try await call { () async throws(GatewayError) in
                    try await gateway.charges(orderId: orderId, options: Self.passThrough)
                }
                return Wire.json(Wire.Items(items: items.map(Wire.item)))
            }
        }
        r.add("POST", "/terminal/v1/refunds", .deviceToken) { [self] req, match in
            await terminal(req, .refund) { () throws(RouteError) in
                let body = try req.decode(Wire.RefundRequest.self)
                try await requireOwnTransaction(body.uniqueRef, match.claims!)
                let a = try await call { () async throws(GatewayError) in
                    try await gateway.refund(uniqueRef: body.uniqueRef, amount: body.amount, options: Self.passThrough)
                }
                return Wire.json(Wire.RefundAnswer(
                    uniqueRef: a.uniqueRef, refundPaymentId: a.refundPaymentId, originalUniqueRef: a.originalUniqueRef,
                    paymentId: a.paymentId, orderId: a.orderId, amount: a.amount, currency: a.currency,
                    refundedAmount: a.refundedAmount, remainingAmount: a.remainingAmount, statusCode: a.statusCode,
                    statusMessage: a.statusMessage))
            }
        }
        // A token's own check: reads no payment, and `prepare(token:)` asks it of a token that
        // may be expired (the answer says so).
        r.add("POST", "/terminal/v1/tokens/validate", .none) { [self] req, _ in
            await terminal(req, .validateToken) { () throws(RouteError) in
                let body = try req.decode(Wire.TokenRequest.self)
                let v = try await call { () async throws(GatewayError) in
                    try await gateway.validateToken(body.token, options: Self.passThrough)
                }
                switch v {
                case .valid(let c), .expired(let c):
                    let valid = if case .valid = v { true } else { false }
                    return Wire.json(Wire.TokenAnswer(result: valid ? "valid" : "expired", accountId: c.accountId,
                                                      mode: c.mode, issuedAt: Wire.millis(c.issuedAt),
                                                      expiresAt: Wire.millis(c.expiresAt), tokenId: c.tokenId,
                                                      pointOfSaleId: c.pointOfSaleId, storeId: c.storeId))
                case .invalid(let reason):
                    return Wire.json(Wire.TokenAnswer(result: "invalid", reason: reason))
                }
            }
        }
        // Asked before the token (prepare's first step); reads nothing.
        r.add("POST", "/terminal/v1/sdk-versions/check", .none) { [self] req, _ in
            await terminal(req, .checkSDKVersion) { () throws(RouteError) in
                let body = try req.decode(Wire.SDKVersionRequest.self)
                try await call { () async throws(GatewayError) in
                    try await gateway.checkSDKVersion(body.version, options: Self.passThrough)
                }
                return Wire.json(Wire.Empty())
            }
        }
        r.add("GET", "/terminal/v1/terms", .deviceToken) { [self] req, match in
            await terminal(req, .terms) { () throws(RouteError) in
                guard let account = req.queryValue("accountId") else {
                    throw RouteError(400, "invalidRequest", "the query needs an accountId")
                }
                try Self.requireAccount(account, match.claims!)
                let accepted = try await call { () async throws(GatewayError) in
                    try await gateway.termsAccepted(accountId: account, options: Self.passThrough)
                }
                return Wire.json(Wire.Terms(accountId: account, accepted: accepted))
            }
        }
        r.add("PUT", "/terminal/v1/terms", .deviceToken) { [self] req, match in
            await terminal(req, .terms) { () throws(RouteError) in
                let body = try req.decode(Wire.Terms.self)
                try Self.requireAccount(body.accountId, match.claims!)
                try await call { () async throws(GatewayError) in
                    try await gateway.setTermsAccepted(body.accepted, accountId: body.accountId, options: Self.passThrough)
                }
                return Wire.json(body)
            }
        }
        // CoreAPI REST (seeds 002/003): RestConnector signs "with: terminal", the terminal's
        // credential — its token; the terminal's own transactions only.
        r.add("GET", "/coreapi/v1/transactions", .deviceToken) { [self] req, match in
            await terminal(req, .transactionList) { () throws(RouteError) in
                let filter = TransactionFilter(orderId: req.queryValue("orderId"), panLastFour: req.queryValue("panLastFour"))
                let items = try await call { () async throws(GatewayError) in
                    try await gateway.transactionList(filter, options: Self.passThrough)
                }
                let own = try await ownOrders(Set(items.map(\.orderId)), match.claims!)
                return Wire.json(Wire.TransactionList(transactionSummary: items.filter { own.contains($0.orderId) }.map(Wire.transaction)))
            }
        }
        r.add("POST", "/coreapi/v1/reversal", .deviceToken) { [self] req, match in
            await terminal(req, .reversal) { () throws(RouteError) in
                let body = try req.decode(Wire.ReversalRequest.self)
                try await requireOwnTransaction(body.uniqueRef, match.claims!)
                let a = try await call { () async throws(GatewayError) in
                    try await gateway.reverse(uniqueRef: body.uniqueRef, options: Self.passThrough)
                }
                return Wire.json(Wire.ReversalAnswer(
                    code: TransactionCode.approved.rawValue, uniqueRef: a.uniqueRef, originalUniqueRef: a.originalUniqueRef,
                    paymentId: a.paymentId, orderId: a.orderId, amount: a.amount, currency: a.currency,
                    deviceType: body.deviceType, statusCode: a.statusCode, responseText: a.statusMessage))
            }
        }
        // Seed 000 step 4, "contact MONEI support with the orderId": support's answer from the
        // ledger (SupportDesk), once the settle window has passed since the last attempt it
        // knows of — the ledger's, and `lastAttempt` (unix ms) when the merchant tells it.
        r.add("GET", "/support/v1/orders/{orderId}", .apiKey) { [self] req, params in
            await respond(req) { () throws(RouteError) in
                guard let orderId = params["orderId"], !orderId.isEmpty else {
                    throw RouteError(400, "invalidRequest", "the path needs an orderId")
                }
                var lastAttempt: Date?
                if let text = req.queryValue("lastAttempt") {
                    guard let ms = Int64(text), ms >= 0 else {
                        throw RouteError(400, "invalidRequest", "lastAttempt must be unix milliseconds")
                    }
                    lastAttempt = Wire.date(ms)
                }
                let desk = SupportDesk(gateway: gateway, settleWindow: supportSettleWindow)
                let answer = try await call { () async throws(GatewayError) in
                    try await desk.ask(orderId: orderId, lastAttempt: lastAttempt, now: gateway.configuration.now())
                }
                return Wire.json(Wire.SupportAnswer(orderId: orderId, answer))
            }
        }
        // Merchant REST (MONEI's shapes): the API key.
        let merchant = MerchantAPI(service: self)
        merchant.register(&r)
        registerPOSAuthToken(&r)
        registerTestControls(&r)
        // Admin: the API key.
        r.add("GET", "/admin/faults", .apiKey) { [self] req, _ in
            await respond(req) { () throws(RouteError) in
                let armed = faults.armed
                return Wire.json(Wire.FaultList(
                    standing: armed.standing?.name,
                    counted: armed.counted.map { Wire.ArmedFault(fault: $0.fault.name, count: $0.remaining) }))
            }
        }
        r.add("POST", "/admin/faults", .apiKey) { [self] req, _ in
            await respond(req) { () throws(RouteError) in
                let body = try req.decode(Wire.ArmedFault.self)
                guard let fault = ServerFault(name: body.fault) else {
                    throw RouteError(400, "invalidRequest",
                                     "unknown fault \(body.fault); one of \(ServerFault.names.joined(separator: ", "))")
                }
                if let c = body.count, c < 1 { throw RouteError(400, "invalidRequest", "count must be 1 or more") }
                faults.arm(fault, count: body.count)
                return Wire.json(body)
            }
        }
        r.add("DELETE", "/admin/faults", .apiKey) { [self] req, _ in
            await respond(req) { () throws(RouteError) in
                faults.clear()
                return Wire.json(Wire.Empty())
            }
        }
        r.add("GET", "/admin/webhook-faults", .apiKey) { [self] req, _ in
            await respond(req) { () throws(RouteError) in
                let d = try runningDeliverer()
                return Wire.json(Wire.WebhookFaultList(faults: Self.faultNames(d.faults)))
            }
        }
        r.add("POST", "/admin/webhook-faults", .apiKey) { [self] req, _ in
            await respond(req) { () throws(RouteError) in
                let body = try req.decode(Wire.WebhookFaultList.self)
                let d = try runningDeliverer()
                do throws(GatewayError) {
                    d.faults = try WebhookFaults(parsing: body.faults)
                } catch {
                    throw RouteError(400, "invalidRequest", error.reason)
                }
                return Wire.json(Wire.WebhookFaultList(faults: Self.faultNames(d.faults)))
            }
        }
        r.add("DELETE", "/admin/webhook-faults", .apiKey) { [self] req, _ in
            await respond(req) { () throws(RouteError) in
                try runningDeliverer().faults = .none
                return Wire.json(Wire.WebhookFaultList(faults: ""))
            }
        }
        return r
    }

    // MARK: Plumbing

    func runningDeliverer() throws(RouteError) -> WebhookDeliverer {
        guard let d = webhookDeliverer.withLock({ $0 }) else {
            throw RouteError(409, "noWebhookDeliverer", "this service delivers no webhooks")
        }
        return d
    }

    /// `faults` as the list ``WebhookFaults/init(parsing:)`` reads.
    public static func faultNames(_ f: WebhookFaults) -> String {
        var names: [String] = []
        if f.duplicate { names.append("duplicate") }
        if f.outOfOrder { names.append("out-of-order") }
        if let d = f.delay { names.append("delay=\(d.components.seconds)s") }
        if let s = f.staleBy { names.append("stale=\(s.components.seconds)s") }
        if f.extraV0 { names.append("extra-v0") }
        return names.joined(separator: ",")
    }

    /// The options the service passes to its embedded gateway: faults are made real network
    /// faults here, so the gateway itself injects none (not an armed one, not a trigger's).
    static let passThrough = GatewayRequestOptions(timeout: nil, fault: GatewayFault.none)

    /// Runs a gateway request on the ledger's own threads (``Timing/BlockingExecutor/ledger``), never on the
    /// cooperative pool; its refusal becomes a typed route error.
    /// `GET /health`'s answer, encoded once.
    static let healthAnswer = Wire.json(["status": "ok"])

    func call<T>(_ body: () async throws(GatewayError) -> T) async throws(RouteError) -> T {
        do {
            return try await BlockingExecutor.ledger.run { () async throws(GatewayError) -> T in
                try await body()
            }
        } catch {
            throw RouteError(error)
        }
    }

    /// `handler` run on the ledger's threads (``Timing/BlockingExecutor/ledger``), for handlers that
    /// read the ledger synchronously inside `handle` (GraphQL, the dashboard): a slow database
    /// then never holds a thread of Swift's cooperative pool, which the other requests need to
    /// start at all (two threads on a 2-core machine).
    public func onLedgerThreads(_ handler: any HTTPHandler) -> any HTTPHandler {
        OnLedgerThreads(inner: handler)
    }

    /// Runs `body` and answers its value or its typed error as JSON.
    func respond(_ req: HTTPRequest, _ body: () async throws(RouteError) -> HTTPResponse) async -> HTTPResponse {
        do {
            return try await body()
        } catch {
            return Wire.errorResponse(status: error.status, code: error.code, message: error.message,
                                      requestId: req.requestId)
        }
    }

    /// Compares without an early exit: the time depends on the lengths only.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var diff = UInt8(truncatingIfNeeded: a.count ^ b.count)
        for i in 0..<max(a.count, b.count) {
            let x = i < a.count ? a[i] : 0
            let y = i < b.count ? b[i] : 0
            diff |= x ^ y
        }
        return diff == 0
    }

    /// The request's fault (`X-Tapemu-Fault`), if it names one.
    static func requestFault(_ req: HTTPRequest) throws(RouteError) -> GatewayFault? {
        guard let name = req.header("X-Tapemu-Fault") else { return nil }
        let slowMs = req.header("X-Tapemu-Slow-Ms").flatMap { Int($0) } ?? 5000
        guard let f = GatewayFault(name: name, slowDelay: .milliseconds(max(0, min(slowMs, 600_000)))) else {
            throw RouteError(400, "invalidRequest", "unknown X-Tapemu-Fault \(name); one of \(GatewayFault.names.joined(separator: ", "))")
        }
        return f
    }

    /// How long the client said it waits (`X-Tapemu-Timeout-Ms`), for `no-answer`.
    static func clientTimeout(_ req: HTTPRequest) -> Duration {
        .milliseconds(req.header("X-Tapemu-Timeout-Ms").flatMap { Int($0) }.map { max(0, min($0, 300_000)) } ?? 30_000)
    }

    /// A terminal request: its fault (from the request, else `triggerFault`) becomes a network
    /// fault around `body` — which records.
    func terminal(_ req: HTTPRequest, _ operation: GatewayOperation, triggerFault: GatewayFault? = nil,
                  serverFault: ServerFault? = nil,
                  _ body: () async throws(RouteError) -> HTTPResponse) async -> HTTPResponse {
        let fault: GatewayFault
        do {
            fault = try Self.requestFault(req) ?? triggerFault ?? GatewayFault.none
        } catch {
            return Wire.errorResponse(status: error.status, code: error.code, message: error.message, requestId: req.requestId)
        }
        if case .delay(let d)? = serverFault { try? await Task.sleep(for: d) }
        switch fault {
        case .noAnswer:
            // The request "never arrives": nothing recorded, no answer until the client gave up.
            try? await Task.sleep(for: Self.clientTimeout(req) + noAnswerGrace)
            return HTTPResponse(status: 504, delivery: .closeWithoutAnswer)
        case .serverError:
            return Wire.errorResponse(status: 500, code: "serverError",
                                      message: "injected fault: the gateway failed before the ledger; nothing was recorded",
                                      requestId: req.requestId)
        case .none, .lostAnswer, .slow:
            break
        }
        if serverFault == .errorBeforeCommit {
            return Wire.errorResponse(status: 503, code: "serverError",
                                      message: "injected fault: the gateway failed before the ledger; nothing was recorded",
                                      requestId: req.requestId)
        }
        var response = await respond(req, body)
        // After the commit (the ledger write returned: durable).
        switch fault {
        case .lostAnswer:
            return HTTPResponse(status: response.status, delivery: .closeWithoutAnswer)
        case .slow(let d):
            try? await Task.sleep(for: d)
        default:
            break
        }
        switch serverFault {
        case .closeAfterCommit?:
            response.delivery = .closeWithoutAnswer
        case .errorAfterCommit?:
            response = Wire.errorResponse(status: 500, code: "serverError",
                                          message: "injected fault: the gateway failed after the ledger write; the request may have been recorded",
                                          requestId: req.requestId)
        case .stallMidBody?:
            response.delivery = .stallMidBody(afterBytes: response.body.count / 2)
        case .killAfterCommit?:
            // The write is durable (synchronous=FULL); die before a byte of the answer leaves.
            kill(getpid(), SIGKILL)
        default:
            break
        }
        return response
    }

    func authorise(_ req: HTTPRequest, _ claims: TokenClaims) async -> HTTPResponse {
        let body: Wire.Authorisation
        do {
            body = try req.decode(Wire.Authorisation.self)
        } catch {
            return Wire.errorResponse(status: error.status, code: error.code, message: error.message, requestId: req.requestId)
        }
        // A request refused for its shape or its X-Tapemu-Fault header is refused before an armed
        // fault is taken: `POST /admin/faults` arms it for the next authorisations, not the next
        // requests, and a malformed one must not use it up.
        let pan: PAN, emv: [UInt8], psn: UInt8
        do throws(RouteError) {
            guard let p = PAN(body.card.pan) else {
                throw RouteError(400, "invalidRequest", "card.pan must be 12 to 19 digits")
            }
            guard let e = Encoding.unhex(body.card.emvData ?? "") else {
                throw RouteError(400, "invalidRequest", "card.emvData must be hex")
            }
            guard let n = UInt8(exactly: body.card.panSequenceNumber ?? 0) else {
                throw RouteError(400, "invalidRequest", "card.panSequenceNumber must be 0 to 99")
            }
            _ = try Self.requestFault(req)
            if let account = body.accountId { try Self.requireAccount(account, claims) }
            (pan, emv, psn) = (p, e, n)
        } catch {
            return Wire.errorResponse(status: error.status, code: error.code, message: error.message, requestId: req.requestId)
        }
        var request = AuthorisationRequest(
            orderId: body.orderId, amount: body.amount, currency: body.currency ?? "EUR",
            callbackUrl: body.callbackUrl,
            card: CardData(pan: pan, expiry: body.card.expiry, panSequenceNumber: psn,
                           brand: body.card.brand.map { CardBrand(rawValue: $0) }, emvData: emv),
            sdkVersion: body.sdkVersion, accountId: claims.accountId)
        request.terminalClaim = TerminalClaim(terminal: claims.terminal, tokenId: claims.tokenId)
        // The gateway's own rules for its shape (order id, amount, currency, callbackUrl, expiry,
        // EMV data): one it refuses goes on to that refusal (under the request's or the amount's
        // fault, as in process) but leaves the armed fault for a well-formed one.
        let wellFormed = (try? gateway.checkShape(request)) != nil
        var trigger = body.amount > 0 ? TestTriggers.trigger(forAmount: body.amount)?.fault : nil
        if case .slow = trigger { trigger = .slow(gateway.configuration.slowAnswerDelay) }
        return await terminal(req, .authorise, triggerFault: trigger,
                              serverFault: wellFormed ? faults.take() : nil) { () throws(RouteError) in
            // The order becomes this terminal's with its sale, in one savepoint of the group
            // commit (request.terminalClaim); another's order is refused first, as it always
            // was (a malformed one is refused by the gateway below and claims nothing).
            if wellFormed { try await requireClaimable(request.orderId, claims) }
            let answer = try await call { () async throws(GatewayError) in
                try await gateway.authorize(request, options: Self.passThrough)
            }
            return Wire.json(Wire.answer(answer))
        }
    }
}

extension Wire {
    struct ArmedFault: Codable {
        var fault: String
        /// How many authorisations; absent: every one until cleared.
        var count: Int?
    }
    struct WebhookFaultList: Codable {
        /// `duplicate,out-of-order,delay=30s,stale=600s,extra-v0`; empty: none.
        var faults: String
    }
    struct FaultList: Codable {
        var standing: String?
        var counted: [ArmedFault]
    }
}

/// ``GatewayService/onLedgerThreads(_:)``.
struct OnLedgerThreads: HTTPHandler {
    let inner: any HTTPHandler
    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        await BlockingExecutor.ledger.run { await inner.handle(request) }
    }
}
