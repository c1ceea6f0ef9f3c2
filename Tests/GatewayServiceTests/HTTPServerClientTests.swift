import Foundation
import HTTPClient
import HTTPServer
import PaymentGateway
import Synchronization
import Testing
import TestSupport
import PaymentRules

/// Answers by path: `/echo` echoes method and body, `/close`, `/stall`, `/slow` (waits for
/// `release`), anything else 404.
struct TestHandler: HTTPHandler {
    let entered = OneShotEvent()
    let release = OneShotEvent()

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        switch request.path {
        case "/echo":
            var body = Array("\(request.method) \(request.queryValue("q") ?? "-") ".utf8)
            body += request.body
            return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain"),
                                                       ("X-Saw-Transfer-Encoding", request.header("Transfer-Encoding") ?? "none")],
                                body: body)
        case "/close":
            return HTTPResponse(status: 200, body: Array("never sent".utf8), delivery: .closeWithoutAnswer)
        case "/stall":
            entered.fire()
            return HTTPResponse(status: 200, body: Array(repeating: UInt8(ascii: "x"), count: 1000),
                                delivery: .stallMidBody(afterBytes: 100))
        case "/slow":
            entered.fire()
            await release.wait()
            return HTTPResponse(status: 200, body: Array("done".utf8))
        default:
            return HTTPResponse(status: 404, body: Array("nothing here".utf8))
        }
    }
}

/// A TCP port nothing listens on: bound, then closed.
func closedPort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var sin = sockaddr_in()
    sin.sin_family = sa_family_t(AF_INET)
    sin.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &sin) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var out = sockaddr_in()
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &out) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    return UInt16(bigEndian: out.sin_port)
}

@Suite("HTTP server and client over real sockets")
struct HTTPServerClientTests {
    static func serve(_ handler: any HTTPHandler = TestHandler(),
                      _ configuration: HTTPServerConfiguration = HTTPServerConfiguration(connectionTimeout: .seconds(1)))
        throws -> HTTPServer {
        try HTTPServer(configuration: configuration, handler: handler)
    }

    @Test("an ephemeral port, a complete answer with its body, the query and an X-Request-Id")
    func echo() async throws {
        let server = try Self.serve()
        #expect(server.port != 0)
        #expect(server.url == "http://127.0.0.1:\(server.port)")
        let r = try await HTTPClient().send(HTTPClientRequest(method: "POST", url: server.url + "/echo?q=a%20b",
                                                              body: Array("hello".utf8)))
        #expect(r.status == 200)
        #expect(String(decoding: r.body, as: UTF8.self) == "POST a b hello")
        #expect(r.header("x-request-id")?.count == 32)
        #expect(r.header("Content-Type") == "text/plain")
        let again = try await HTTPClient().send(HTTPClientRequest(url: server.url + "/missing",
                                                                  headers: [("X-Request-Id", "trace-42")]))
        #expect(again.status == 404)
        #expect(again.header("X-Request-Id") == "trace-42")
        await server.stop()
    }

    @Test("a URL's scheme is taken in any case (RFC 3986), as CallbackURL takes a callbackUrl: HTTP://… is sent")
    func schemeInAnyCase() async throws {
        let server = try Self.serve()
        for scheme in ["HTTP", "Http"] {
            let url = server.url.replacingOccurrences(of: "http", with: scheme) + "/echo"
            // The gateway records a payment with this callbackUrl: its webhook must be deliverable.
            #expect(CallbackURL.isValid(url))
            let r = try await HTTPClient().send(HTTPClientRequest(method: "POST", url: url, body: Array("hook".utf8)))
            #expect(r.status == 200)
            #expect(String(decoding: r.body, as: UTF8.self) == "POST - hook")
        }
        // Still only http(s): another scheme is refused before anything is sent.
        await #expect(throws: HTTPClientError.self) {
            try await HTTPClient().send(HTTPClientRequest(url: "FILE:///etc/passwd"))
        }
        await server.stop()
    }

    @Test("a body over the limit is 413 before the handler; too many header fields are 431")
    func limits() async throws {
        let server = try Self.serve(TestHandler(), HTTPServerConfiguration(maxBodySize: 64, maxHeaderCount: 8,
                                                                            connectionTimeout: .seconds(1)))
        let big = try await HTTPClient().send(HTTPClientRequest(method: "POST", url: server.url + "/echo",
                                                                body: Array(repeating: 0x41, count: 65)))
        #expect(big.status == 413)
        #expect(big.header("X-Request-Id") != nil)
        #expect(String(decoding: big.body, as: UTF8.self).contains("\"statusCode\":413"))
        let fits = try await HTTPClient().send(HTTPClientRequest(method: "POST", url: server.url + "/echo",
                                                                 body: Array(repeating: 0x41, count: 64)))
        #expect(fits.status == 200)
        // Headers larger than the connection's memory: libmicrohttpd's own refusal (4xx), no crash.
        let wide = try await HTTPClient().send(HTTPClientRequest(url: server.url + "/echo",
                                                                 headers: [("X-Wide", String(repeating: "w", count: 40_000))]))
        #expect((400..<500).contains(wide.status))
        let headers = (0..<10).map { (name: "X-Extra-\($0)", value: "v") }
        let many = try await HTTPClient().send(HTTPClientRequest(url: server.url + "/echo", headers: headers))
        #expect(many.status == 431)
        await server.stop()
    }

    @Test("closeWithoutAnswer closes the connection without a status line: connectionClosed")
    func closeWithoutAnswer() async throws {
        let server = try Self.serve()
        let closed = await clientError { try await HTTPClient().send(HTTPClientRequest(url: server.url + "/close")) }
        #expect(closed?.kind == .connectionClosed)
        #expect(closed?.requestMayHaveLeft == true)
        await server.stop()
    }

    @Test("stallMidBody: part of the body, then the server's timeout closes it (cut short), or the client's fires first")
    func stall() async throws {
        let server = try Self.serve()
        let cut = await clientError { try await HTTPClient().send(HTTPClientRequest(url: server.url + "/stall", timeout: .seconds(10))) }
        #expect(cut?.kind == .answerCutShort)
        #expect(cut?.status == 200)
        let late = await clientError {
            try await HTTPClient().send(HTTPClientRequest(url: server.url + "/stall", timeout: .milliseconds(300)))
        }
        #expect(late?.kind == .timedOut)
        #expect(late?.requestMayHaveLeft == true)
        await server.stop()
    }

    @Test("nothing listening: couldNotConnect, and the request provably never left")
    func refused() async throws {
        let port = closedPort()
        let refused = await clientError { try await HTTPClient().send(HTTPClientRequest(url: "http://127.0.0.1:\(port)/echo")) }
        #expect(refused?.kind == .couldNotConnect)
        #expect(refused?.requestMayHaveLeft == false)
    }

    @Test("a slow client that never finishes its headers is disconnected by the connection timeout")
    func slowClient() async throws {
        let server = try Self.serve()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = server.port.bigEndian
        sin.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        var tv = timeval(tv_sec: 20, tv_usec: 0) // a guard against a hang only
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let partial = Array("GET /echo HTTP/1.1\r\nHost: x\r\n".utf8)
        _ = partial.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var buffer = [UInt8](repeating: 0, count: 512)
        // The server closes the idle connection (read returns 0, or a reset), without a 200.
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        let text = n > 0 ? String(decoding: buffer.prefix(n), as: UTF8.self) : ""
        #expect(n <= 0 || !text.contains(" 200 "))
        await server.stop()
    }

    @Test("stop lets the request under way finish, then refuses new connections")
    func gracefulStop() async throws {
        let handler = TestHandler()
        let server = try Self.serve(handler)
        let url = server.url
        let inFlight = Task { try await HTTPClient().send(HTTPClientRequest(url: url + "/slow")) }
        await handler.entered.wait()
        #expect(server.requestsInFlight == 1)
        let stopping = Task { await server.stop() }
        handler.release.fire()
        let answer = try await inFlight.value
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self) == "done")
        await stopping.value
        do throws(HTTPClientError) {
            _ = try await HTTPClient().send(HTTPClientRequest(url: url + "/echo"))
            Issue.record("a stopped server answered")
        } catch {
            #expect(error.kind == .couldNotConnect)
        }
    }

    @Test("a cancelled task ends its exchange with cancelled")
    func cancelled() async throws {
        let handler = TestHandler()
        let server = try Self.serve(handler)
        let url = server.url
        let task = Task { try await HTTPClient().send(HTTPClientRequest(url: url + "/slow", timeout: .seconds(20))) }
        await handler.entered.wait()
        task.cancel()
        #expect(await clientError { try await task.value }?.kind == .cancelled)
        handler.release.fire()
        await server.stop()
    }

    @Test("stop ends a stalled answer at once instead of waiting for the connection timeout")
    func stopEndsStall() async throws {
        let handler = TestHandler()
        let server = try Self.serve(handler, HTTPServerConfiguration(connectionTimeout: .seconds(60)))
        let url = server.url
        let stalled = Task { () async throws(HTTPClientError) -> HTTPClientResponse in
            try await HTTPClient().send(HTTPClientRequest(url: url + "/stall", timeout: .seconds(60)))
        }
        await handler.entered.wait()
        await server.stop()
        do {
            _ = try await stalled.value
            Issue.record("a stalled answer completed")
        } catch let error as HTTPClientError {
            #expect(error.kind == .answerCutShort)
        }
    }

    @Test("a chunked body over the limit is 413 too (no Content-Length to refuse it early)")
    func chunkedTooLarge() async throws {
        let server = try Self.serve(TestHandler(), HTTPServerConfiguration(maxBodySize: 64, connectionTimeout: .seconds(1)))
        let r = try await HTTPClient().send(HTTPClientRequest(method: "POST", url: server.url + "/echo",
                                                              headers: [("Transfer-Encoding", "chunked")],
                                                              body: Array(repeating: 0x42, count: 1000)))
        #expect(r.status == 413)
        let small = try await HTTPClient().send(HTTPClientRequest(method: "POST", url: server.url + "/echo",
                                                                  headers: [("Transfer-Encoding", "chunked")],
                                                                  body: Array("chunk".utf8)))
        #expect(small.header("X-Saw-Transfer-Encoding") == "chunked")
        #expect(String(decoding: small.body, as: UTF8.self) == "POST - chunk")
        await server.stop()
    }
}

/// The ``HTTPClientError`` `send` fails with; an issue at the caller when an answer came
/// instead, or another error.
func clientError(sourceLocation: SourceLocation = #_sourceLocation,
                 _ send: () async throws -> HTTPClientResponse) async -> HTTPClientError? {
    do {
        _ = try await send()
        Issue.record("an answer came", sourceLocation: sourceLocation)
    } catch let error as HTTPClientError {
        return error
    } catch {
        Issue.record("not an HTTPClientError: \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
