public import Foundation
import Synchronization
public import Timing
import Cryptography

/// What sends a webhook over the network. The gateway service plugs its HTTP client in; tests
/// use an in-process fake.
///
/// `post` sends one `POST` with exactly these headers and body and returns the receiver's HTTP
/// status (any status: the deliverer decides what counts). It throws for a request that got no
/// status — refused, reset, timed out after `timeout`, a bad URL — with an error whose
/// description says which (shown as the attempt's error; never holds the body).
public protocol WebhookTransport: Sendable {
    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int
}

/// The retry schedule of undelivered webhooks.
///
/// After failed attempt `n` (1, 2, …) the next is due after
/// `min(maxDelay, initialDelay × multiplier^(n−1))`, scaled by a random factor in
/// `[1 − jitter, 1 + jitter)`. With the defaults (10 s, ×2, at most 1 h, ±20 %, 12 attempts):
/// 10 s, 20 s, 40 s, 80 s, 160 s, 320 s, 640 s, 1280 s, 2560 s, then 3600 s twice — about
/// 3 h 12 min from the first attempt to the last, each ±20 %. After `maxAttempts` failed
/// attempts the webhook is marked failed (`gave_up_at`) and kept in the outbox.
public struct WebhookRetryPolicy: Sendable, Hashable {
    public var initialDelay: Duration
    public var multiplier: Double
    public var maxDelay: Duration
    /// 0 … 1: the spread of the random factor.
    public var jitter: Double
    public var maxAttempts: Int

    public init(initialDelay: Duration = .seconds(10), multiplier: Double = 2, maxDelay: Duration = .seconds(3600),
                jitter: Double = 0.2, maxAttempts: Int = 12) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.jitter = min(max(jitter, 0), 1)
        self.maxAttempts = max(1, maxAttempts)
    }

    public static let standard = WebhookRetryPolicy()

    /// The delay after failed attempt `attempt` (from 1), for a random `unit` in [0, 1);
    /// nil when no attempt follows.
    public func delay(afterAttempt attempt: Int, unit: Double) -> Duration? {
        guard attempt < maxAttempts else { return nil }
        let base = Self.seconds(initialDelay) * pow(multiplier, Double(max(0, attempt - 1)))
        let capped = min(base, Self.seconds(maxDelay))
        let factor = 1 - jitter + 2 * jitter * min(max(unit, 0), 1)
        return .milliseconds(Int64((capped * factor * 1000).rounded()))
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}

/// Faults the deliverer injects on demand, for receivers to prove they survive them.
public struct WebhookFaults: Sendable, Hashable {
    /// Each webhook is POSTed twice, the same bytes and header (the second copy counts nothing).
    public var duplicate: Bool
    /// The webhooks due together go out newest first.
    public var outOfOrder: Bool
    /// No first attempt before this long after the webhook was made (past a client's timeout:
    /// the client waits, finds nothing, and must not conclude the card was not charged).
    public var delay: Duration?
    /// The header is signed with `t` this far before the attempt: a receiver with a tolerance
    /// smaller than this must refuse it.
    public var staleBy: Duration?
    /// An extra `v0=<hex>` element (a scheme the receiver does not know) is added to the header.
    public var extraV0: Bool

    public init(duplicate: Bool = false, outOfOrder: Bool = false, delay: Duration? = nil, staleBy: Duration? = nil,
                extraV0: Bool = false) {
        self.duplicate = duplicate
        self.outOfOrder = outOfOrder
        self.delay = delay
        self.staleBy = staleBy
        self.extraV0 = extraV0
    }

    public static let none = WebhookFaults()

    /// Parses `duplicate,out-of-order,delay=30s,stale=600s,extra-v0` (for a CLI flag).
    public init(parsing text: String) throws(GatewayError) {
        self.init()
        for item in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            func seconds() throws(GatewayError) -> Duration {
                guard parts.count == 2, let n = Int64(parts[1].hasSuffix("s") ? String(parts[1].dropLast()) : parts[1]),
                      n >= 0, n <= 86_400 * 30 else {
                    throw GatewayError(.invalidRequest, "\(parts[0]) needs a number of seconds (\(parts[0])=30s)")
                }
                return .seconds(n)
            }
            switch parts[0] {
            case "duplicate": duplicate = true
            case "out-of-order": outOfOrder = true
            case "delay": delay = try seconds()
            case "stale": staleBy = try seconds()
            case "extra-v0": extraV0 = true
            default:
                throw GatewayError(.invalidRequest,
                                   "unknown webhook fault \"\(parts[0])\" (duplicate, out-of-order, delay=N, stale=N, extra-v0)")
            }
        }
    }
}

/// Delivers the ledger's webhook outbox: each webhook POSTed to its `callbackUrl` with a
/// `MONEI-Signature` header over the exact stored body bytes, signed at the attempt's time; a
/// 2xx answer is delivered;
/// anything else (another status, no answer) is retried on ``WebhookRetryPolicy``.
///
/// At least once: the state (attempts, next try, last error, each attempt) is in the ledger,
/// written after each attempt; a webhook is claimed with a lease before it is sent, so a
/// second deliverer (another process) never sends it at the same time, and one whose
/// deliverer died is sent again when the lease runs out. A receiver may see a webhook twice.
///
/// Long-running work is ``run()``, which the caller schedules (and cancels to stop);
/// ``deliverDue()`` is one pass, for tests and one-shot commands.
public final class WebhookDeliverer: Sendable {
    public let ledger: any LedgerStore
    public let transport: any WebhookTransport
    public let policy: WebhookRetryPolicy
    /// How long one POST may take.
    public let timeout: Duration
    /// The wall clock for timestamps and due times.
    public let now: @Sendable () -> Date
    /// The clock ``run()`` sleeps on between passes (the one clock type, as the gateway's).
    public let clock: MonotonicClock
    /// How often ``run()`` looks for new webhooks when none is due (another process may add some).
    public let pollInterval: Duration
    /// A number in [0, 1) for the jitter.
    private let random: @Sendable () -> Double
    private let faultState: Mutex<WebhookFaults>
    /// This deliverer's lease owner id.
    public let owner: String
    /// Called after each attempt is recorded in the ledger (a server's log line; tests wait on
    /// it): the webhook as claimed (its `attempts` before this one) and the attempt.
    private let onAttempt: (@Sendable (Webhook, WebhookAttemptRecord) -> Void)?

    public init(ledger: any LedgerStore, transport: any WebhookTransport, policy: WebhookRetryPolicy = .standard,
                timeout: Duration = .seconds(10), clock: any Clock<Duration> = ContinuousClock(),
                now: @escaping @Sendable () -> Date = { Date() }, pollInterval: Duration = .seconds(1),
                faults: WebhookFaults = .none, random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                onAttempt: (@Sendable (Webhook, WebhookAttemptRecord) -> Void)? = nil) {
        self.ledger = ledger
        self.transport = transport
        self.policy = policy
        self.timeout = timeout
        self.clock = MonotonicClock(clock)
        self.now = now
        self.pollInterval = pollInterval
        self.random = random
        faultState = Mutex(faults)
        owner = Encoding.hex(Crypto.randomBytes(8))
        self.onAttempt = onAttempt
    }

    /// The faults injected from now on.
    public var faults: WebhookFaults {
        get { faultState.withLock { $0 } }
        set { faultState.withLock { $0 = newValue } }
    }

    /// What one pass did.
    public struct Pass: Sendable, Hashable {
        /// Webhook ids delivered, in the order they were sent.
        public var delivered: [Int64] = []
        /// Webhook ids that failed this time (retried later or given up).
        public var failed: [Int64] = []
    }

    /// The lease: long enough for the POST and the write after it.
    var lease: Duration { timeout * 3 + .seconds(5) }

    /// Claims every webhook due now and sends each once (in outbox order, unless the
    /// out-of-order fault is on). A ledger error ends the pass (nothing is lost: the lease runs
    /// out and the webhook is claimed again).
    ///
    /// The batch is claimed under one lease, but its POSTs run one after another: before each
    /// but the first the lease is renewed, and a webhook whose lease ran out and was taken by
    /// another deliverer (or that was delivered meanwhile) is skipped, so two processes never
    /// send one webhook at once. A cancelled pass stops before its next POST and gives the
    /// rest of the batch back (their leases end now), recording no attempt it did not make.
    @discardableResult
    public func deliverDue(limit: Int = 100) async throws(GatewayError) -> Pass {
        let faults = self.faults
        var batch = try ledger.claimDueWebhooks(now: now(), owner: owner, lease: lease, limit: limit,
                                                firstAttemptDelay: faults.delay ?? .zero)
        if faults.outOfOrder { batch.reverse() }
        var pass = Pass()
        for (k, w) in batch.enumerated() {
            if Task.isCancelled {
                for rest in batch[k...] { _ = try ledger.renewWebhookLease(id: rest.id, owner: owner, until: now()) }
                break
            }
            if k > 0 {
                let until = now().addingTimeInterval(WebhookRetryPolicy.seconds(lease))
                guard try ledger.renewWebhookLease(id: w.id, owner: owner, until: until) else { continue }
            }
            if try await attempt(w, faults) { pass.delivered.append(w.id) } else { pass.failed.append(w.id) }
        }
        return pass
    }

    /// The header sent for `w` under `faults`, and the fault's name.
    ///
    /// Each attempt is signed at its own time (`t` is now, the body the stored bytes): the
    /// stored ``Webhook/signature`` has the `t` of the state change, which a receiver checking
    /// `t` (``WebhookSignature/defaultTolerance``) refuses once a retry comes later than that
    /// — every webhook of a receiver that was down a few minutes would be refused until given up.
    func header(for w: Webhook, _ faults: WebhookFaults) -> (String, String?) {
        var t = Int64(now().timeIntervalSince1970.rounded(.down))
        var names: [String] = []
        if let stale = faults.staleBy {
            t -= stale.components.seconds
            names.append("stale-t")
        }
        var header = WebhookSignature.header(body: Array(w.body.utf8), secret: ledger.webhookSecret, timestamp: t)
        if faults.extraV0 {
            header += ",v0=" + Encoding.hex(Crypto.randomBytes(32))
            names.append("extra-v0")
        }
        return (header, names.isEmpty ? nil : names.joined(separator: ","))
    }

    private func attempt(_ w: Webhook, _ faults: WebhookFaults) async throws(GatewayError) -> Bool {
        let (signature, faultName) = header(for: w, faults)
        let headers = [("Content-Type", "application/json"), (Webhook.signatureHeaderName, signature),
                       ("User-Agent", "tapemu-webhooks/1")]
        let body = Array(w.body.utf8)
        let copies = faults.duplicate ? 2 : 1
        var delivered = false
        for copy in 0..<copies {
            let started = now()
            var status: Int?
            var failure: String?
            do {
                let s = try await transport.post(url: w.url, headers: headers, body: body, timeout: timeout)
                status = s
                if !(200...299).contains(s) { failure = "HTTP \(s)" }
            } catch {
                failure = String(String(describing: error).prefix(200))
            }
            let ok = failure == nil
            let isExtra = copy > 0
            var next: Date?
            if !ok && !isExtra && !delivered {
                if let d = policy.delay(afterAttempt: w.attempts + 1, unit: random()) {
                    next = now().addingTimeInterval(WebhookRetryPolicy.seconds(d))
                }
            }
            let fault = [isExtra ? "duplicate" : nil, faultName].compactMap { $0 }.joined(separator: ",")
            let record = WebhookAttemptRecord(
                webhookId: w.id, owner: owner, startedAt: started, finishedAt: now(), status: status, error: failure,
                delivered: ok && !isExtra, nextAttemptAt: next, fault: fault.isEmpty ? nil : fault, isExtraCopy: isExtra)
            try ledger.recordWebhookAttempt(record)
            onAttempt?(w, record)
            if !isExtra { delivered = ok }
        }
        return delivered
    }

    /// Delivers until cancelled: a pass, then a sleep on ``clock`` until the next webhook is
    /// due or ``pollInterval`` passed, whichever is first. A ledger error is retried after
    /// ``pollInterval`` (the outbox keeps every webhook). Returns when the task is cancelled.
    public func run() async {
        while !Task.isCancelled {
            let passed = (try? await deliverDue()) != nil
            var wait = pollInterval
            if passed, let due = try? ledger.nextWebhookDue(firstAttemptDelay: faults.delay ?? .zero) {
                let ms = Int64((due.timeIntervalSince(now()) * 1000).rounded(.up))
                wait = min(wait, .milliseconds(max(0, ms)))
            }
            if wait > .zero {
                do { try await clock.sleep(for: wait) } catch { return }
            } else {
                await Task.yield()
            }
        }
    }
}
