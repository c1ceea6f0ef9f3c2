public import HTTPServer
public import PaymentGateway
public import Foundation
import Synchronization
import Timing

/// Writes each request and its answer to the ledger's request log (``RequestLogEntry``), which
/// `tapemu gateway logs` reads — from another process, or on another server of a shared ledger.
///
/// A log line is written after its answer is known, so never in the transaction of the ledger
/// change the request made (that commits before the answer exists; the webhook attempts' lines
/// are written in their own transaction by the ledger): a crash between the two loses a log
/// line, never a payment. Lines are batched — one transaction for all the lines that arrived
/// while the previous batch was being written — so the log costs about one commit per batch,
/// not one per request. A write that fails (a full disk, the database away) drops its batch
/// and counts it (``dropped``): the log never turns an answer into an error.
public final class RequestLogRecorder: HTTPHandler, Sendable {
    let inner: any HTTPHandler
    let ledger: any LedgerStore
    /// Replaced wherever it appears in a line (an error that echoed it): the log never holds it.
    let apiKey: String
    let bound: Int
    let now: @Sendable () -> Date
    private struct State {
        var pending: [RequestLogEntry] = []
        var writing = false
        var dropped = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    public init(inner: any HTTPHandler, ledger: any LedgerStore, apiKey: String,
                bound: Int = RequestLogEntry.defaultBound, now: @escaping @Sendable () -> Date = { Date() }) {
        self.inner = inner
        self.ledger = ledger
        self.apiKey = apiKey
        self.bound = bound
        self.now = now
    }

    /// Lines a failed write dropped (a full disk, the database away).
    public var dropped: Int { state.withLock { $0.dropped } }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let arrived = now()
        let clock = ContinuousClock()
        let start = clock.now
        let response = await inner.handle(request)
        let elapsed = start.duration(to: clock.now)
        let ms = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        record(entry(request, response, arrived: arrived, durationMs: ms))
        return response
    }

    /// The inner handler's immediate answer, logged like any other.
    public func immediateAnswer(to request: HTTPRequest) -> HTTPResponse? {
        let arrived = now()
        let start = ContinuousClock.now
        guard let response = inner.immediateAnswer(to: request) else { return nil }
        let elapsed = start.duration(to: .now)
        let ms = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
        record(entry(request, response, arrived: arrived, durationMs: ms))
        return response
    }

    /// The line of `request` answered with `response`: no header, no body, no query string.
    func entry(_ request: HTTPRequest, _ response: HTTPResponse, arrived: Date, durationMs: Int) -> RequestLogEntry {
        let answered: Int? = if case .closeWithoutAnswer = response.delivery { nil } else { response.status }
        let answer = Self.fields(response.body)
        var orderId = request.queryValue("orderId") ?? answer?["orderId"] as? String
        if orderId == nil, request.method == "POST" || request.method == "PUT" {
            orderId = Self.fields(request.body)?["orderId"] as? String
        }
        var detail: String?
        if answered == nil {
            detail = "closed without an answer"
        } else if let answer {
            if response.status >= 400 {
                detail = [answer["code"] as? String, answer["message"] as? String].compactMap { $0 }.joined(separator: ": ")
            } else if let status = answer["status"] as? String {
                detail = [status, answer["statusCode"] as? String, answer["statusMessage"] as? String]
                    .compactMap { $0 }.joined(separator: " ")
            }
        }
        if case .stallMidBody(let n) = response.delivery { detail = "stalled after \(n) body bytes" }
        if !apiKey.isEmpty { detail = detail?.replacingOccurrences(of: apiKey, with: "[API key]") }
        return RequestLogEntry(at: arrived, kind: .request, method: request.method, target: request.path,
                               status: answered, durationMs: durationMs,
                               requestId: request.requestId.isEmpty ? nil : request.requestId,
                               orderId: orderId, detail: detail?.isEmpty == true ? nil : detail)
    }

    /// The top-level fields of a small JSON object body (nil for anything else).
    static func fields(_ body: [UInt8]) -> [String: Any]? {
        guard !body.isEmpty, body.count <= 16 * 1024, body.first == UInt8(ascii: "{") else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    /// Queues a line; starts a writer when none is running.
    func record(_ e: RequestLogEntry) {
        let start = state.withLock { s -> Bool in
            s.pending.append(e)
            if s.writing { return false }
            s.writing = true
            return true
        }
        if start { Task { await self.drain() } }
    }

    private func drain() async {
        while true {
            let batch = state.withLock { s -> [RequestLogEntry] in
                let b = s.pending
                s.pending = []
                return b
            }
            if batch.isEmpty {
                // Nothing came while writing: this writer ends (the next line starts another).
                let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>]? in
                    guard s.pending.isEmpty else { return nil }
                    s.writing = false
                    defer { s.waiters = [] }
                    return s.waiters
                }
                guard let waiters else { continue }
                for w in waiters { w.resume() }
                return
            }
            let ledger = ledger, bound = bound
            let failed = await BlockingExecutor.ledger.run { () -> Bool in
                do throws(GatewayError) {
                    try ledger.appendRequestLog(batch, keeping: bound)
                    return false
                } catch {
                    return true
                }
            }
            if failed { state.withLock { $0.dropped += batch.count } }
        }
    }

    /// Returns once every line recorded so far is written (or dropped): tests and shutdown.
    public func flush() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if !s.writing && s.pending.isEmpty { return true }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
}
