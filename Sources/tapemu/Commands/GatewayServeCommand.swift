import Foundation
import GatewayService
import GatewayWeb
import HTTPServer
import PaymentGateway
import PostgresClient
import PostgresLedger

/// `tapemu gateway serve`: the emulated gateway as an HTTP service (terminal API, merchant REST
/// in MONEI's shapes, CoreAPI REST, admin faults) over the ledger in --data-dir, or a PostgreSQL
/// ledger several servers share (--ledger).
struct GatewayServeCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway serve",
        abstract: "Serve the gateway over HTTP (terminal API, merchant REST, CoreAPI REST, GraphQL, dashboard) and deliver its webhooks until SIGINT or SIGTERM.",
        arguments: [Self.listen, Self.tlsCert, Self.tlsKey, Self.insecureListen, Self.fault, Self.webhookFault, Self.maxBody,
                    Self.accessLog, Self.ledger, Self.ledgerWait, Self.supportSettleWindow, Self.testControls] + GatewayOptions.arguments,
        discussion: """
            Prints its URL, the merchant API key (kept in the ledger: the same on every run \
            on this --data-dir; it also signs every webhook, as MONEI signs with the API key) and \
            the dashboard's URL, which carries the key once (opening it sets an HttpOnly, \
            SameSite=Strict session cookie). The merchant REST under /v1 is MONEI's as its official \
            SDKs call it (payments get, create with SALE or AUTH, refund, capture, cancel). Every \
            route that reads payments or moves money takes a credential: the API key (merchant \
            REST, GraphQL, admin, POST /v1/pos/auth-token) or a terminal's token from \
            POST /v1/pos/auth-token (terminal and CoreAPI routes; a terminal acts on its own orders \
            only). Listens on loopback unless --listen names another address: then it serves HTTPS \
            with --tls-cert and --tls-key, or plain HTTP only with --insecure-listen (said on every \
            start); the dashboard is served on loopback only. Delivers each webhook of the \
            outbox to its callbackUrl, signed, retried with backoff (also those a previous run left), \
            one stderr line per attempt. SIGINT or SIGTERM stops accepting, lets the requests under \
            way finish, stops delivering (what is undelivered stays in the ledger for the next run), \
            and exits 0. Terminals use it with `tapemu pay --gateway URL --api-key KEY` (also sale, \
            resolve, charges; --cacert FILE for an https:// gateway whose CA is not the system's).
            """,
        exitCodes: GatewayOptions.creatingExitCodes + [
            (ExitCode.unavailable, "the address cannot be listened on, the TLS certificate and key cannot be served, or the --ledger database did not answer within --ledger-wait"),
            (ExitCode.noInput, "the --tls-cert or --tls-key file cannot be read"),
        ])

    /// `--listen HOST:PORT`.
    struct ListenAddress: Sendable, Hashable {
        var host: String
        var port: UInt16
    }

    static let listen = Option<ListenAddress>(
        "--listen", value: "<host:port>",
        help: "The IPv4 address and port (default 127.0.0.1:8080; port 0 takes a free one).") { text, name throws(UsageError) in
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]),
              colon > text.startIndex else {
            throw UsageError("\(name) must be HOST:PORT (e.g. 127.0.0.1:8080)")
        }
        return ListenAddress(host: String(text[..<colon]), port: port)
    }
    static let tlsCert = Option<String>(
        "--tls-cert", value: "<file>",
        help: "Serve HTTPS with this PEM certificate (chain); needs --tls-key. Required to --listen on an address other than loopback (or --insecure-listen).")
    static let tlsKey = Option<String>("--tls-key", value: "<file>", help: "The PEM private key of --tls-cert.")
    static let insecureListen = Flag(
        "--insecure-listen",
        help: "Allow plain HTTP on an address other than loopback: API key, tokens and payments cross the network readable by anyone on it (said on every start).")
    static let fault = Option<ServerFault>(
        "--fault", value: "<fault>",
        help: "A network fault on every authorisation: \(ServerFault.names.joined(separator: ", ")). POST /admin/faults arms one for N requests.") {
        text, name throws(UsageError) in
        guard let f = ServerFault(name: text) else {
            throw UsageError("\(name) must be one of \(ServerFault.names.joined(separator: ", "))")
        }
        return f
    }
    static let webhookFault = Option<WebhookFaults>(
        "--webhook-fault", value: "<list>",
        help: "Webhook faults for receivers to survive: duplicate, out-of-order, delay=Ns, stale=Ns, extra-v0 (comma-separated). POST /admin/webhook-faults changes them.") {
        text, name throws(UsageError) in
        do throws(GatewayError) {
            return try WebhookFaults(parsing: text)
        } catch {
            throw UsageError("\(name): \(error.reason)")
        }
    }
    static let maxBody = Option<Int>.integer(
        "--max-body", value: "<bytes>", help: "The largest request body (default 1048576); larger gets 413.", in: 1...Int.max)
    /// `--ledger postgres://…`: a PostgreSQL ledger several servers share (claims and leases keep
    /// one server on each webhook of the shared outbox at a time).
    static let ledger = Option<String>(
        "--ledger", value: "<url>",
        help: "Keep the ledger in PostgreSQL (postgres://USER@HOST:PORT/DB) shared by several gateway servers, instead of --data-dir; each server also delivers the shared webhook outbox.") {
        text, name throws(UsageError) in
        guard PostgresURL.isPostgres(text) else { throw UsageError("\(name) must be a postgres://USER@HOST:PORT/DB URL") }
        return text
    }
    /// How long `--ledger` waits for PostgreSQL at start (a database started with the server
    /// may come up after it): retried with a growing pause, each retry logged, then exit 69.
    static let ledgerWait = Option<Duration>.duration(
        "--ledger-wait", help: "How long to wait for the --ledger database at start (default 30s; 0s: one try), retrying with a logged line; then exit 69.")
    static let supportSettleWindow = Option<Duration>.duration(
        "--support-settle-window",
        help: "How long after an order's last attempt GET /support/v1/orders/{orderId} waits before answering noPaymentReceived (default 60s).")
    /// `--test-controls`: the routes a test run needs to make seed 000's setup errors on a
    /// served gateway (``GatewayService/testControls``); off by default.
    static let testControls = Flag(
        "--test-controls",
        help: "Serve the test controls under /admin/test/ (with the API key): an expired token, a token of another account (its terms not accepted), a blocked SDK version — what `tapemu scenarios run --gateway` needs for tokenExpired, termsDeclined and sdkUpgradeRequired. Off: 403 testControlsOff.")
    static let accessLog = Flag(
        "--access-log",
        help: "One stderr line when a request arrives and one when it is answered (method, path, status, X-Request-Id; never a body).")
    #if TAPEMU_TEST_HOOKS
    /// Not in the help, and only in builds with test hooks: the tests' short retry schedule.
    static let testWebhookSchedule = Option<WebhookSchedule>(
        "--test-webhook-schedule", value: "<spec>", help: "") { text, _ throws(UsageError) in
        try WebhookSchedule(parsing: text)
    }
    #endif

    var listen: ListenAddress
    var tlsCert: String?
    var tlsKey: String?
    var insecureListen: Bool
    var fault: ServerFault?
    var maxBody: Int
    var accessLog: Bool
    var webhookFaults: WebhookFaults
    var webhookSchedule: WebhookSchedule
    var gateway: GatewayOptions
    /// `--ledger`: a PostgreSQL ledger shared with other servers (nil: the one in --data-dir).
    var ledgerURL: String?
    var ledgerWait: Duration
    var supportSettleWindow: Duration
    var testControls: Bool

    init(arguments: inout Arguments) throws(UsageError) {
        gateway = try GatewayOptions(arguments: &arguments)
        ledgerURL = try arguments.value(Self.ledger)
        ledgerWait = try arguments.value(Self.ledgerWait, default: .seconds(30))
        supportSettleWindow = try arguments.value(Self.supportSettleWindow, default: .seconds(60))
        accessLog = arguments.isSet(Self.accessLog)
        testControls = arguments.isSet(Self.testControls)
        listen = try arguments.value(Self.listen, default: ListenAddress(host: "127.0.0.1", port: 8080))
        tlsCert = try arguments.value(Self.tlsCert)
        tlsKey = try arguments.value(Self.tlsKey)
        insecureListen = arguments.isSet(Self.insecureListen)
        fault = try arguments.value(Self.fault)
        maxBody = try arguments.value(Self.maxBody, default: 1 << 20)
        webhookFaults = try arguments.value(Self.webhookFault, default: .none)
        #if TAPEMU_TEST_HOOKS
        webhookSchedule = try arguments.value(Self.testWebhookSchedule, default: WebhookSchedule())
        #else
        webhookSchedule = WebhookSchedule()
        #endif
        try arguments.finish()
    }

    /// The stderr line of one delivery attempt (never the body or the signature):
    func validate() throws(UsageError) {
        if (tlsCert == nil) != (tlsKey == nil) {
            throw UsageError("--tls-cert and --tls-key go together (a certificate and its private key)")
        }
        if tlsCert != nil && insecureListen {
            throw UsageError("--insecure-listen is for plain HTTP; with --tls-cert the server is not insecure (drop one)")
        }
        if !Self.isLoopback(listen.host) && tlsCert == nil && !insecureListen {
            throw UsageError("--listen \(listen.host):\(listen.port) is not loopback: anyone on the network could read the API key, tokens and payments; give --tls-cert FILE --tls-key FILE (HTTPS), or --insecure-listen to serve plain HTTP anyway")
        }
    }

    /// `tapemu: webhook 3 (order o-1) attempt 2: HTTP 500, next try 2026-…` /
    /// `…: delivered (HTTP 200)` / `…: no answer (couldNotConnect: …), gave up`.
    static func attemptLine(_ w: Webhook, _ a: WebhookAttemptRecord) -> String {
        let number = a.isExtraCopy ? "\(w.attempts + 1) (extra copy)" : "\(w.attempts + 1)"
        var line = "tapemu: webhook \(w.id) (order \(w.orderId)) attempt \(number): "
        if a.delivered {
            line += "delivered (HTTP \(a.status ?? 0))"
        } else if let status = a.status {
            line += "HTTP \(status)"
        } else {
            line += "no answer (\(a.error ?? "unknown"))"
        }
        if !a.delivered && !a.isExtraCopy {
            line += a.nextAttemptAt.map { ", next try \($0.formatted(.iso8601))" } ?? (a.status.map { (200...299).contains($0) } == true ? "" : ", gave up")
        }
        if let f = a.fault { line += " [fault: \(f)]" }
        return line
    }

    /// True for an address only this machine reaches (the rule the loopback server applies to
    /// the `Host` of its requests).
    static func isLoopback(_ host: String) -> Bool { LoopbackHostGuard.isLoopback(host: host) }

    /// Every route the server answers. To serve another handler (GraphQL, webhooks admin, the
    /// dashboard), mount it here — one line each, e.g. `router.mount("/graphql", handler)`.
    ///
    /// GraphQL takes the merchant API key; the dashboard (its session cookie or the key) is
    /// mounted only when `dashboard` is true (the server listens on loopback). Both read the
    /// ledger inside their handler, so they run on the ledger's threads
    /// (``GatewayService/onLedgerThreads(_:)``). The router checks each credential.
    static func makeRouter(_ service: GatewayService, dashboard: Bool = true) -> Router {
        var router = service.routes()
        let web = service.onLedgerThreads(GatewayWebRoutes(ledger: service.gateway.ledger, gateway: service.gateway))
        router.mount("/graphql", .apiKey, web)
        if dashboard {
            router.mount("/", .dashboard, web)
            router.mount("/dashboard/*", .dashboard, web)
        }
        return router
    }

    /// What the server runs for a listener on `host`: ``makeRouter(_:dashboard:)``, and on
    /// loopback, where a web page in the tester's browser could reach it by rebinding its own name
    /// to 127.0.0.1, behind ``LoopbackHostGuard``.
    static func makeHandler(_ service: GatewayService, listenHost host: String) -> any HTTPHandler {
        let loopback = isLoopback(host)
        let router = makeRouter(service, dashboard: loopback)
        return loopback ? LoopbackHostGuard(inner: router) : router
    }

    /// Opens the PostgreSQL ledger, retrying while the database is not there (a connect
    /// failure) for up to `wait`: pauses of 0.25 s doubling to 5 s, each retry one stderr line.
    /// Past `wait`: exit 69 (a service that is not there). Any other failure: exit 74 at once.
    static func openShared<C: Clock>(_ url: String, wait: Duration, clock: C, console: Console,
                                     open: (String) throws(GatewayError) -> EmbeddedGateway = { u throws(GatewayError) in
                                         try EmbeddedGateway.shared(ledgerURL: u)
                                     }) async throws -> EmbeddedGateway where C.Duration == Duration {
        let start = clock.now
        var pause = Duration.milliseconds(250)
        var attempt = 1
        while true {
            do throws(GatewayError) {
                return try open(url)
            } catch where error.code == .connectionLost {
                let waited = start.duration(to: clock.now)
                guard waited + pause <= wait else {
                    throw CommandFailure.unavailable("the ledger database \(PostgresURL.redacted(url)) did not answer within \(wait) (\(attempt) attempt\(attempt == 1 ? "" : "s")): \(error.reason)")
                }
                console.printError("tapemu: the ledger database \(PostgresURL.redacted(url)) is not answering (\(error.reason)); attempt \(attempt + 1) in \(pause), waiting up to \(wait)")
                try await clock.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
                attempt += 1
            } catch {
                throw CommandFailure.ioError("cannot open the gateway ledger: \(error.reason)")
            }
        }
    }

    func run(_ console: Console) async throws -> Int32 {
        // One service and one deliverer (below) whichever the ledger: --data-dir's SQLite or
        // --ledger's PostgreSQL.
        let opened: EmbeddedGateway
        if let ledgerURL {
            opened = try await Self.openShared(ledgerURL, wait: ledgerWait, clock: ContinuousClock(), console: console)
        } else {
            opened = try gateway.openGateway(.create)
        }
        let service: GatewayService
        do throws(GatewayError) {
            service = try GatewayService(gateway: opened, fault: fault, supportSettleWindow: supportSettleWindow,
                                         testControls: testControls)
        } catch {
            guard ledgerURL == nil else {
                throw CommandFailure.ioError("cannot open the gateway ledger: \(error.reason)")
            }
            throw gateway.failure(error, doing: "cannot open the gateway ledger")
        }
        let dashboard = Self.isLoopback(listen.host)
        // Every request and its answer go to the ledger's request log (`tapemu gateway logs`).
        let router = RequestLogRecorder(inner: Self.makeHandler(service, listenHost: listen.host),
                                        ledger: service.gateway.ledger, apiKey: service.apiKey)
        var tls: HTTPServerTLS?
        if let tlsCert, let tlsKey {
            do {
                tls = try HTTPServerTLS(certificateFile: tlsCert, privateKeyFile: tlsKey)
            } catch {
                throw CommandFailure.noInput(error.reason)
            }
        }
        let server: HTTPServer
        do {
            var configuration = HTTPServerConfiguration(host: listen.host, port: listen.port, maxBodySize: maxBody)
            configuration.tls = tls
            server = try HTTPServer(configuration: configuration,
                                    handler: accessLog ? AccessLog(inner: router, console: console) : router)
        } catch {
            throw CommandFailure.unavailable("cannot serve: \(error.reason)")
        }
        let deliverer = service.makeWebhookDeliverer(policy: webhookSchedule.policy, timeout: webhookSchedule.timeout,
                                                     pollInterval: webhookSchedule.pollInterval, faults: webhookFaults,
                                                     onAttempt: { w, a in console.printError(Self.attemptLine(w, a)) })
        let delivery = Task { await service.runWebhookDelivery(deliverer) }
        // Served until SIGINT or SIGTERM ends the stream.
        let (stopped, stop) = AsyncStream<Void>.makeStream()
        await SignalTrap.whileRunning(onSignal: { stop.finish() }) {
            console.print("tapemu gateway listening on \(server.url)")
            if insecureListen && tls == nil {
                console.printError("tapemu: WARNING: --insecure-listen: plain HTTP on \(listen.host):\(server.port), not loopback: the API key, terminal tokens and every payment read or moved cross the network readable and changeable by anyone on it")
            }
            console.print("merchant API key: \(service.apiKey)")
            console.print("terminal tokens: POST \(server.url)/v1/pos/auth-token (Authorization: <merchant API key>)")
            console.print(dashboard ? "dashboard: \(server.url)/dashboard?key=\(service.apiKey)"
                                    : "dashboard: off (served on loopback only; --listen 127.0.0.1:PORT)")
            console.print("graphql: POST \(server.url)/graphql (Authorization: <merchant API key>)")
            let faultList = GatewayService.faultNames(webhookFaults)
            console.print("webhooks: delivered to each payment's callbackUrl" + (faultList.isEmpty ? "" : " (faults: \(faultList))"))
            if let fault { console.print("fault on every authorisation: \(fault.name)") }
            if testControls {
                console.print("test controls: on (POST \(server.url)/admin/test/tokens, POST …/admin/test/blocked-sdk-versions; Authorization: <merchant API key>)")
            }
            for await _ in stopped {}
            console.printError("tapemu: stopping (letting \(server.requestsInFlight) request(s) under way finish)")
            await server.stop()
            await router.flush()
            // After the last request: its webhook is in the outbox for the next run if not sent now.
            delivery.cancel()
            await delivery.value
        }
        console.printError("tapemu: stopped")
        return ExitCode.success
    }
}

/// The webhook retry schedule and poll period: the documented ones, or the tests' short ones
/// (`--test-webhook-schedule initial=50ms,max=200ms,attempts=4,poll=50ms,timeout=2s,jitter=0`).
struct WebhookSchedule {
    var policy = WebhookRetryPolicy.standard
    var pollInterval: Duration = .seconds(1)
    var timeout: Duration = .seconds(10)

    init() {}

    init(parsing text: String) throws(UsageError) {
        let option = "--test-webhook-schedule"
        for item in text.split(separator: ",") {
            let kv = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else { throw UsageError("\(option) takes name=value items, not '\(item)'") }
            switch kv[0] {
            case "initial": policy.initialDelay = try Parse.duration(kv[1], option: option)
            case "max": policy.maxDelay = try Parse.duration(kv[1], option: option)
            case "attempts": policy.maxAttempts = try Parse.integer(kv[1], option: option, in: 1...1000)
            case "jitter":
                guard let j = Double(kv[1]), (0...1).contains(j) else { throw UsageError("\(option): jitter is 0 to 1") }
                policy.jitter = j
            case "poll": pollInterval = try Parse.duration(kv[1], option: option)
            case "timeout": timeout = try Parse.duration(kv[1], option: option)
            default: throw UsageError("\(option): unknown item \(kv[0]) (initial, max, attempts, jitter, poll, timeout)")
            }
        }
    }
}

/// `--access-log`: a line on stderr when a request arrives and when it is answered.
struct AccessLog: HTTPHandler {
    let inner: any HTTPHandler
    let console: Console

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        console.printError("tapemu: → \(request.method) \(request.path) [\(request.requestId)]")
        let response = await inner.handle(request)
        let how: String
        switch response.delivery {
        case .complete: how = ""
        case .closeWithoutAnswer: how = " (closed without an answer)"
        case .stallMidBody(let n): how = " (stalled after \(n) body bytes)"
        }
        console.printError("tapemu: ← \(response.status) \(request.method) \(request.path) [\(request.requestId)]\(how)")
        return response
    }
}
