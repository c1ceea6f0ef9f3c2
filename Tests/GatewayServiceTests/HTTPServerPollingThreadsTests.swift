import Foundation
import HTTPClient
import HTTPServer
import Synchronization
import Testing
import TestSupport

/// The server polls its connections on a few threads (epoll) and suspends a connection while
/// its handler runs: no thread per connection, and no polling thread waits for a handler.
@Suite("HTTP server: a few polling threads, connections suspended while their handler runs")
struct HTTPServerPollingThreadsTests {
    /// The threads of this process now.
    static func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }

    /// A loopback connection that sent `GET /echo` and read its whole answer (kept open after).
    static func keptConnection(port: UInt16) throws -> RawConnection {
        let connection = try RawConnection(port: port)
        try #require(connection.send("GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // TestHandler answers `GET /echo` with the body "GET - ".
        while !String(decoding: answer, as: UTF8.self).hasSuffix("\r\n\r\nGET - ") {
            try #require(connection.readable(within: 10_000), "no more of the answer within 10 s after \(answer.count) bytes")
            let n = buffer.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, 0) }
            try #require(n > 0, "the answer ended after \(answer.count) bytes")
            answer += buffer[0..<n]
        }
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        return connection
    }

    @Test("128 kept connections, each answered once, hold no thread each (thread per connection held 128 more)")
    func keptConnectionsHoldNoThreads() async throws {
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(30)),
                                    handler: TestHandler())
        // One answered request first: the server's own threads have started.
        let first = try Self.keptConnection(port: server.port)
        let before = Self.threadCount()
        var kept: [RawConnection] = []
        for _ in 0..<128 { kept.append(try Self.keptConnection(port: server.port)) }
        let during = Self.threadCount()
        #expect(server.connectionCounts.held == 129)
        #expect(during - before < 32, "\(before) threads before, \(during) with 128 more connections held")
        await server.stop()
        withExtendedLifetime((first, kept)) {}   // held open until the server stopped
    }

    @Test("with one polling thread, a handler that waits holds its own connection only: another is answered meanwhile")
    func waitingHandlerHoldsOnlyItsConnection() async throws {
        var configuration = HTTPServerConfiguration(connectionTimeout: .seconds(10))
        configuration.threads = 1
        let handler = TestHandler()
        let server = try HTTPServer(configuration: configuration, handler: handler)
        let slow = Task { try await HTTPClient().send(HTTPClientRequest(url: server.url + "/slow")) }
        await handler.entered.wait()
        let other = try await HTTPClient().send(HTTPClientRequest(method: "POST", url: server.url + "/echo", body: Array("x".utf8)))
        #expect(other.status == 200 && String(decoding: other.body, as: UTF8.self) == "POST - x")
        handler.release.fire()
        let answer = try await slow.value
        #expect(answer.status == 200 && String(decoding: answer.body, as: UTF8.self) == "done")
        await server.stop()
    }

    @Test("a server dropped while a handler waits closes that connection; the late answer touches nothing")
    func droppedWhileHandlerWaits() async throws {
        let handler = TestHandler()
        var server: HTTPServer? = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(10)),
                                                 handler: handler)
        let url = try #require(server?.url)
        let slow = Task { try await HTTPClient().send(HTTPClientRequest(url: url + "/slow", idempotent: false)) }
        await handler.entered.wait()
        // libmicrohttpd stops with no connection suspended (it aborts the process otherwise).
        server = nil
        await #expect(throws: HTTPClientError.self) { try await slow.value }
        handler.release.fire()
        // A new server answers: the process is whole.
        let again = try HTTPServer(configuration: HTTPServerConfiguration(), handler: TestHandler())
        let r = try await HTTPClient().send(HTTPClientRequest(url: again.url + "/echo"))
        #expect(r.status == 200)
        await again.stop()
    }

    /// Answers `GET /now` at once; every other request through ``handle(_:)``, which counts.
    final class ImmediateHandler: HTTPHandler {
        let handled = Atomic<Int>(0)
        func handle(_ request: HTTPRequest) async -> HTTPResponse {
            handled.add(1, ordering: .relaxed)
            return HTTPResponse(status: 200, body: Array("task".utf8))
        }
        func immediateAnswer(to request: HTTPRequest) -> HTTPResponse? {
            guard request.path == "/now" else { return nil }
            return HTTPResponse(status: 200, headers: [("X-Request-Id", "ignored")], body: Array("now".utf8))
        }
    }

    @Test("a handler's immediate answer is queued on the polling thread: its handle() never runs, the request id is the server's; the rest go through handle()")
    func immediateAnswerWithoutATask() async throws {
        let handler = ImmediateHandler()
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(10)), handler: handler)
        let client = HTTPClient()
        for _ in 0..<20 {
            let r = try await client.send(HTTPClientRequest(url: server.url + "/now", headers: [("X-Request-Id", "given-1")]))
            #expect(r.status == 200 && String(decoding: r.body, as: UTF8.self) == "now" && r.header("X-Request-Id") == "given-1")
        }
        #expect(handler.handled.load(ordering: .relaxed) == 0)
        let other = try await client.send(HTTPClientRequest(url: server.url + "/later"))
        #expect(String(decoding: other.body, as: UTF8.self) == "task" && handler.handled.load(ordering: .relaxed) == 1)
        await server.stop()
    }
}
