import BERTLV
import PaymentRules
import Foundation
@testable import GatewayService
import HTTPClient
import HTTPServer
import PaymentGateway
import Testing
import TestSupport
import Timing
@testable import tapemu

/// A served gateway as `gateway serve` runs it: its routes behind the request log recorder.
private struct LoggedService {
    let dir: String
    let service: GatewayService
    let recorder: RequestLogRecorder
    let server: HTTPServer
    var url: String { server.url }

    init(bound: Int = RequestLogEntry.defaultBound) throws {
        dir = try temporaryDirectory()
        service = try GatewayService(dataDirectory: dir)
        recorder = RequestLogRecorder(inner: GatewayServeCommand.makeHandler(service, listenHost: "127.0.0.1"),
                                      ledger: service.gateway.ledger, apiKey: service.apiKey, bound: bound)
        server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(1)), handler: recorder)
    }

    func send(_ method: String, _ path: String, json: String? = nil, headers: [(name: String, value: String)] = []) async throws -> HTTPClientResponse {
        var h = headers
        if json != nil { h.append(("Content-Type", "application/json")) }
        return try await HTTPClient().send(HTTPClientRequest(method: method, url: url + path, headers: h,
                                                             body: Array((json ?? "").utf8)))
    }
}

@Suite("tapemu gateway logs: the request log in the ledger", .temporaryDirectories)
struct GatewayLogsTests {
    static let fullPAN = "4761739001010010"

    @Test("every request is a line after its answer: status, method, path without query, order id, request id, error; never the key, a token or a full PAN")
    func requestsAreLogged() async throws {
        let live = try LoggedService()
        let device = try temporaryDirectory()
        let pay = await runCLI(["pay", "--amount", "1250", "--order-id", "log-1", "--gateway", live.url,
                                "--api-key", live.service.apiKey, "--data-dir", device, "--json"])
        #expect(pay.status == 0, "\(pay.err)")
        // The dashboard URL carries the key once; a wrong key's refusal; a card number in a path.
        _ = try await live.send("GET", "/dashboard?key=\(live.service.apiKey)")
        _ = try await live.send("GET", "/v1/payments?orderId=log-1", headers: [("Authorization", "wrong")])
        _ = try await live.send("GET", "/v1/payments/\(Self.fullPAN)", headers: [("Authorization", live.service.apiKey)])
        await live.recorder.flush()

        let lines = try live.service.gateway.ledger.requestLog(after: 0, since: nil, limit: 100)
        let sale = try #require(lines.first { $0.target == "/terminal/v1/authorisations" })
        #expect(sale.kind == .request && sale.method == "POST" && sale.status == 200 && sale.orderId == "log-1")
        #expect(sale.requestId?.isEmpty == false)
        #expect(sale.detail?.contains("SUCCEEDED") == true || sale.detail?.contains("approved") == true, "\(sale)")
        let dashboard = try #require(lines.first { $0.target == "/dashboard" })
        #expect(dashboard.status == 303)
        let refused = try #require(lines.first { $0.target == "/v1/payments" && $0.status == 401 })
        #expect(refused.detail?.contains("unauthorized") == true)
        #expect(lines.map(\.id) == lines.map(\.id).sorted() && Set(lines.map(\.id)).count == lines.count)
        let everything = lines.map { "\($0)" }.joined(separator: "\n")
        #expect(!everything.contains(live.service.apiKey), "the API key in the request log")
        #expect(!everything.contains(Self.fullPAN) && !everything.contains("4012888888881881"), "a full PAN in the request log")
        #expect(!everything.contains("key="), "a query string in the request log")
        await live.server.stop()
    }

    @Test("a webhook attempt is a line, written in the attempt's own transaction; the callback URL without its query or user info")
    func webhookAttemptIsLogged() async throws {
        let dir = try temporaryDirectory()
        let gateway = try EmbeddedGateway(configuration: .init(dataDirectory: dir, issuerKeys: StaticIssuerKeyStore(cards: [:])))
        _ = try await gateway.authorize(
            AuthorisationRequest(orderId: "hook-1", amount: 1000, currency: "EUR",
                                 callbackUrl: "http://user:pw@127.0.0.1:9/hook?token=s3cret",
                                 card: CardData(pan: PAN("4012888888881881")!, expiry: "2812"), sdkVersion: "1.0.0",
                                 accountId: "acct_test"),
            options: GatewayRequestOptions())
        let webhook = try #require(try gateway.ledger.webhooks(orderId: "hook-1").first)
        let t = Date()
        try gateway.ledger.recordWebhookAttempt(WebhookAttemptRecord(
            webhookId: webhook.id, owner: "test", startedAt: t, finishedAt: t.addingTimeInterval(0.004), status: 500,
            error: "HTTP 500", delivered: false, nextAttemptAt: t.addingTimeInterval(10)))
        let line = try #require(try gateway.ledger.requestLog(after: 0, since: nil, limit: 10).last)
        #expect(line.kind == .webhook && line.status == 500 && line.orderId == "hook-1" && line.durationMs == 4)
        #expect(line.target == "http://127.0.0.1:9/hook")
        #expect(line.detail?.contains("attempt 1: HTTP 500, next try") == true, "\(line)")
        // A webhook attempt that cannot be recorded (no such webhook) leaves no line either.
        #expect(throws: GatewayError.self) {
            try gateway.ledger.recordWebhookAttempt(WebhookAttemptRecord(
                webhookId: 9999, owner: "test", startedAt: t, finishedAt: t, status: 200, error: nil, delivered: true,
                nextAttemptAt: nil))
        }
        #expect(try gateway.ledger.requestLog(after: line.id, since: nil, limit: 10).isEmpty)
    }

    @Test("the log is bounded: each write prunes beyond the newest N lines; ids keep growing, so a cursor stays valid")
    func bounded() throws {
        let dir = try temporaryDirectory()
        let ledger = try Ledger(directory: dir)
        for k in 1...25 {
            try ledger.appendRequestLog([RequestLogEntry(at: Date(), kind: .request, method: "GET", target: "/p/\(k)",
                                                         status: 200, durationMs: 1)], keeping: 10)
        }
        let kept = try ledger.requestLog(after: 0, since: nil, limit: 100)
        #expect(kept.count == 10)
        #expect(kept.map(\.target) == (16...25).map { "/p/\($0)" })
        #expect(try ledger.requestLog(after: kept[6].id, since: nil, limit: 100).map(\.target) == ["/p/23", "/p/24", "/p/25"])
        // Pruning away every row does not reuse an id (AUTOINCREMENT).
        try ledger.appendRequestLog([RequestLogEntry(at: Date(), kind: .request, method: "GET", target: "/last",
                                                     status: 200, durationMs: 1)], keeping: 1)
        let last = try #require(try ledger.requestLog(after: 0, since: nil, limit: 100).first)
        #expect(last.target == "/last" && last.id > kept.last!.id)
    }

    @Test("a line holds no query string, no user info and no PAN-like digits, whoever writes it")
    func sanitised() {
        let e = RequestLogEntry(at: Date(), kind: .request, method: "GET",
                                target: "https://u:p@host/v1/x/\(Self.fullPAN)?key=tpk_test_1#f", status: 200, durationMs: 1,
                                orderId: "2026120300000108", detail: "card \(Self.fullPAN) for order 2026120300000108")
        #expect(e.target == "https://host/v1/x/476173******0010")
        // Order ids as given (README's rule); card numbers masked.
        #expect(e.detail == "card 476173******0010 for order 2026120300000108")
        #expect(e.orderId == "2026120300000108")
    }

    @Test("a version-4 ledger is migrated once to version 5 (the request log); read only, it has no lines and is not written")
    func migratesFromVersion4() throws {
        let dir = try temporaryDirectory()
        do {
            let ledger = try Ledger(directory: dir)
            try ledger.appendRequestLog([RequestLogEntry(at: Date(), kind: .request, method: "GET", target: "/x", status: 200, durationMs: 1)])
        }
        let file = dir + "/" + Ledger.fileName
        do {
            let c = try SQLiteConnection(path: file, busyTimeout: .seconds(1), mode: .readWrite)
            try c.execute("DROP TABLE request_log; DELETE FROM sqlite_sequence WHERE name = 'request_log'; PRAGMA user_version = 4;")
        }
        let readOnly = try Ledger(directory: dir, access: .readOnly)
        #expect(try readOnly.requestLog(after: 0, since: nil, limit: 10).isEmpty)
        #expect(try SQLiteConnection(path: file, busyTimeout: .seconds(1), mode: .readOnly).userVersion == 4)
        let migrated = try Ledger(directory: dir)
        #expect(try SQLiteConnection(path: file, busyTimeout: .seconds(1), mode: .readOnly).userVersion == 5 && Ledger.schemaVersion == 5)
        try migrated.appendRequestLog([RequestLogEntry(at: Date(), kind: .request, method: "GET", target: "/y", status: 200, durationMs: 1)])
        #expect(try migrated.requestLog(after: 0, since: nil, limit: 10).map(\.target) == ["/y"])
        // The read-only ledger opened before the migration sees the new table's lines too.
        #expect(try readOnly.requestLog(after: 0, since: nil, limit: 10).map(\.target) == ["/y"])
    }

    @Test("--follow, from another ledger handle (as another process): a sale made while following appears at the next poll; Ctrl-C's cancel ends it")
    func followSeesANewSale() async throws {
        let live = try LoggedService()
        let device = try temporaryDirectory()
        let follower = try Ledger(directory: live.dir, access: .readOnly)
        let clock = ManualClock()
        let captured = CapturedConsole()
        let task = Task {
            try await GatewayLogsCommand.follow(follower, since: nil, json: true, poll: .seconds(1), clock: clock,
                                                console: captured.console)
        }
        await clock.waitForSleepers(1)
        #expect(captured.stdout.isEmpty)
        let pay = await runCLI(["pay", "--amount", "1250", "--order-id", "follow-1", "--gateway", live.url,
                                "--api-key", live.service.apiKey, "--data-dir", device, "--json"])
        #expect(pay.status == 0, "\(pay.err)")
        await live.recorder.flush()
        // Not before the poll: the follower reads the ledger only when its clock says so.
        #expect(!captured.stdout.contains("follow-1"))
        clock.advance(by: .seconds(1))
        await clock.waitForSleepers(1)
        let lines = captured.stdout.split(separator: "\n").map(String.init)
        let sale = try #require(lines.first { $0.contains("/terminal/v1/authorisations") })
        let doc = try jsonObject(Array(sale.utf8))
        #expect(Set(doc.keys) == ["id", "time", "kind", "method", "target", "status", "durationMs", "requestId", "orderId", "detail"])
        #expect(doc["orderId"] as? String == "follow-1" && doc["status"] as? Int == 200 && doc["kind"] as? String == "request")
        // Each line once: the next poll prints nothing again.
        let count = lines.count
        clock.advance(by: .seconds(1))
        await clock.waitForSleepers(1)
        #expect(captured.stdout.split(separator: "\n").count == count)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        await live.server.stop()
    }

    @Test("a 4 MB volume with the request log on: 300 approvals and the log stays at its bound; full: the log's writes fail without failing an answer; space back: approvals and log lines again",
          .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func fullDisk() async throws {
        let volume = try FullDiskTests.SmallVolume(megabytes: 4)
        defer { volume.unmount() }
        let service = try GatewayService(dataDirectory: volume.path + "/srv")
        let recorder = RequestLogRecorder(inner: service.routes(), ledger: service.gateway.ledger, apiKey: service.apiKey, bound: 200)
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(1)), handler: recorder)
        let remote = RemoteGateway(baseURL: server.url, deviceToken: service.testToken)
        func authorise(_ order: String) async throws(GatewayError) -> AuthorisationResponse {
            try await remote.authorize(AuthorisationRequest(orderId: order, amount: 1000,
                                                            card: CardData(pan: PAN("4012888888881881")!, expiry: "2812")))
        }
        for i in 0..<300 { #expect(try await authorise("vol-\(i)").status == .approved, "payment \(i)") }
        await recorder.flush()
        let kept = try service.gateway.ledger.requestLog(after: 0, since: nil, limit: 1000)
        #expect(kept.count == 200 && kept.last?.orderId == "vol-299")
        #expect(recorder.dropped == 0)

        let filler = try FullDiskTests.fill(volume.path)
        var answered = 0
        for i in 0..<5 {
            do throws(GatewayError) {
                _ = try await authorise("full-\(i)")
                answered += 1
            } catch {
                // Refused by the ledger, as without the log: never an answer the log broke.
                #expect(error.code == .storage && error.reason.contains("nothing was written"), "\(error)")
            }
        }
        await recorder.flush()
        let health = try await HTTPClient().send(HTTPClientRequest(url: server.url + "/health"))
        #expect(health.status == 200)
        print("full disk: \(answered) of 5 answered approved, \(recorder.dropped) log line(s) dropped")

        #expect(unlink(filler) == 0)
        for i in 0..<5 { #expect(try await authorise("back-\(i)").status == .approved, "after space returned, payment \(i)") }
        await recorder.flush()
        let last = try #require(try service.gateway.ledger.requestLog(after: 0, since: nil, limit: 1000).last)
        #expect(last.orderId == "back-4" && last.status == 200)
        #expect(try service.gateway.ledger.requestLog(after: 0, since: nil, limit: 1000).count <= 200)
        await server.stop()
    }

    @Test("gateway logs prints text or JSON lines from --data-dir; --since filters; bad options are usage errors (64)")
    func command() async throws {
        let dir = try temporaryDirectory()
        let ledger = try Ledger(directory: dir)
        let old = Date(timeIntervalSince1970: 1_700_000_000)
        try ledger.appendRequestLog([
            RequestLogEntry(at: old, kind: .request, method: "GET", target: "/old", status: 200, durationMs: 2),
            RequestLogEntry(at: Date(), kind: .request, method: "POST", target: "/terminal/v1/authorisations", status: nil,
                            durationMs: 7, requestId: "req-1", orderId: "o-1", detail: "closed without an answer"),
        ])
        let text = await runCLI(["gateway", "logs", "--data-dir", dir])
        #expect(text.status == 0, "\(text.err)")
        let lines = text.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines[0] == "2023-11-14T22:13:20.000Z  200 GET /old 2ms")
        #expect(lines[1].hasSuffix("  --- POST /terminal/v1/authorisations 7ms order o-1 [req-1] closed without an answer"))
        let since = await runCLI(["gateway", "logs", "--data-dir", dir, "--since", "1h", "--json"])
        #expect(since.status == 0, "\(since.err)")
        let docs = try since.out.split(separator: "\n").map { try jsonObject(Array($0.utf8)) }
        #expect(docs.count == 1 && docs[0]["target"] as? String == "/terminal/v1/authorisations")
        #expect(docs[0]["status"] is NSNull)
        let iso = await runCLI(["gateway", "logs", "--data-dir", dir, "--since", "2099-01-01T00:00:00Z"])
        #expect(iso.status == 0 && iso.out.isEmpty)
        for bad in [["--since", "yesterday"], ["--poll", "1s"], ["--follow", "--poll", "0s"], ["--ledger", "mysql://x"]] {
            let r = await runCLI(["gateway", "logs", "--data-dir", dir] + bad)
            #expect(r.status == 64, "\(bad): \(r.err)")
        }
        let missing = await runCLI(["gateway", "logs", "--data-dir", dir + "/none"])
        #expect(missing.status == 66, "\(missing.err)")
        // A PostgreSQL ledger that does not answer (nothing listens on port 1): 69, as documented.
        let down = await runCLI(["gateway", "logs", "--ledger", "postgres://tapemu@127.0.0.1:1/none"])
        #expect(down.status == 69, "\(down.err)")
        #expect(down.err.contains("Connection refused; Is the server running") && !down.err.contains("\t"), "\(down.err)")
        // The help says what --json prints here: lines, not the one document of other commands.
        let help = await runCLI(["gateway", "logs", "--help"])
        #expect(help.status == 0 && help.out.contains("one JSON object per line on stdout"), "\(help.out)")
        #expect(!help.out.contains("one JSON document"), "\(help.out)")
    }
}
