import Foundation
@testable import GatewayService
import HTTPClient
import HTTPServer
import Testing

/// A webhook receiver (or any peer) that answers without end within the timeout must not fill
/// the gateway's memory: delivery needs its status only.
@Suite("The client keeps at most the answer it was told to keep")
struct HTTPClientAnswerLimitTests {
    /// Answers 200 with `size` bytes.
    struct Big: HTTPHandler {
        let size: Int
        func handle(_ request: HTTPRequest) async -> HTTPResponse {
            HTTPResponse(status: 200, body: [UInt8](repeating: UInt8(ascii: "x"), count: size))
        }
    }

    @Test("a 4 MiB answer is read to its end and cut to the limit; without a limit it is kept whole")
    func cutToTheLimit() async throws {
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(5)),
                                    handler: Big(size: 4 << 20))
        let cut = try await HTTPClient().send(HTTPClientRequest(url: server.url + "/", maxResponseBodyBytes: 1000))
        #expect(cut.status == 200)
        #expect(cut.body.count == 1000)
        let whole = try await HTTPClient().send(HTTPClientRequest(url: server.url + "/"))
        #expect(whole.body.count == 4 << 20)
        await server.stop()
    }

    @Test("a webhook receiver answering 4 MiB is delivered to (its status read) with at most maxAnswerBytes kept")
    func webhookTransport() async throws {
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(5)),
                                    handler: Big(size: 4 << 20))
        let status = try await HTTPWebhookTransport().post(url: server.url + "/hook", headers: [("Content-Type", "application/json")],
                                                           body: Array("{}".utf8), timeout: .seconds(10))
        #expect(status == 200)
        #expect(HTTPWebhookTransport.maxAnswerBytes == 64 << 10)
        await server.stop()
    }
}
