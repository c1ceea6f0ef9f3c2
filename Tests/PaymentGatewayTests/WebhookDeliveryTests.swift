import Foundation
@testable import PaymentGateway
import Synchronization
import Testing
import TestSupport
import Timing
import Storage

/// A webhook receiver in the test process: records each POST and answers from a script.
final class FakeTransport: WebhookTransport {
    struct Received: Sendable {
        var url: String
        var headers: [(String, String)]
        var body: [UInt8]
        var signature: String? { headers.first { $0.0 == Webhook.signatureHeaderName }?.1 }
    }
    enum Answer: Sendable { case status(Int), fail(String) }
    private let state = Mutex<(received: [Received], script: [Answer])>(([], []))
    let fallback: Answer
    init(_ script: [Answer] = [], otherwise fallback: Answer = .status(200)) {
        self.fallback = fallback
        state.withLock { $0.script = script }
    }
    var received: [Received] { state.withLock { $0.received } }

    struct Failure: Error, CustomStringConvertible { var description: String }

    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int {
        let answer = state.withLock { s -> Answer in
            s.received.append(Received(url: url, headers: headers, body: body))
            return s.script.isEmpty ? fallback : s.script.removeFirst()
        }
        switch answer {
        case .status(let s): return s
        case .fail(let m): throw Failure(description: m)
        }
    }
}

/// A receiver that takes the whole of `seconds` (on the test's wall clock) to answer 200, and
/// runs `during(n)` inside its n-th POST (another deliverer's pass, while this one waits).
final class SlowTransport: WebhookTransport {
    private let state = Mutex<(bodies: [String], calls: Int)>(([], 0))
    private let during = Mutex<(@Sendable (Int) async -> Void)?>(nil)
    let now: WallClock
    let seconds: TimeInterval
    init(now: WallClock, seconds: TimeInterval) {
        self.now = now
        self.seconds = seconds
    }
    var bodies: [String] { state.withLock { $0.bodies } }
    func setDuring(_ f: @escaping @Sendable (Int) async -> Void) { during.withLock { $0 = f } }

    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int {
        try Task.checkCancellation()
        let n = state.withLock { s -> Int in
            s.bodies.append(String(decoding: body, as: UTF8.self))
            s.calls += 1
            return s.calls
        }
        now.advance(by: seconds)
        if let f = during.withLock({ $0 }) { await f(n) }
        return 200
    }
}

@Suite("webhook delivery") struct WebhookDeliveryTests {
    /// No jitter draw: the factor is 1 at unit 0.5.
    static let middle: @Sendable () -> Double = { 0.5 }

    func deliverer(_ g: EmbeddedGateway, _ t: any WebhookTransport, _ now: WallClock, faults: WebhookFaults = .none,
                   policy: WebhookRetryPolicy = .standard) -> WebhookDeliverer {
        WebhookDeliverer(ledger: g.ledger, transport: t, policy: policy, now: now.provider, faults: faults,
                         random: Self.middle)
    }

    /// A gateway on `dir` (its clock `now`) that approved a sale of 10.00 for each of `orderIds`:
    /// each has one webhook in the outbox, due at once.
    func gateway(_ dir: TempDir, now: WallClock, sales orderIds: [String]) async throws -> EmbeddedGateway {
        let g = try Fixture.gateway(dir, now: now)
        for orderId in orderIds { _ = try await g.authorize(Fixture.request(orderId: orderId, amount: 1000)) }
        return g
    }

    /// Makes the ledger in `dir` a version-1 file (one approved sale, `orderId`, in it): drops what
    /// versions 2 and 3 added. The connection that did it, still open.
    static func versionOneLedger(_ dir: TempDir, orderId: String) async throws -> SQLiteConnection {
        _ = try await Fixture.gateway(dir).authorize(Fixture.request(orderId: orderId, amount: 1000))
        let c = try SQLiteConnection(path: dir.sub("data") + "/" + Ledger.fileName, busyTimeout: .seconds(1), mode: .readWrite)
        try c.execute("""
            DROP TABLE webhook_attempts;
            ALTER TABLE webhooks DROP COLUMN next_attempt_at; ALTER TABLE webhooks DROP COLUMN last_attempt_at;
            ALTER TABLE webhooks DROP COLUMN last_status; ALTER TABLE webhooks DROP COLUMN lease_owner;
            ALTER TABLE webhooks DROP COLUMN lease_until; ALTER TABLE webhooks DROP COLUMN gave_up_at;
            \(LedgerMigrationV3Tests.dropVersion3)
            PRAGMA user_version = 1;
            """)
        return c
    }

    @Test("a webhook is POSTed to its callbackUrl with the stored signature over the exact stored bytes")
    func delivers() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: ["order-d1"])
        let t = FakeTransport()
        let pass = try await deliverer(g, t, now).deliverDue()
        #expect(pass.delivered.count == 1)
        let got = try #require(t.received.first)
        let stored = try #require(try g.ledger.webhooks(orderId: "order-d1").first)
        #expect(got.url == "https://merchant.example/hook")
        #expect(got.body == Array(stored.body.utf8))
        #expect(got.signature == stored.signature)
        #expect(try WebhookSignature.verify(header: got.signature, body: got.body, secret: g.webhookSecret,
                                             now: now.now) > 0)
        let d = try #require(try g.ledger.webhookDeliveries(orderId: "order-d1").first)
        #expect(d.state == "delivered" && d.webhook.attempts == 1 && d.lastStatus == 200 && d.nextAttemptAt == nil)
        // Delivered: never sent again.
        #expect(try await deliverer(g, t, now).deliverDue().delivered.isEmpty)
        #expect(t.received.count == 1)
    }

    @Test("non-2xx and transport errors are retried on the backoff schedule, then delivered")
    func retries() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: ["order-r1"])
        let t = FakeTransport([.status(500), .fail("connection refused"), .status(302)])
        let d = deliverer(g, t, now)
        #expect(try await d.deliverDue().failed.count == 1)
        var w = try #require(try g.ledger.webhookDeliveries().first)
        #expect(w.webhook.attempts == 1 && w.webhook.lastError == "HTTP 500" && w.lastStatus == 500)
        #expect(w.nextAttemptAt == now.now.addingTimeInterval(10))
        // Not due before its time.
        now.advance(by: 9)
        #expect(try await d.deliverDue().failed.isEmpty)
        #expect(t.received.count == 1)
        now.advance(by: 1)
        #expect(try await d.deliverDue().failed.count == 1)
        w = try #require(try g.ledger.webhookDeliveries().first)
        #expect(w.webhook.lastError == "connection refused" && w.lastStatus == nil)
        #expect(w.nextAttemptAt == now.now.addingTimeInterval(20))
        now.advance(by: 20)
        #expect(try await d.deliverDue().failed.count == 1)   // 302 is not delivered
        now.advance(by: 40)
        #expect(try await d.deliverDue().delivered.count == 1)
        let attempts = try g.ledger.webhookAttempts(webhookId: w.webhook.id)
        #expect(attempts.map(\.attempt) == [1, 2, 3, 4])
        #expect(attempts.map(\.status) == [500, nil, 302, 200])
        #expect(attempts.last?.error == nil && attempts.last?.nextAttemptAt == nil)
    }

    @Test("a retry after the receiver was down for an hour is signed at its own time: the default tolerance accepts it")
    func retrySignedAtAttemptTime() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: ["order-late"])
        let t = FakeTransport([.fail("connection refused")])
        let d = deliverer(g, t, now)
        #expect(try await d.deliverDue().failed.count == 1)
        // The receiver is back an hour later; the server resumes the retries.
        now.advance(by: 3600)
        #expect(try await d.deliverDue().delivered.count == 1)
        let retry = try #require(t.received.last)
        #expect(retry.body == Array(try #require(try g.ledger.webhooks(orderId: "order-late").first).body.utf8))
        // A receiver checking `t` within the default 300 s of its clock takes it.
        #expect(try WebhookSignature.verify(header: retry.signature, body: retry.body, secret: g.webhookSecret,
                                             now: now.now) == Int64(now.now.timeIntervalSince1970))
    }

    @Test("the schedule: exponential, capped, jittered within its bounds, then given up")
    func schedule() {
        let p = WebhookRetryPolicy.standard
        let mid = (1...12).map { p.delay(afterAttempt: $0, unit: 0.5) }
        #expect(mid == [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600].map { Duration.seconds($0) } + [nil])
        #expect(p.delay(afterAttempt: 1, unit: 0) == .seconds(8))
        #expect(p.delay(afterAttempt: 1, unit: 0.999_999) == .milliseconds(12_000))
        #expect(p.delay(afterAttempt: 10, unit: 0) == .seconds(2880))
    }

    @Test("after maxAttempts the webhook is failed, kept, and not sent again")
    func givesUp() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: ["order-g1"])
        let t = FakeTransport(otherwise: .status(503))
        let d = deliverer(g, t, now, policy: WebhookRetryPolicy(initialDelay: .seconds(1), maxAttempts: 3))
        for _ in 0..<5 {
            try await d.deliverDue()
            now.advance(by: 100)
        }
        #expect(t.received.count == 3)
        let w = try #require(try g.ledger.webhookDeliveries().first)
        #expect(w.state == "failed" && w.gaveUpAt != nil && w.webhook.attempts == 3)
    }

    @Test("durable across restarts: a new ledger and deliverer resume the retries")
    func resumesAfterRestart() async throws {
        let dir = TempDir(), now = WallClock()
        do {
            let g = try Fixture.gateway(dir, now: now)
            _ = try await g.authorize(Fixture.request(orderId: "order-x1", amount: 1000))
            try await deliverer(g, FakeTransport(otherwise: .status(500)), now).deliverDue()
        }
        let reopened = try Fixture.gateway(dir, now: now)
        let t = FakeTransport()
        let d = deliverer(reopened, t, now)
        #expect(try await d.deliverDue().delivered.isEmpty)   // not due yet
        now.advance(by: 10)
        #expect(try await d.deliverDue().delivered.count == 1)
        #expect(try reopened.ledger.webhookDeliveries().first?.webhook.attempts == 2)
    }

    @Test("a deliverer that died holding a lease: the webhook is sent again when the lease runs out")
    func leaseExpiry() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: ["order-l1"])
        // Claimed, then nothing recorded (the process died mid-POST).
        #expect(try g.ledger.claimDueWebhooks(now: now.now, owner: "dead", lease: .seconds(35), limit: 10).count == 1)
        let t = FakeTransport()
        let d = deliverer(g, t, now)
        #expect(try await d.deliverDue().delivered.isEmpty)
        now.advance(by: 35)
        #expect(try await d.deliverDue().delivered.count == 1)
    }

    @Test("two deliverers on one directory (two processes) never send one webhook at once")
    func twoDeliverers() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: (0..<20).map { "order-p\($0)" })
        let other = try Fixture.gateway(dir, now: now)
        let t = FakeTransport()
        let a = deliverer(g, t, now), b = deliverer(other, t, now)
        // Sales are recorded meanwhile by a third connection: the outbox grows under the deliverers.
        let writer = try Fixture.gateway(dir, now: now)
        async let x = a.deliverDue(limit: 5)
        async let y = b.deliverDue(limit: 5)
        async let z: Void = { for k in 20..<30 { _ = try await writer.authorize(Fixture.request(orderId: "order-p\(k)", amount: 1000)) } }()
        _ = try await (x, y, z)
        while try await a.deliverDue().delivered.count + b.deliverDue().delivered.count > 0 {}
        let bodies = t.received.map { String(decoding: $0.body, as: UTF8.self) }
        #expect(bodies.count == 30)
        #expect(Set(bodies).count == 30)
        #expect(try g.ledger.webhookDeliveries().allSatisfy { $0.state == "delivered" && $0.webhook.attempts == 1 })
    }

    @Test("a pass that outlasts its lease: a webhook another deliverer took over is not sent again, one in flight is not taken over")
    func passOutlastsLease() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: (0..<5).map { "order-slow\($0)" })
        let other = try Fixture.gateway(dir, now: now)
        // Each POST takes the whole 10 s timeout; the pass claims all five under one 35 s lease.
        let t = SlowTransport(now: now, seconds: 10)
        let a = deliverer(g, t, now), b = deliverer(other, t, now)
        // During the fourth POST (40 s after the claim) a second process runs a pass.
        let once = Mutex(false)
        t.setDuring { n in
            guard n == 4, !once.withLock({ let was = $0; $0 = true; return was }) else { return }
            _ = try? await b.deliverDue()
        }
        try await a.deliverDue()
        #expect(t.bodies.count == 5)
        #expect(Set(t.bodies).count == 5)
        #expect(try g.ledger.webhookDeliveries().allSatisfy { $0.state == "delivered" && $0.webhook.attempts == 1 })
    }

    @Test("a pass cancelled (the server stopping) records no attempt it did not make and gives the rest back at once")
    func cancelledPass() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: (0..<3).map { "order-stop\($0)" })
        // The stop arrives during the first POST; a POST of a cancelled task gets no answer.
        let t = SlowTransport(now: now, seconds: 0)
        t.setDuring { n in if n == 1 { withUnsafeCurrentTask { $0?.cancel() } } }
        let d = deliverer(g, t, now)
        let pass = try await Task { try await d.deliverDue() }.value
        #expect(pass.delivered.count == 1 && pass.failed.isEmpty)
        #expect(t.bodies.count == 1)
        #expect(try g.ledger.webhookDeliveries().map(\.webhook.attempts) == [1, 0, 0])
        // The next run (another owner) takes the other two at once, not after the lease.
        let next = try Fixture.gateway(dir, now: now)
        #expect(try next.ledger.claimDueWebhooks(now: now.now, owner: "next", lease: .seconds(35), limit: 10).count == 2)
    }

    @Test("fault: duplicate delivery sends the same bytes and header twice and counts one attempt")
    func duplicate() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: ["order-f1"])
        let t = FakeTransport()
        try await deliverer(g, t, now, faults: WebhookFaults(duplicate: true)).deliverDue()
        #expect(t.received.count == 2)
        #expect(t.received[0].body == t.received[1].body && t.received[0].signature == t.received[1].signature)
        let w = try #require(try g.ledger.webhookDeliveries().first)
        #expect(w.webhook.attempts == 1)
        #expect(try g.ledger.webhookAttempts(webhookId: w.webhook.id).map(\.fault) == [nil, "duplicate"])
    }

    @Test("fault: out-of-order delivery sends the newer state first")
    func outOfOrder() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try Fixture.gateway(dir, now: now)
        let sale = try await g.authorize(Fixture.request(orderId: "order-f2", amount: 1000))
        now.advance(by: 1)
        _ = try await g.reverse(uniqueRef: sale.uniqueRef)
        let t = FakeTransport()
        try await deliverer(g, t, now, faults: WebhookFaults(outOfOrder: true)).deliverDue()
        let events = t.received.map { String(decoding: $0.body, as: UTF8.self) }
        #expect(events.count == 2)
        #expect(events[0].contains(#""event":"reversed""#) && events[1].contains(#""event":"approved""#))
    }

    @Test("fault: delay holds the first attempt past a client's timeout")
    func delay() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: ["order-f3"])
        let t = FakeTransport()
        let d = deliverer(g, t, now, faults: WebhookFaults(delay: .seconds(60)))
        #expect(try await d.deliverDue().delivered.isEmpty)
        #expect(try g.ledger.nextWebhookDue(firstAttemptDelay: .seconds(60)) == now.now.addingTimeInterval(60))
        now.advance(by: 60)
        #expect(try await d.deliverDue().delivered.count == 1)
    }

    @Test("fault: a stale t verifies only with a wide tolerance; an extra v0 is ignored by a verifier")
    func staleAndV0() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: ["order-f4", "order-f5"])
        let t = FakeTransport()
        let d = deliverer(g, t, now, faults: WebhookFaults(staleBy: .seconds(600)))
        try await d.deliverDue(limit: 1)
        let stale = try #require(t.received.first)
        #expect(stale.signature != (try g.ledger.webhooks().first?.signature))
        #expect(throws: WebhookSignatureError.self) {
            try WebhookSignature.verify(header: stale.signature, body: stale.body, secret: g.webhookSecret, now: now.now)
        }
        #expect(try WebhookSignature.verify(header: stale.signature, body: stale.body, secret: g.webhookSecret,
                                             tolerance: .seconds(900), now: now.now) == Int64(now.now.timeIntervalSince1970) - 600)
        d.faults = WebhookFaults(extraV0: true)
        try await d.deliverDue()
        let v0 = try #require(t.received.last)
        #expect(v0.signature?.contains(",v0=") == true)
        #expect(throws: Never.self) {
            try WebhookSignature.verify(header: v0.signature, body: v0.body, secret: g.webhookSecret, now: now.now)
        }
    }

    @Test("faults parse from a flag value; an unknown one is a typed error")
    func faultFlag() throws {
        let f = try WebhookFaults(parsing: "duplicate, out-of-order,delay=30s,stale=600,extra-v0")
        #expect(f == WebhookFaults(duplicate: true, outOfOrder: true, delay: .seconds(30), staleBy: .seconds(600), extraV0: true))
        #expect(gatewayErrorCode { () throws(GatewayError) in try WebhookFaults(parsing: "explode") } == .invalidRequest)
        #expect(gatewayErrorCode { () throws(GatewayError) in try WebhookFaults(parsing: "delay=soon") } == .invalidRequest)
    }

    @Test("run() delivers on its own, sleeping on the injected clock between tries, and stops when cancelled")
    func runLoop() async throws {
        let dir = TempDir(), now = WallClock()
        let clock = ManualClock()
        let g = try await gateway(dir, now: now, sales: ["order-run"])
        let t = FakeTransport([.status(500)])
        let d = WebhookDeliverer(ledger: g.ledger, transport: t, clock: clock, now: now.provider,
                                 pollInterval: .seconds(5), random: Self.middle)
        let task = Task { await d.run() }
        await clock.waitForSleepers(1)
        #expect(t.received.count == 1)   // the failed first attempt; the retry is due in 10 s
        now.advance(by: 5)
        clock.advance(by: .seconds(5))
        await clock.waitForSleepers(1)
        #expect(t.received.count == 1)
        now.advance(by: 5)
        clock.advance(by: .seconds(5))
        await clock.waitForSleepers(1)
        #expect(t.received.count == 2)
        #expect(try g.ledger.webhookDeliveries().first?.state == "delivered")
        task.cancel()
        await task.value
    }

    @Test("a version-1 ledger is migrated once, keeping its outbox; read-only it is read as it is")
    func migration() async throws {
        let dir = TempDir()
        _ = try await Self.versionOneLedger(dir, orderId: "order-m1")   // its connection closed at once
        let old = try Ledger(directory: dir.sub("data"), access: .readOnly)
        #expect(try old.webhooks(orderId: "order-m1").count == 1)
        #expect(throws: GatewayError.self) { try old.webhookDeliveries() }
        let a = try Ledger(directory: dir.sub("data"))
        let b = try Ledger(directory: dir.sub("data"))   // a second open finds it migrated
        #expect(try a.webhookDeliveries(orderId: "order-m1").count == 1)
        #expect(try b.webhookDeliveries(orderId: "order-m1").first?.state == "pending")
    }

    @Test("two processes record attempts of one webhook at once: a delivery is never undone by a late failure")
    func concurrentRecords() async throws {
        let dir = TempDir(), now = WallClock()
        let g = try await gateway(dir, now: now, sales: ["order-c1"])
        let other = try Fixture.gateway(dir, now: now)
        let id = try #require(try g.ledger.webhooks().first?.id)
        let ok = WebhookAttemptRecord(webhookId: id, owner: "a", startedAt: now.now, finishedAt: now.now, status: 200,
                                      error: nil, delivered: true, nextAttemptAt: nil)
        let late = WebhookAttemptRecord(webhookId: id, owner: "b", startedAt: now.now, finishedAt: now.now, status: 500,
                                        error: "HTTP 500", delivered: false, nextAttemptAt: now.now.addingTimeInterval(10))
        async let x: Void = Task { try g.ledger.recordWebhookAttempt(ok) }.value
        async let y: Void = Task { try other.ledger.recordWebhookAttempt(late) }.value
        _ = try await (x, y)
        let d = try #require(try g.ledger.webhookDeliveries().first)
        #expect(d.state == "delivered" && d.webhook.attempts == 2 && d.nextAttemptAt == nil)
        #expect(try g.ledger.webhookAttempts(webhookId: id).count == 2)
        // Nothing is due any more.
        now.advance(by: 60)
        #expect(try g.ledger.claimDueWebhooks(now: now.now, owner: "c", lease: .seconds(30), limit: 10).isEmpty)
    }

    @Test("two processes open a version-1 ledger at once: one migrates, both work")
    func concurrentMigration() async throws {
        let dir = TempDir()
        let c = try await Self.versionOneLedger(dir, orderId: "order-cm")
        let path = dir.sub("data")
        async let a = Task { try Ledger(directory: path) }.value
        async let b = Task { try Ledger(directory: path) }.value
        let (la, lb) = try await (a, b)
        #expect(try la.webhookDeliveries().count == 1)
        #expect(try lb.claimDueWebhooks(now: Date(timeIntervalSince1970: 2_000_000_000), owner: "x", lease: .seconds(30), limit: 10).count == 1)
        #expect(try c.userVersion == Ledger.schemaVersion)
    }
}
