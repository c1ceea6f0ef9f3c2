import Foundation
import HTTPClient
import HTTPServer
import PaymentGateway
import Synchronization
import Testing
import TestSupport
@testable import tapemu

/// A webhook endpoint in the test process: an ``HTTPServer`` on an ephemeral port that keeps
/// every request and answers each path's n-th request (from 1) with `answer(path, n)`.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var path: String
        var headers: [(name: String, value: String)]
        var body: [UInt8]

        var signature: String? { headers.first { $0.name.lowercased() == "monei-signature" }?.value }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    struct Timeout: Error, CustomStringConvertible {
        var description: String
    }

    final class State: Sendable {
        let answer: @Sendable (String, Int) -> Int
        let log = Mutex<(received: [Received], waiters: [Int: CheckedContinuation<Void, Never>], next: Int)>(([], [:], 0))

        init(answer: @escaping @Sendable (String, Int) -> Int) { self.answer = answer }

        func add(_ r: Received) -> Int {
            let (n, waiters) = log.withLock { s -> (Int, [CheckedContinuation<Void, Never>]) in
                s.received.append(r)
                let w = Array(s.waiters.values)
                s.waiters = [:]
                return (s.received.filter { $0.path == r.path }.count, w)
            }
            for w in waiters { w.resume() }
            return answer(r.path, n)
        }
    }

    struct Handler: HTTPHandler {
        let state: State
        func handle(_ request: HTTPRequest) async -> HTTPResponse {
            let status = state.add(Received(path: request.path, headers: request.headers, body: request.body))
            return HTTPResponse(status: status, headers: [("Content-Type", "text/plain")], body: Array("ok".utf8))
        }
    }

    let state: State
    let server: HTTPServer

    init(answer: @escaping @Sendable (_ path: String, _ n: Int) -> Int = { _, _ in 200 }) throws {
        state = State(answer: answer)
        server = try HTTPServer(configuration: HTTPServerConfiguration(), handler: Handler(state: state))
    }

    var url: String { server.url }
    var received: [Received] { state.log.withLock { $0.received } }

    /// Waits for requests to arrive (each arrival wakes the check) until `condition` holds on
    /// what arrived, or fails after `within`.
    @discardableResult
    func wait(for what: String, within: Duration = .seconds(30),
              _ condition: @escaping @Sendable ([Received]) -> Bool) async throws -> [Received] {
        let deadline = ContinuousClock.now + within
        while true {
            let snapshot = received
            if condition(snapshot) { return snapshot }
            let left = deadline - .now
            guard left > .zero else {
                throw Timeout(description: "the receiver never saw \(what); it got \(snapshot.map { "\($0.path) \($0.text.prefix(80))" })")
            }
            await nextArrival(orAfter: left)
        }
    }

    /// Returns at the next request's arrival, or after `limit`.
    private func nextArrival(orAfter limit: Duration) async {
        let id = state.log.withLock { s -> Int in
            s.next += 1
            return s.next
        }
        // The waiter is registered before the bound starts, so a bound that ends first always
        // finds it (never a continuation left waiting for ever).
        var bound: Task<Void, Never>?
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            state.log.withLock { $0.waiters[id] = c }
            bound = Task { [state] in
                try? await Task.sleep(for: limit)
                state.log.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }
        bound?.cancel()
    }

    /// Requests on `path` whose body holds `"orderId":"<orderId>"`.
    static func of(_ received: [Received], order orderId: String, path: String? = nil) -> [Received] {
        received.filter { ($0.path == path || path == nil) && $0.text.contains(#""orderId":"\#(orderId)""#) }
    }
}

/// `tapemu pay --json` of 12.50 for `orderId` against the gateway served at `url` (API key
/// `key`), its webhook to `callback`, the device's store in `device`.
func payOverTCP(_ orderId: String, url: String, key: String, callback: String,
                device: String) async -> (status: Int32, out: String, err: String) {
    await runCLI(["pay", "--amount", "1250", "--order-id", orderId, "--callback-url", callback, "--gateway", url,
                  "--api-key", key, "--data-dir", device, "--json"])
}

/// Runs the built `tapemu` binary (the real CLI) and collects its exit status and output.
func runBinary(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
    let r = try runToEnd(try ServeProcess.binary().path, args)
    return (r.status, r.stdout, r.stderr)
}

/// The short retry schedule the webhook tests give `gateway serve` (hidden option).
let testSchedule = ["--test-webhook-schedule", "initial=100ms,max=200ms,attempts=4,poll=50ms,timeout=2s,jitter=0"]

extension ServeProcess {
    /// Starts a server and reads its URL and API key from its first lines.
    static func start(_ args: [String]) async throws -> (ServeProcess, url: String, key: String) {
        let server = try ServeProcess(args)
        let url = try await server.url()
        let keyLine = try #require(await server.line(startingWith: "merchant API key: "))
        return (server, url, String(keyLine.dropFirst("merchant API key: ".count)))
    }

    /// SIGTERM, then the exit: 0 and not signalled.
    func stop() async {
        process.terminate()
        let exit = await waitForExit()
        #expect(exit.status == 0 && !exit.signalled, "the server did not stop cleanly: \(exit)")
    }
}

/// `tapemu gateway webhooks --json` rows of `orderId` (the real binary, the ledger read only).
func webhookRows(_ dataDir: String, orderId: String) throws -> [[String: Any]] {
    let r = try runBinary(["gateway", "webhooks", "--order-id", orderId, "--data-dir", dataDir, "--json"])
    #expect(r.status == 0, "\(r.err)")
    return try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [[String: Any]])
}

/// POST `query` to `/graphql` with the key.
func graphQL(_ url: String, key: String?, body: String) async throws -> (status: Int, json: [String: Any]) {
    var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
    if let key { headers.append(("Authorization", key)) }
    let r = try await HTTPClient().send(HTTPClientRequest(method: "POST", url: url + "/graphql", headers: headers,
                                                          body: Array(body.utf8)))
    return (r.status, try jsonObject(r.body))
}

@Suite("gateway serve delivers webhooks over HTTP", .serialized, .temporaryDirectories)
struct WebhookServeTests {
    @Test("a payment with a callbackUrl: the receiver gets the POST, and `tapemu webhook verify` accepts its MONEI-Signature with `tapemu gateway secret`'s secret")
    func signedDelivery() async throws {
        let receiver = try WebhookReceiver()
        let serverDir = try temporaryDirectory()
        let (server, url, apiKey) = try await ServeProcess.start(["--data-dir", serverDir] + testSchedule)
        let pay = await payOverTCP("wh-signed", url: url, key: apiKey, callback: receiver.url + "/hook", device: try temporaryDirectory())
        #expect(pay.status == 0, "\(pay.err)")
        let got = try await receiver.wait(for: "the webhook of wh-signed") { !WebhookReceiver.of($0, order: "wh-signed").isEmpty }
        let hook = try #require(WebhookReceiver.of(got, order: "wh-signed").first)
        #expect(hook.path == "/hook")
        let header = try #require(hook.signature)
        #expect(header.hasPrefix("t=") && header.contains(",v1="))
        #expect(hook.headers.contains { $0.name.lowercased() == "content-type" && $0.value == "application/json" })
        #expect(!hook.text.contains("4761739001010010") && !hook.text.contains("4012888888881881"))
        // The body is MONEI's Payment object (what its SDKs' verifySignature returns), plus tapemu's event and uniqueRef.
        let payment = try jsonObject(hook.body)
        #expect(payment["status"] as? String == "SUCCEEDED" && payment["orderId"] as? String == "wh-signed")
        #expect(payment["amount"] as? Int == 1250 && payment["currency"] as? String == "EUR" && payment["livemode"] as? Bool == false)
        let method = try #require(payment["paymentMethod"] as? [String: Any])
        #expect(method["method"] as? String == "card" && (method["card"] as? [String: Any])?["last4"] as? String == "0010")
        #expect(payment["event"] as? String == "approved" && payment["cardBrand"] == nil)

        // MONEI's rule: the key is the merchant API key (what gateway serve printed), not another secret.
        let secret = try runBinary(["gateway", "secret", "--data-dir", serverDir])
        #expect(secret.status == 0, "\(secret.err)")
        let key = secret.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.hasPrefix("tpk_test_") && key.count == 9 + 64)
        #expect(await server.line(startingWith: "merchant API key: ") == "merchant API key: \(key)")
        let bodyFile = try temporaryDirectory() + "/body.json"
        try Data(hook.body).write(to: URL(fileURLWithPath: bodyFile))
        let verified = try runBinary(["webhook", "verify", "--api-key", key, "--header", header, "--body-file", bodyFile])
        #expect(verified.status == 0, "\(verified.out) \(verified.err)")
        #expect(verified.out.hasPrefix("valid"))
        // The legacy secret (it signed webhooks before ledger version 3) does not verify a new one.
        let legacy = try runBinary(["gateway", "secret", "--legacy", "--data-dir", serverDir])
        let legacyKey = legacy.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(legacy.status == 0 && legacyKey.count == 64)
        let old = try runBinary(["webhook", "verify", "--secret", legacyKey, "--header", header, "--body-file", bodyFile])
        #expect(old.status == 1 && old.out.contains("noMatchingSignature"), "\(old.out)")
        // The same header over other bytes does not verify: the check is real.
        try Data(hook.body + Array(" ".utf8)).write(to: URL(fileURLWithPath: bodyFile))
        let tampered = try runBinary(["webhook", "verify", "--api-key", key, "--header", header, "--body-file", bodyFile])
        #expect(tampered.status == 1 && tampered.out.contains("noMatchingSignature"), "\(tampered.out)")

        _ = try #require(await server.line(startingWith: "tapemu: webhook 1 (order wh-signed) attempt 1: delivered (HTTP 200)"))
        let rows = try webhookRows(serverDir, orderId: "wh-signed")
        #expect(rows.count == 1 && rows.first?["state"] as? String == "delivered" && rows.first?["attempts"] as? Int == 1)
        await server.stop()
        await receiver.server.stop()
    }

    @Test("a receiver answering 500 then 200: the webhook is retried with the same bytes and delivered; gateway webhooks shows both attempts")
    func retriedThenDelivered() async throws {
        let receiver = try WebhookReceiver { _, n in n == 1 ? 500 : 200 }
        let serverDir = try temporaryDirectory()
        let (server, url, key) = try await ServeProcess.start(["--data-dir", serverDir] + testSchedule)
        let pay = await payOverTCP("wh-retry", url: url, key: key, callback: receiver.url + "/flaky", device: try temporaryDirectory())
        #expect(pay.status == 0, "\(pay.err)")
        let first = try #require(await server.line(startingWith: "tapemu: webhook 1 (order wh-retry) attempt 1: HTTP 500, next try "))
        _ = try #require(await server.line(startingWith: "tapemu: webhook 1 (order wh-retry) attempt 2: delivered (HTTP 200)"))
        #expect(!first.isEmpty)
        let got = WebhookReceiver.of(receiver.received, order: "wh-retry")
        #expect(got.count == 2)
        // The same bytes; each attempt signed at its own time (8514c1d): the same signature
        // exactly when both were sent within the same second (`t` in whole seconds).
        #expect(got.count == 2 && got[0].body == got[1].body)
        if got.count == 2 {
            func t(_ header: String?) -> Substring? { header?.split(separator: ",").first { $0.hasPrefix("t=") } }
            #expect(t(got[0].signature) != nil && t(got[1].signature) != nil)
            #expect((got[0].signature == got[1].signature) == (t(got[0].signature) == t(got[1].signature)),
                    "\(got[0].signature ?? "-") / \(got[1].signature ?? "-")")
        }
        let rows = try webhookRows(serverDir, orderId: "wh-retry")
        #expect(rows.first?["state"] as? String == "delivered")
        #expect(rows.first?["attempts"] as? Int == 2)
        #expect(rows.first?["lastStatus"] as? Int == 200)
        await server.stop()
        await receiver.server.stop()
    }

    @Test("killed by SIGKILL between the commit and the answer: outcomeUnknown; the restarted server delivers the webhook and GraphQL charges finds the order")
    func killAfterCommitThenDelivered() async throws {
        let receiver = try WebhookReceiver()
        let serverDir = try temporaryDirectory()
        let (server, url, key) = try await ServeProcess.start(["--data-dir", serverDir, "--fault", "kill-after-commit"]
                                                              + testSchedule)
        let pay = await payOverTCP("order-1042", url: url, key: key, callback: receiver.url + "/hook", device: try temporaryDirectory())
        #expect(pay.status == PayCommand.outcomeUnknown, "\(pay.err)")
        let exit = await server.waitForExit()
        #expect(exit.signalled && exit.status == SIGKILL)

        let (restarted, url2, key2) = try await ServeProcess.start(["--data-dir", serverDir] + testSchedule)
        #expect(key2 == key)
        let got = try await receiver.wait(for: "the webhook of order-1042 after the restart") {
            !WebhookReceiver.of($0, order: "order-1042").isEmpty
        }
        #expect(WebhookReceiver.of(got, order: "order-1042").first?.signature != nil)
        // Sent by the restarted server (the first died before its deliverer could).
        _ = try #require(await restarted.line(startingWith: "tapemu: webhook 1 (order order-1042) attempt 1: delivered"))
        // The seed's query, verbatim, over HTTP: the key is required.
        let seed = #"{"query":"query { charges(filter: {orderId: {eq: \"order-1042\"}}) { items { id status amount } } }"}"#
        let denied = try await graphQL(url2, key: nil, body: seed)
        #expect(denied.status == 401)
        let found = try await graphQL(url2, key: key2, body: seed)
        #expect(found.status == 200)
        let items = try #require(((found.json["data"] as? [String: Any])?["charges"] as? [String: Any])?["items"] as? [[String: Any]])
        #expect(items.count == 1)
        #expect(items.first?["status"] as? String == "SUCCEEDED" && items.first?["amount"] as? Int == 1250)
        #expect(Set(items.first?.keys.map { $0 } ?? []) == ["id", "status", "amount"])
        await restarted.stop()
        await receiver.server.stop()
    }

    @Test("a restart with undelivered webhooks resumes them (out-of-order: the two due together go newest first)")
    func restartResumes() async throws {
        let receiver = try WebhookReceiver()
        let serverDir = try temporaryDirectory()
        // First run: every first attempt held back an hour, so nothing leaves before the stop.
        let (server, url, key) = try await ServeProcess.start(["--data-dir", serverDir, "--webhook-fault", "delay=3600s"]
                                                            + testSchedule)
        let device = try temporaryDirectory()
        for order in ["resume-1", "resume-2"] {
            let pay = await payOverTCP(order, url: url, key: key, callback: receiver.url + "/hook", device: device)
            #expect(pay.status == 0, "\(pay.err)")
        }
        await server.stop()
        #expect(receiver.received.isEmpty)
        for order in ["resume-1", "resume-2"] {
            let rows = try webhookRows(serverDir, orderId: order)
            #expect(rows.count == 1 && rows.first?["state"] as? String == "pending" && rows.first?["attempts"] as? Int == 0)
        }
        // Second run, without the delay: both are due at once.
        let (restarted, _, _) = try await ServeProcess.start(["--data-dir", serverDir, "--webhook-fault", "out-of-order"]
                                                             + testSchedule)
        let got = try await receiver.wait(for: "both webhooks after the restart") { $0.count >= 2 }
        #expect(got.count == 2)
        #expect(got[0].text.contains(#""orderId":"resume-2""#) && got[1].text.contains(#""orderId":"resume-1""#),
                "out-of-order sends the newest first: \(got.map(\.text))")
        _ = try #require(await restarted.line(startingWith: "tapemu: webhook 1 (order resume-1) attempt 1: delivered"))
        #expect(try webhookRows(serverDir, orderId: "resume-1").first?["state"] as? String == "delivered")
        await restarted.stop()
        await receiver.server.stop()
    }

    @Test("each webhook fault is observable at the receiver: duplicate, stale t, extra v0, delay")
    func faultsAtTheReceiver() async throws {
        let receiver = try WebhookReceiver()
        let serverDir = try temporaryDirectory()
        let (server, url, key) = try await ServeProcess.start(["--data-dir", serverDir, "--webhook-fault", "duplicate"]
                                                              + testSchedule)
        let secret = try runBinary(["gateway", "secret", "--data-dir", serverDir]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let device = try temporaryDirectory()
        func pay(_ order: String) async {
            let r = await payOverTCP(order, url: url, key: key, callback: receiver.url + "/hook", device: device)
            #expect(r.status == 0, "\(r.err)")
        }
        func setFaults(_ list: String) async throws {
            let r = try await HTTPClient().send(HTTPClientRequest(
                method: "POST", url: url + "/admin/webhook-faults",
                headers: [("Authorization", key), ("Content-Type", "application/json")],
                body: Array(#"{"faults":"\#(list)"}"#.utf8)))
            #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
        }
        func verify(_ hook: WebhookReceiver.Received, tolerance: String? = nil) throws -> (status: Int32, out: String) {
            let file = try temporaryDirectory() + "/body.json"
            try Data(hook.body).write(to: URL(fileURLWithPath: file))
            let r = try runBinary(["webhook", "verify", "--secret", secret, "--header", hook.signature ?? "",
                                   "--body-file", file] + (tolerance.map { ["--tolerance", $0] } ?? []))
            return (r.status, r.out)
        }

        // duplicate: the same bytes and header twice.
        await pay("fault-dup")
        let dups = try await receiver.wait(for: "two copies of fault-dup") { WebhookReceiver.of($0, order: "fault-dup").count >= 2 }
        let copies = WebhookReceiver.of(dups, order: "fault-dup")
        #expect(copies.count == 2 && copies[0].body == copies[1].body && copies[0].signature == copies[1].signature)
        #expect(try verify(copies[0]).status == 0)

        // stale t: signed 600 s in the past; the default 300 s tolerance refuses it, a wider one accepts it.
        try await setFaults("stale=600s")
        await pay("fault-stale")
        let stale = try #require(WebhookReceiver.of(
            try await receiver.wait(for: "fault-stale") { !WebhookReceiver.of($0, order: "fault-stale").isEmpty },
            order: "fault-stale").first)
        let refused = try verify(stale)
        #expect(refused.status == 1 && refused.out.contains("staleTimestamp"), "\(refused.out)")
        #expect(try verify(stale, tolerance: "700s").status == 0)

        // extra v0: an unknown scheme beside v1, which a verifier ignores.
        try await setFaults("extra-v0")
        await pay("fault-v0")
        let v0 = try #require(WebhookReceiver.of(
            try await receiver.wait(for: "fault-v0") { !WebhookReceiver.of($0, order: "fault-v0").isEmpty },
            order: "fault-v0").first)
        #expect(v0.signature?.contains(",v0=") == true && v0.signature?.contains(",v1=") == true)
        #expect(try verify(v0).status == 0)

        // delay: nothing leaves before the delay, though the deliverer polls every 50 ms; then it comes.
        try await setFaults("delay=2s")
        await pay("fault-delay")
        let held = try webhookRows(serverDir, orderId: "fault-delay")
        #expect(held.first?["state"] as? String == "pending" && held.first?["attempts"] as? Int == 0)
        #expect(WebhookReceiver.of(receiver.received, order: "fault-delay").isEmpty)
        _ = try await receiver.wait(for: "fault-delay after its delay") { !WebhookReceiver.of($0, order: "fault-delay").isEmpty }
        _ = try #require(await server.line(startingWith: "tapemu: webhook 4 (order fault-delay) attempt 1: delivered"))
        let ledger = try Ledger(directory: serverDir, access: .readOnly)
        let w = try #require(try ledger.webhookDeliveries(orderId: "fault-delay").first)
        let firstAttempt = try #require(w.lastAttemptAt)
        #expect(firstAttempt.timeIntervalSince(w.webhook.createdAt) >= 2, "the first attempt came before the delay")

        // The admin endpoint lists and clears them.
        let cleared = try await HTTPClient().send(HTTPClientRequest(method: "DELETE", url: url + "/admin/webhook-faults",
                                                                    headers: [("Authorization", key)]))
        #expect(cleared.status == 200)
        let bad = try await HTTPClient().send(HTTPClientRequest(
            method: "POST", url: url + "/admin/webhook-faults",
            headers: [("Authorization", key), ("Content-Type", "application/json")], body: Array(#"{"faults":"sideways"}"#.utf8)))
        #expect(bad.status == 400)
        await server.stop()
        await receiver.server.stop()
    }
}
