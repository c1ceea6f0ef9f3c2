import Foundation
import PaymentGateway
import PostgresClient
import PostgresLedger

/// `tapemu gateway logs`: the served gateway's requests, answers and webhook attempts, read from
/// the ledger's request log (``RequestLogEntry``) — so it works from another process than the
/// server, and on a PostgreSQL ledger it shows every server's lines.
struct GatewayLogsCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway logs",
        abstract: "Show the served gateway's requests, answers and webhook attempts from its ledger; --follow prints new ones as they happen.",
        arguments: [Self.follow, Self.since, Self.poll, Self.ledger] + GatewayOptions.arguments + [Self.json],
        discussion: """
            Reads the request log that `tapemu gateway serve` keeps in its ledger (--data-dir, or \
            --ledger for a PostgreSQL ledger several servers share: every server's lines). One line \
            per request answered (time, status or --- when closed without an answer, method, path, \
            duration, order id, X-Request-Id, the error or the payment's status) and per webhook \
            delivery attempt (time, the receiver's status or "no answer", callback URL, event, \
            attempt, next try). Never a header, a body, a query string, a full card number or a \
            key. The ledger keeps the newest 10,000 lines. With --json: one JSON object per line \
            (id, time, kind, method, target, status, durationMs, requestId, orderId, detail). \
            --follow polls every --poll (default 1s) for lines after the last one printed, until \
            Ctrl-C (SIGINT) or SIGTERM, exit 0.
            """,
        exitCodes: GatewayOptions.exitCodes + [
            (ExitCode.unavailable, "the --ledger database does not answer"),
        ])

    /// `--json`: JSON lines, not one document (a log that --follow keeps writing has no end).
    static let json = Flag("--json", help: "Print one JSON object per line on stdout instead of text.")
    static let follow = Flag("--follow", help: "Keep printing new lines as they are written, until Ctrl-C.")
    static let since = Option<Date>(
        "--since", value: "<when>",
        help: "Only lines from this time on: an ISO 8601 time (2026-12-03T10:00:00Z) or a duration ago (30s, 10m, 2h).") {
        text, name throws(UsageError) in
        if let d = try? Date.ISO8601FormatStyle().parse(text) { return d }
        if let d = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return d }
        guard let first = text.first, first.isNumber else {
            throw UsageError("\(name) takes an ISO 8601 time (2026-12-03T10:00:00Z) or a duration ago (30s, 10m, 2h), not '\(text.prefix(64))'")
        }
        let ago = try Parse.duration(text, option: name)
        return Date().addingTimeInterval(-(Double(ago.components.seconds) + Double(ago.components.attoseconds) / 1e18))
    }
    static let poll = Option<Duration>.duration(
        "--poll", help: "With --follow: how often to look for new lines (default 1s).", positive: true)
    static let ledger = Option<String>(
        "--ledger", value: "<url>",
        help: "Read the PostgreSQL ledger (postgres://USER@HOST:PORT/DB) that `gateway serve --ledger` servers share, instead of --data-dir.") {
        text, name throws(UsageError) in
        guard PostgresURL.isPostgres(text) else { throw UsageError("\(name) must be a postgres://USER@HOST:PORT/DB URL") }
        return text
    }

    var following: Bool
    var since: Date?
    var pollInterval: Duration
    var ledgerURL: String?
    var gateway: GatewayOptions
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(json: arguments.isSet(Self.json))
        gateway = try GatewayOptions(arguments: &arguments)
        following = arguments.isSet(Self.follow)
        since = try arguments.value(Self.since)
        ledgerURL = try arguments.value(Self.ledger)
        let poll = try arguments.value(Self.poll)
        pollInterval = poll ?? .seconds(1)
        try arguments.finish()
        if poll != nil && !following { throw UsageError("--poll goes with --follow") }
    }

    /// One line of `--json`.
    struct Line: Encodable {
        var id: Int64
        var time: String
        var kind: String
        var method: String
        var target: String
        var status: Int?
        var durationMs: Int
        var requestId: String?
        var orderId: String?
        var detail: String?

        init(_ e: RequestLogEntry) {
            id = e.id
            time = e.at.formatted(GatewayLogsCommand.timeFormat)
            kind = e.kind.rawValue
            method = e.method
            target = e.target
            status = e.status
            durationMs = e.durationMs
            requestId = e.requestId
            orderId = e.orderId
            detail = e.detail
        }

        func encode(to encoder: any Encoder) throws {
            // Every key on every line (null when absent): a line's shape never depends on its content.
            enum K: String, CodingKey { case id, time, kind, method, target, status, durationMs, requestId, orderId, detail }
            var c = encoder.container(keyedBy: K.self)
            try c.encode(id, forKey: .id)
            try c.encode(time, forKey: .time)
            try c.encode(kind, forKey: .kind)
            try c.encode(method, forKey: .method)
            try c.encode(target, forKey: .target)
            try c.encode(status, forKey: .status)
            try c.encode(durationMs, forKey: .durationMs)
            try c.encode(requestId, forKey: .requestId)
            try c.encode(orderId, forKey: .orderId)
            try c.encode(detail, forKey: .detail)
        }
    }

    static let timeFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// The text line of `e`:
    /// `2026-12-03T13:40:01.123Z  201 POST /terminal/v1/authorisations 12ms order o-1 [req-…] SUCCEEDED E000 …` /
    /// `2026-12-03T13:40:01.456Z  webhook 500 POST http://127.0.0.1:9000/hook 3ms order o-1 payment.succeeded webhook 1 attempt 1: HTTP 500, next try …`.
    static func text(_ e: RequestLogEntry) -> String {
        var line = e.at.formatted(timeFormat) + "  "
        switch e.kind {
        case .request: line += e.status.map(String.init) ?? "---"
        case .webhook: line += "webhook " + (e.status.map(String.init) ?? "no answer")
        }
        line += " \(e.method) \(e.target) \(e.durationMs)ms"
        if let o = e.orderId { line += " order \(o)" }
        if let r = e.requestId { line += " [\(r)]" }
        if let d = e.detail { line += " \(d)" }
        return line
    }

    func run(_ console: Console) async throws -> Int32 {
        let store = try openLedger()
        guard following else {
            _ = try await Self.printLines(store, after: 0, since: since, json: output.json, console: console)
            return ExitCode.success
        }
        let stop = WatchStop()
        return try await SignalTrap.whileRunning(onSignal: { stop.cancel() }) { () async throws -> Int32 in
            let (since, json, poll) = (self.since, output.json, pollInterval)
            let task = Task { () async throws -> Void in
                try await Self.follow(store, since: since, json: json, poll: poll, clock: ContinuousClock(), console: console)
            }
            stop.set(task)
            let result = await withTaskCancellationHandler { await task.result } onCancel: { stop.cancel() }
            switch result {
            case .success: return ExitCode.success
            case .failure(let error) where error is CancellationError: return ExitCode.success
            case .failure(let error): throw error
            }
        }
    }

    func openLedger() throws -> any LedgerStore {
        if let ledgerURL {
            do throws(GatewayError) {
                return try PostgresLedger(url: ledgerURL, connections: 1)
            } catch {
                throw CommandFailure(exitCode: ExitCode.of(error), "cannot open the gateway ledger: \(error.reason)")
            }
        }
        return try gateway.openGateway(.readOnly).ledger
    }

    /// Prints the lines after `after` (all of them, a page at a time); returns the last id printed.
    static func printLines(_ store: any LedgerStore, after: Int64, since: Date?, json: Bool, console: Console) async throws -> Int64 {
        var cursor = after
        while true {
            let rows: [RequestLogEntry]
            do throws(GatewayError) {
                rows = try store.requestLog(after: cursor, since: since, limit: 500)
            } catch {
                throw CommandFailure(exitCode: ExitCode.ioError, "cannot read the request log: \(error.reason)")
            }
            for e in rows {
                console.print(json ? try JSONOutput.line(Line(e)) : text(e))
                cursor = e.id
            }
            if rows.count < 500 { return cursor }
        }
    }

    /// `--follow`: prints what is there, then every `poll` on `clock` what came after the last
    /// line printed, until cancelled.
    static func follow<C: Clock>(_ store: any LedgerStore, since: Date?, json: Bool, poll: Duration, clock: C,
                                 console: Console) async throws where C.Duration == Duration {
        var cursor: Int64 = 0
        while true {
            cursor = try await printLines(store, after: cursor, since: since, json: json, console: console)
            try await clock.sleep(for: poll)
        }
    }
}
