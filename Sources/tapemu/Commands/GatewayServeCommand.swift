import Foundation
import GatewayService
import HTTPServer
import PaymentGateway
import Synchronization

/// `tapemu gateway serve`: the emulated gateway as an HTTP service (terminal API, merchant REST
/// in MONEI's shapes, CoreAPI REST, admin faults) over the ledger in --data-dir.
struct GatewayServeCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway serve",
        abstract: "Serve the gateway over HTTP (terminal API, merchant REST, CoreAPI REST) until SIGINT or SIGTERM.",
        usage: "[--listen <host:port>] [--fault <fault>] [--max-body <bytes>] [--access-log] [--data-dir <dir> | --ledger <url>]",
        discussion: """
            Prints its URL and the merchant API key (kept in the ledger: the same on every run \
            on this --data-dir). Listens on loopback unless --listen names another address. \
            SIGINT or SIGTERM stops accepting, lets the requests under way finish, and exits 0. \
            Terminals use it with `tapemu pay --gateway URL` (also sale, resolve, charges).
            """,
        options: [
            OptionHelp("--listen <host:port>", "The IPv4 address and port (default 127.0.0.1:8080; port 0 takes a free one)."),
            OptionHelp("--fault <fault>", "A network fault on every authorisation: \(ServerFault.names.joined(separator: ", ")). POST /admin/faults arms one for N requests."),
            OptionHelp("--max-body <bytes>", "The largest request body (default 1048576); larger gets 413."),
            OptionHelp("--access-log", "One stderr line when a request arrives and one when it is answered (method, path, status, X-Request-Id; never a body)."),
            SharedLedgerServe.help,
        ] + GatewayOptions.help,
        exitCodes: GatewayOptions.creatingExitCodes + [(ExitCode.unavailable, "the address cannot be listened on")])

    var host: String
    var port: UInt16
    var fault: ServerFault?
    var maxBody: Int
    var accessLog: Bool
    var gateway: GatewayOptions
    /// `--ledger`: a PostgreSQL ledger shared with other servers (nil: the one in --data-dir).
    var ledgerURL: String?

    init(arguments: inout Arguments) throws(UsageError) {
        gateway = try GatewayOptions(arguments: &arguments)
        ledgerURL = try SharedLedgerServe.parse(&arguments)
        accessLog = arguments.flag("--access-log")
        let listen = try arguments.option("--listen", valueName: "<host:port>") ?? "127.0.0.1:8080"
        guard let colon = listen.lastIndex(of: ":"), let p = UInt16(listen[listen.index(after: colon)...]) else {
            throw UsageError("--listen must be HOST:PORT (e.g. 127.0.0.1:8080)")
        }
        host = String(listen[..<colon])
        guard !host.isEmpty else { throw UsageError("--listen must be HOST:PORT (e.g. 127.0.0.1:8080)") }
        port = p
        fault = try arguments.option("--fault", valueName: "<fault>", { (s: String) throws(UsageError) -> ServerFault in
            guard let f = ServerFault(name: s) else {
                throw UsageError("--fault must be one of \(ServerFault.names.joined(separator: ", "))")
            }
            return f
        })
        maxBody = try arguments.option("--max-body", valueName: "<bytes>", { (s: String) throws(UsageError) -> Int in
            guard let n = Int(s), n > 0 else { throw UsageError("--max-body must be a positive number of bytes") }
            return n
        }) ?? 1 << 20
        try arguments.finish()
    }

    /// Every route the server answers. To serve another handler (GraphQL, webhooks admin, the
    /// dashboard), mount it here — one line each, e.g. `router.mount("/graphql", handler)`.
    static func makeRouter(_ service: GatewayService) -> Router {
        let router = service.routes()
        return router
    }

    func run(_ console: Console) async throws -> Int32 {
        let service: GatewayService
        var delivery: Task<Void, Never>?
        do {
            if let ledgerURL {
                let shared = try SharedLedgerServe.open(ledgerURL)
                service = try GatewayService(gateway: shared, fault: fault)
                delivery = SharedLedgerServe.deliver(shared)
            } else {
                service = try GatewayService(gateway: gateway.openGateway(.create), fault: fault)
            }
        } catch let error as GatewayError {
            if ledgerURL != nil { throw CommandFailure(exitCode: ExitCode.ioError, "cannot open the gateway ledger: \(error.reason)") }
            throw gateway.failure(error, doing: "cannot open the gateway ledger")
        }
        let server: HTTPServer
        do {
            server = try HTTPServer(configuration: HTTPServerConfiguration(host: host, port: port, maxBodySize: maxBody),
                                    handler: accessLog ? AccessLog(inner: Self.makeRouter(service), console: console)
                                        : Self.makeRouter(service))
        } catch {
            throw CommandFailure(exitCode: ExitCode.unavailable, "cannot serve: \(error.reason)")
        }
        let stopped = Mutex(false)
        let trapHolder = Mutex<SignalTrap?>(nil)
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            trapHolder.withLock {
                $0 = SignalTrap {
                    let first = stopped.withLock { s -> Bool in
                        defer { s = true }
                        return !s
                    }
                    if first { c.resume() }
                }
            }
            console.print("tapemu gateway listening on \(server.url)")
            console.print("merchant API key: \(service.apiKey)")
            if let fault { console.print("fault on every authorisation: \(fault.name)") }
        }
        console.printError("tapemu: stopping (letting \(server.requestsInFlight) request(s) under way finish)")
        await server.stop()
        delivery?.cancel()
        trapHolder.withLock { $0?.remove() }
        console.printError("tapemu: stopped")
        return ExitCode.success
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
