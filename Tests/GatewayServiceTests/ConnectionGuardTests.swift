import Foundation
import GatewayService
import HTTPServer
import Synchronization
import Testing
import TestSupport

/// Honest clients are served while hostile ones hold connections (issue 33, item 3): the total
/// request deadline, the room kept for newcomers (global and per address), and shedding with
/// 503 + Retry-After instead of resets. Every wait is for a real answer, bounded; no test
/// asserts a time (the figures are printed by `tapemu-gateway-bench --hostile`).
@Suite("Connection guard: slow and idle connections never lock clients out", .serialized)
struct ConnectionGuardTests {
    /// `/slow` waits until released (counting who entered); anything else answers 200 at once.
    final class Holding: HTTPHandler, @unchecked Sendable {
        let entered = Mutex(0)
        let twoEntered = OneShotEvent()
        let release = OneShotEvent()
        func handle(_ request: HTTPRequest) async -> HTTPResponse {
            if request.path == "/slow" {
                if entered.withLock({ $0 += 1; return $0 }) == 2 { twoEntered.fire() }
                await release.wait()
            }
            return HTTPResponse(status: 200, body: Array("ok \(request.path)".utf8))
        }
    }

    static let get = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"

    @Test("past maxConnections, the oldest idle connection makes room (503 + Retry-After) and a newcomer is answered",
          arguments: [(8, 1000), (1000, 4)])
    func idleConnectionsMakeRoom(maxConnections: Int, perAddress: Int) async throws {
        var configuration = HTTPServerConfiguration(maxConnections: maxConnections, requestTimeout: .seconds(600),
                                                    maxConnectionsPerAddress: perAddress)
        configuration.limitLoopbackPerAddress = true
        let server = try HTTPServer(configuration: configuration, handler: Holding())
        let held = min(maxConnections, perAddress)
        // Accepted in the order they connected (one listen queue): the idle ones first.
        let idle = try (0..<held).map { _ in try RawConnection(port: server.port) }
        let answer = try RawConnection.request(port: server.port, Self.get)
        #expect(answer.hasPrefix("HTTP/1.1 200"), "the newcomer got: \(answer.prefix(80))")
        #expect(answer.hasSuffix("ok /hello"))
        // The oldest idle connection was answered, not reset: 503, Retry-After, the error shape.
        let shed = String(decoding: idle[0].readAll() ?? [], as: UTF8.self)
        #expect(shed.hasPrefix("HTTP/1.1 503"), "the oldest idle connection got: \(shed.prefix(80))")
        #expect(shed.contains("Retry-After: 1\r\n"))
        #expect(shed.contains(#""code":"serviceUnavailable""#) && shed.contains(#""statusCode":503"#))
        // The youngest idle one still holds its slot.
        #expect(!idle[held - 1].readable(within: 0))
        #expect(server.connectionCounts.evictedForRoom >= 1)
        await server.stop()
    }

    @Test("a request whose headers trickle in within the idle timeout is still cut at the total deadline: 408")
    func totalDeadline() async throws {
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(30),
                                                                           requestTimeout: .seconds(1)),
                                    handler: Holding())
        let c = try RawConnection(port: server.port)
        c.send("GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        // One header byte each time nothing came back within 100 ms: at most 300 (30 s, the
        // idle timeout never passes between two bytes).
        var answered = false
        for k in 0..<300 {
            if c.readable(within: 100) { answered = true; break }
            guard c.send("X-Drip-\(k): 1\r\n") else { answered = true; break }
        }
        #expect(answered, "the trickle was never cut")
        let text = String(decoding: c.readAll() ?? [], as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 408"), "got: \(text.prefix(80))")
        #expect(text.contains(#""code":"requestTimeout""#))
        #expect(server.connectionCounts.timedOut == 1)
        await server.stop()
    }

    @Test("a kept connection idle past the deadline after its answer is closed without an answer; one that began its next request still gets 408")
    func idleKeptConnectionClosedWithoutAnswer() async throws {
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(30),
                                                                           requestTimeout: .seconds(1)),
                                    handler: Holding())
        // Answered, then idle: a client may be writing its next request at the deadline, and
        // an answer written then would be read as that request's (a 408 for an authorisation
        // the server never read: onTransactionCommError under load). Everything until the
        // server closes it: the one answer, nothing after it.
        let kept = try RawConnection(port: server.port)
        kept.send("GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let text = String(decoding: kept.readAll(timeoutMs: 20_000) ?? [], as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200") && text.hasSuffix("ok /hello"), "got: \(text.prefix(200))")
        #expect(!text.contains("408"), "an answer after the answer: \(text.suffix(200))")
        // Answered, then its next request begun and stalled: 408 at the deadline, as before.
        let stalled = try RawConnection(port: server.port)
        stalled.send("GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /next HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        let second = String(decoding: stalled.readAll(timeoutMs: 20_000) ?? [], as: UTF8.self)
        #expect(second.hasPrefix("HTTP/1.1 200") && second.contains("HTTP/1.1 408") && second.contains(#""code":"requestTimeout""#),
                "got: \(second.prefix(400))")
        #expect(server.connectionCounts.timedOut == 2)
        await server.stop()
    }

    @Test("when every connection is handling a request, a newcomer is answered 503 with Retry-After, never reset")
    func shedWhenAllBusy() async throws {
        let handler = Holding()
        let server = try HTTPServer(configuration: HTTPServerConfiguration(maxConnections: 2), handler: handler)
        let busy = try (0..<2).map { _ in try RawConnection(port: server.port) }
        for c in busy { c.send("GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") }
        await handler.twoEntered.wait()
        let answer = try RawConnection.request(port: server.port, Self.get)
        #expect(answer.hasPrefix("HTTP/1.1 503"), "got: \(answer.prefix(80))")
        #expect(answer.contains("Retry-After: 1\r\n"))
        #expect(answer.contains(#""code":"serviceUnavailable""#))
        handler.release.fire()
        for c in busy {
            #expect(String(decoding: c.readAll() ?? [], as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        }
        // Room again: served.
        #expect(try RawConnection.request(port: server.port, Self.get).hasPrefix("HTTP/1.1 200"))
        await server.stop()
    }

    @Test("a NUL or an encoded NUL anywhere in the path is 400, before any handler")
    func nulInPath() async throws {
        let server = try HTTPServer(configuration: HTTPServerConfiguration(), handler: Holding())
        for path in ["/hello%00", "/hello%00.html", "/%00/hello", "/a/%00", "/hello%00?x=1"] {
            let answer = try RawConnection.request(port: server.port, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 400"), "\(path): \(answer.prefix(80))")
            #expect(!answer.contains("ok /"), "\(path) reached the handler")
        }
        // A raw NUL byte in the request target (libmicrohttpd hands the path over as a C string
        // cut at it), in the path or in the query, and one that mimics the version after it.
        for target in ["/hello\0.html", "/hello\0", "/a?q=1\0x", "/hello\0HTTP/1.1"] {
            let raw = try RawConnection.request(port: server.port, "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            #expect(raw.hasPrefix("HTTP/1.1 400"), "raw NUL in \(target.debugDescription): \(raw.prefix(80))")
            #expect(!raw.contains("ok /"))
        }
        // Keep-alive: the next request on the connection is judged on its own.
        let c = try RawConnection(port: server.port)
        c.send("GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let two = String(decoding: c.readAll() ?? [], as: UTF8.self)
        #expect(two.components(separatedBy: "HTTP/1.1 200").count == 3, "\(two)")
        // %2500 is a percent sign and 00, not a NUL.
        let escaped = try RawConnection.request(port: server.port, "GET /hello%2500 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        #expect(escaped.hasPrefix("HTTP/1.1 200"), "\(escaped.prefix(80))")
        await server.stop()
    }

    @Test("the gateway with its default limits, 300 slow-header and 300 idle connections held: a request is answered and `tapemu pay --gateway` approves",
          .temporaryDirectories)
    func gatewayUnderHostileLoad() async throws {
        let dir = try temporaryDirectory()
        let service = try GatewayService(dataDirectory: dir + "/srv")
        let server = try HTTPServer(configuration: HTTPServerConfiguration(), handler: service.routes())
        let hostile = try HostileConnections(port: server.port, slow: 300, idle: 300)
        defer { hostile.close() }
        hostile.drip()
        let health = try RawConnection.request(port: server.port, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        #expect(health.hasPrefix("HTTP/1.1 200"), "health: \(health.prefix(80))")
        hostile.drip()
        let pay = await runCLI(["pay", "--amount", "1250", "--order-id", "hostile-1", "--gateway", server.url, "--api-key", service.apiKey,
                                 "--data-dir", dir + "/dev", "--json"])
        hostile.drip()
        #expect(pay.status == 0, "pay: \(pay.out) \(pay.err)")
        #expect(try jsonObject(Array(pay.out.utf8))["status"] as? String == "approved", "\(pay.out)")
        // Whatever the server closed of the hostile ones, it answered: no reset without a word.
        for line in hostile.statusLines {
            #expect(line.hasPrefix("HTTP/1.1 503") || line.hasPrefix("HTTP/1.1 408"), "\(line)")
            if line.hasPrefix("HTTP/1.1 503") { #expect(line.hasSuffix("(Retry-After)")) }
        }
        await server.stop()
    }
}

