import Foundation
import GatewayService
import HTTPServer
import PaymentGateway
import PostgresLedger
import Synchronization
import Testing
import TestSupport

/// A `tapemu gateway serve --ledger …` child process.
final class ServerProcess: @unchecked Sendable {
    let process = Process()
    private let state = Mutex<(text: String, url: String?, waiter: CheckedContinuation<String?, Never>?, closed: Bool)>(("", nil, nil, false))
    private let pipe = Pipe()

    /// The built `tapemu` (TestSupport's ``tapemuExecutable()``).
    static func binary() throws -> URL { try tapemuExecutable() }

    init(ledger: String) throws {
        process.executableURL = try Self.binary()
        process.arguments = ["gateway", "serve", "--listen", "127.0.0.1:0", "--ledger", ledger]
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Its stdout is read on a thread of its own until EOF (blocking reads; no dispatch
        // source that could outlive the descriptor when the process is killed).
        let reader = pipe.fileHandleForReading
        let thread = Thread { [weak self] in
            while true {
                let data = reader.availableData
                self?.received(data.isEmpty ? nil : String(decoding: data, as: UTF8.self))
                if data.isEmpty { break }
            }
        }
        thread.start()
    }

    private func received(_ text: String?) {
        let prefix = "tapemu gateway listening on "
        let (waiter, value) = state.withLock { s -> (CheckedContinuation<String?, Never>?, String?) in
            if let text { s.text += text } else { s.closed = true }
            if s.url == nil, let line = s.text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                s.url = String(line.dropFirst(prefix.count))
            }
            guard s.url != nil || s.closed, let w = s.waiter else { return (nil, nil) }
            s.waiter = nil
            return (w, s.url)
        }
        waiter?.resume(returning: value)
    }

    /// Its URL, once it listens (nil if it exited first).
    func url() async -> String? {
        await withCheckedContinuation { (c: CheckedContinuation<String?, Never>) in
            let ready = state.withLock { s -> String?? in
                if s.url != nil || s.closed { return .some(s.url) }
                s.waiter = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
    }

    func kill() { if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) } }

    deinit { kill() }
}

/// The merchant's webhook endpoint: records every (paymentId, event) it receives.
final class WebhookReceiver: HTTPHandler, @unchecked Sendable {
    /// How long the merchant takes to answer (a slow merchant keeps webhooks leased longer).
    let latency: Duration
    init(latency: Duration = .zero) { self.latency = latency }
    private let state = Mutex<(seen: [String: Int], expected: Set<String>?, waiter: CheckedContinuation<Void, Never>?)>(([:], nil, nil))

    struct Body: Decodable { var id: String; var event: String }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        guard let body = try? JSONDecoder().decode(Body.self, from: Data(request.body)) else {
            return HTTPResponse(status: 400)
        }
        if latency > .zero { try? await Task.sleep(for: latency) }
        let w = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.seen["\(body.id)/\(body.event)", default: 0] += 1
            guard let e = s.expected, e.isSubset(of: Set(s.seen.keys)), let w = s.waiter else { return nil }
            s.waiter = nil
            return w
        }
        w?.resume()
        return HTTPResponse(status: 200)
    }

    var received: [String: Int] { state.withLock { $0.seen } }

    /// Returns once every key of `expected` was received (or at once if they were).
    func wait(for expected: Set<String>) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if expected.isSubset(of: Set(s.seen.keys)) { return true }
                s.expected = expected
                s.waiter = c
                return false
            }
            if done { c.resume() }
        }
    }

    /// Ends a `wait` that will never be satisfied (the test's bound).
    func giveUp() {
        let w = state.withLock { s -> CheckedContinuation<Void, Never>? in defer { s.waiter = nil }; return s.waiter }
        w?.resume()
    }
}

@Suite("Several gateway servers on one PostgreSQL ledger",
       .enabled(if: TestPostgres.available, Comment(rawValue: TestPostgres.skipMessage)), .serialized)
struct MultiServerTests {
    struct Outcome: Sendable { var paymentId: String?; var error: String?; var faults = 0 }

    final class Progress: Sendable {
        private let count = Mutex(0)
        /// One more order answered; the count after it.
        func step() -> Int { count.withLock { $0 += 1; return $0 } }
    }

    /// 32 terminals; each order id is sent by 4 terminals, each to a different server
    /// (`servers` apart). A terminal that gets no answer (its server was killed) looks the order
    /// up on the next server and authorises there only if the order is not in the ledger.
    static func run(servers count: Int, orders: Int, killOne: Bool) async throws {
        let ledgerURL = try TestPostgres.freshDatabase()
        let receiver = WebhookReceiver(latency: killOne ? .milliseconds(30) : .zero)
        let hooks = try HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), handler: receiver)
        _ = try PostgresLedger(url: ledgerURL, connections: 1) // migrated once, before the race
        let servers = try (0..<count).map { _ in try ServerProcess(ledger: ledgerURL) }
        var found: [String] = []
        for s in servers { found.append(try #require(await s.url())) }
        let urls = found
        // One terminal's token (the servers share the ledger's token key): the 4 sends of an
        // order id are one terminal's retries, not 4 terminals (another terminal's would be 403).
        let token = try EmbeddedGateway.shared(ledgerURL: ledgerURL)
            .issueToken(accountId: "acct_test", pointOfSaleId: "pos-multi")
        let callback = hooks.url + "/hooks"
        let answered = Progress()
        let total = orders * 4
        let results = await withTaskGroup(of: [(String, Outcome)].self) { group in
            for t in 0..<32 {
                group.addTask {
                    var out: [(String, Outcome)] = []
                    for o in 0..<orders where o % 8 == t % 8 {
                        let orderId = "multi-\(o)"
                        var server = (t / 8 + o) % count
                        var outcome = Outcome()
                        for _ in 0..<count {
                            let gw = RemoteGateway(baseURL: urls[server], requestTimeout: .seconds(30), deviceToken: token)
                            do throws(GatewayError) {
                                let r = try await gw.authorize(Card.request(orderId, callbackUrl: callback))
                                outcome = Outcome(paymentId: r.paymentId, faults: outcome.faults)
                                break
                            } catch {
                                outcome = Outcome(error: "\(error.code): \(error.reason)", faults: outcome.faults + 1)
                                guard error.isCommunicationFailure else { break }
                                // Unknown outcome: look the order up on the next server first.
                                server = (server + 1) % count
                                let next = RemoteGateway(baseURL: urls[server], requestTimeout: .seconds(30), deviceToken: token)
                                if let found = try? await next.charges(orderId: orderId).first {
                                    outcome = Outcome(paymentId: found.paymentId, faults: outcome.faults)
                                    break
                                }
                            }
                        }
                        out.append((orderId, outcome))
                        if killOne, answered.step() == total / 2 { servers[0].kill() }
                    }
                    return out
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        let ledger = try PostgresLedger(url: ledgerURL, connections: 1)
        let failed = results.filter { $0.1.paymentId == nil }
        #expect(failed.isEmpty, "requests without a payment: \(failed.prefix(5).map { "\($0.0): \($0.1.error ?? "")" })")
        var duplicates = 0, missing = 0, mismatched = 0
        var byOrder: [String: Set<String>] = [:]
        for (o, r) in results { if let p = r.paymentId { byOrder[o, default: []].insert(p) } }
        var expected: Set<String> = []
        for o in 0..<orders {
            let sales = try ledger.sales(orderId: "multi-\(o)")
            if sales.isEmpty { missing += 1 }
            duplicates += max(0, sales.count - 1)
            if let s = sales.first {
                expected.insert("\(s.paymentId)/approved")
                if byOrder["multi-\(o)"] != [s.paymentId] { mismatched += 1 }
            }
        }
        // Every webhook delivered at least once (the killed server's leases run out first).
        let bound = Task { try? await Task.sleep(for: .seconds(120)); receiver.giveUp() }
        await receiver.wait(for: expected)
        bound.cancel()
        let received = receiver.received
        let undelivered = expected.subtracting(received.keys).count
        let pendingInLedger = try ledger.webhooks(pendingOnly: true).count
        let copies = received.values.reduce(0, +)
        let faults = results.reduce(0) { $0 + $1.1.faults }
        let redelivered = try ledger.webhookDeliveries().filter { $0.webhook.attempts > 1 }.count
        print("multi-server: \(count) servers, 32 terminals, \(total) requests for \(orders) order ids; payments \(try ledger.allPayments().count), requests that met a dead server \(faults), kills \(killOne ? 1 : 0), duplicates \(duplicates), missing \(missing), answers disagreeing with the ledger \(mismatched), webhooks undelivered \(undelivered) (received \(copies) for \(expected.count), delivered more than once \(received.values.filter { $0 > 1 }.count), webhooks with more than one attempt \(redelivered), still marked pending in the outbox at that moment \(pendingInLedger))")
        #expect(duplicates == 0)
        #expect(missing == 0)
        #expect(mismatched == 0)
        #expect(undelivered == 0)
        // (The ledger may still show a webhook pending whose receipt its deliverer is writing now.)
        for s in servers { s.kill() }
        await hooks.stop()
    }

    @Test("two servers, 32 terminals, the same order ids to different servers: one payment per order id")
    func twoServers() async throws { try await Self.run(servers: 2, orders: 64, killOne: false) }

    @Test("four servers, 32 terminals: one payment per order id")
    func fourServers() async throws { try await Self.run(servers: 4, orders: 64, killOne: false) }

    @Test("four servers, one SIGKILLed in the middle: no payment lost, every webhook delivered by the survivors")
    func killOneServer() async throws { try await Self.run(servers: 4, orders: 64, killOne: true) }

    @Test("the database goes away under a running server: its answers are errors and nothing is recorded; when the database returns, the server goes on by itself")
    func databaseOutage() async throws {
        let ledgerURL = try TestPostgres.freshDatabase()
        let server = try ServerProcess(ledger: ledgerURL)
        let gw = RemoteGateway(baseURL: try #require(await server.url()), requestTimeout: .seconds(30),
                               deviceToken: try EmbeddedGateway.shared(ledgerURL: ledgerURL)
                                   .issueToken(accountId: "acct_test", pointOfSaleId: "pos-outage"))
        _ = try await gw.authorize(Card.request("up-1", callbackUrl: nil))
        try TestPostgres.cutConnections(to: ledgerURL, refuse: true)
        do throws(GatewayError) {
            _ = try await gw.authorize(Card.request("down-1", callbackUrl: nil))
            Issue.record("an authorisation was answered with the database away")
        } catch {
            // For the terminal this is an unclear outcome (it looks the order up); here it was
            // refused before any COMMIT.
            #expect(error.reason.contains("nothing was"), "\(error)")
        }
        try TestPostgres.allowConnections(to: ledgerURL)
        #expect(try await gw.charges(orderId: "down-1").isEmpty)
        let back = try await gw.authorize(Card.request("down-1", callbackUrl: nil))
        #expect(back.status == .approved && !back.isReplay)
        let ledger = try PostgresLedger(url: ledgerURL, connections: 1)
        #expect(try ledger.allPayments().map(\.orderId) == ["up-1", "down-1"])
        server.kill()
    }
}
