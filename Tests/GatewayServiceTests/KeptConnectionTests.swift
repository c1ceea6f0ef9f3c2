import Foundation
@testable import GatewayService
import PaymentGateway
import BERTLV
import PaymentRules
import TestSupport
import HTTPClient
import HTTPServer
import Synchronization
import Testing

/// Counts the requests to `/pay` and answers the first `dropFirst` of them by closing the
/// connection without a status line (a kept connection that dies after the request arrived);
/// the later ones with the stored answer.
final class DroppingHandler: HTTPHandler {
    let dropFirst: Int
    let seen = Mutex(0)

    init(dropFirst: Int) { self.dropFirst = dropFirst }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        guard request.path == "/pay" else { return HTTPResponse(status: 200, body: Array("ok".utf8)) }
        let n = seen.withLock { $0 += 1; return $0 }
        if n <= dropFirst { return HTTPResponse(status: 200, body: [], delivery: .closeWithoutAnswer) }
        return HTTPResponse(status: 200, body: Array("stored".utf8))
    }
}

/// One connection by hand: answers its first request with a kept connection, reads the second,
/// then stops listening and closes the connection without an answer — so libcurl's new try on a
/// fresh connection is refused after the request went out on the kept one.
final class DyingPeer: Sendable {
    let port: UInt16
    private let listener: Int32
    let secondRequestRead = OneShotEvent()

    struct CannotListen: Error {}

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard Glibc.listen(fd, 4) == 0 else { close(fd); throw CannotListen() }
        var out = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &out) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        port = UInt16(bigEndian: out.sin_port)
        listener = fd
        let signal = secondRequestRead
        Thread {
            let conn = accept(fd, nil, nil)
            var tv = timeval(tv_sec: 20, tv_usec: 0) // a guard against a hang only
            setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            _ = Self.readRequest(conn)
            let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
            _ = answer.withUnsafeBytes { send(conn, $0.baseAddress, $0.count, 0) }
            _ = Self.readRequest(conn)
            close(fd)          // nothing listens any more: the new try is refused
            close(conn)        // and the kept connection ends without an answer
            signal.fire()
        }.start()
    }

    /// Reads one request's headers and its Content-Length body.
    static func readRequest(_ fd: Int32) -> String {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: data, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = text[..<end.lowerBound].lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.count - text.utf8.distance(from: text.startIndex, to: end.upperBound) >= length { return text }
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return text }
            data += buffer.prefix(n)
        }
    }
}

/// Kept connections (issue 38): a request over a kept connection that dies at any point ends
/// with the stored answer (libcurl's new try, answered by the idempotent ledger) or with an
/// error that says the request may have left — never "never left".
@Suite("Kept connections: a request over a kept connection that dies")
struct KeptConnectionTests {
    /// A server whose handler drops the first `dropFirst` requests it reads, and a client that
    /// keeps its connection from one answered request (`GET /warm`).
    static func warmedUp(dropFirst: Int) async throws -> (handler: DroppingHandler, server: HTTPServer, client: HTTPClient) {
        let handler = DroppingHandler(dropFirst: dropFirst)
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(5)), handler: handler)
        let client = HTTPClient(defaultTimeout: .seconds(10))
        #expect(try await client.send(HTTPClientRequest(url: server.url + "/warm")).status == 200)
        return (handler, server, client)
    }

    /// `POST /pay` with a JSON body, sent again on a new connection when `idempotent`.
    static func pay(_ url: String, idempotent: Bool = true) -> HTTPClientRequest {
        HTTPClientRequest(method: "POST", url: url + "/pay", body: Array("{}".utf8), idempotent: idempotent)
    }

    @Test("dies after the request arrived, the new try is answered: the stored answer, the server saw it twice")
    func diedThenAnswered() async throws {
        let (handler, server, client) = try await Self.warmedUp(dropFirst: 1)
        let r = try await client.send(Self.pay(server.url))
        #expect(String(decoding: r.body, as: UTF8.self) == "stored")
        // Sent twice: only an idempotent request (an authorisation by orderId) may go over a
        // kept connection.
        #expect(handler.seen.withLock { $0 } == 2)
        await server.stop()
    }

    @Test("dies after the request arrived, the new try dies too: connectionClosed, may have left")
    func diedTwice() async throws {
        let (handler, server, client) = try await Self.warmedUp(dropFirst: 2)
        let error = await clientError { try await client.send(Self.pay(server.url)) }
        #expect(error?.kind == .connectionClosed)
        #expect(error?.requestMayHaveLeft == true)
        #expect(handler.seen.withLock { $0 } == 2)
        await server.stop()
    }

    @Test("a request that is not idempotent never goes over the kept connection, so it is never sent twice")
    func notIdempotent() async throws {
        let (handler, server, client) = try await Self.warmedUp(dropFirst: 1)
        let error = await clientError { try await client.send(Self.pay(server.url, idempotent: false)) }
        #expect(error?.kind == .connectionClosed)
        #expect(error?.requestMayHaveLeft == true)
        #expect(handler.seen.withLock { $0 } == 1)
        // The kept connection is still there for the next idempotent request.
        #expect(try await client.send(HTTPClientRequest(url: server.url + "/warm")).status == 200)
        await server.stop()
    }

    @Test("dies after the request went out and the new try is refused: may have left, not couldNotConnect")
    func diedThenRefused() async throws {
        let peer = try DyingPeer()
        let client = HTTPClient(defaultTimeout: .seconds(10))
        let url = "http://127.0.0.1:\(peer.port)"
        #expect(try await client.send(HTTPClientRequest(url: url + "/warm")).status == 200)
        let error = await clientError { try await client.send(Self.pay(url)) }
        #expect(error != nil && error?.kind != .couldNotConnect)
        #expect(error?.requestMayHaveLeft == true)
        await peer.secondRequestRead.wait()
    }

    @Test("the server closed the kept connection before the request and stopped: couldNotConnect, never left")
    func closedBeforeThenRefused() async throws {
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(5)), handler: DroppingHandler(dropFirst: 0))
        let client = HTTPClient(defaultTimeout: .seconds(10))
        let url = server.url
        #expect(try await client.send(HTTPClientRequest(url: url + "/warm")).status == 200)
        await server.stop()
        let error = await clientError { try await client.send(Self.pay(url)) }
        #expect(error?.kind == .couldNotConnect)
        #expect(error?.requestMayHaveLeft == false)
    }
}

/// The same over the whole stack: RemoteGateway's authorisation over a kept connection, the
/// server's injected faults at each point (before the commit, after it with an error, after it
/// with the connection closed, mid-body), on the first try only or on the resend too.
@Suite("Kept connections: RemoteGateway's authorisation, the server's faults", .temporaryDirectories)
struct KeptConnectionGatewayTests {
    @Test("the outcome is the stored answer or a communication failure (outcomeUnknown), never a second charge",
          arguments: [ServerFault.errorBeforeCommit, .errorAfterCommit, .closeAfterCommit, .stallMidBody], [1, 2])
    func faultOnKeptConnection(fault: ServerFault, tries: Int) async throws {
        let live = try LiveService()
        let remote = live.remote   // one client: its kept connection
        let card = CardData(pan: PAN("4012888888881881")!, expiry: "2812")
        // A GET first: the authorisation goes over the connection it left open.
        _ = try await remote.charges(orderId: "warm")
        live.service.armFault(fault, count: tries)
        let order = "kept-\(fault.name)-\(tries)"
        let outcome: Result<AuthorisationResponse, GatewayError>
        do throws(GatewayError) {
            outcome = .success(try await remote.authorize(AuthorisationRequest(orderId: order, amount: 1000, card: card)))
        } catch {
            outcome = .failure(error)
        }
        let sales = try live.service.gateway.ledger.sales(orderId: order)
        #expect(sales.count <= 1)
        switch outcome {
        case .success(let answer):
            // Only a resend answers: the stored answer of the one recorded sale.
            #expect(answer.isReplay)
            #expect(sales.count == 1)
            #expect(answer.status == .approved)
        case .failure(let error):
            #expect(error.isCommunicationFailure, "\(error)")
        }
        if fault == .closeAfterCommit && tries == 1 {
            // The connection died after the commit; libcurl's resend got the stored answer.
            #expect((try? outcome.get())?.isReplay == true)
        }
        // And the order asked again: the stored answer, still one sale.
        if !sales.isEmpty {
            live.service.faults.clear()   // a fault the resend did not use
            let again = try await remote.authorize(AuthorisationRequest(orderId: order, amount: 1000, card: card))
            #expect(again.isReplay)
            #expect(try live.service.gateway.ledger.sales(orderId: order).count == 1)
        }
        await live.server.stop()
    }
}
