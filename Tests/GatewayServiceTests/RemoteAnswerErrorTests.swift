import BERTLV
import PaymentRules
import GatewayService
import HTTPServer
import PaymentGateway
import Foundation
import TestSupport
import Testing

/// How the terminal's client reads a refusal it cannot name.
@Suite("RemoteGateway: an answer that is no refusal of the request")
struct RemoteAnswerErrorTests {
    struct Answering: HTTPHandler {
        let status: Int
        let code: String
        func handle(_ request: HTTPRequest) async -> HTTPResponse {
            HTTPResponse.jsonError(status: status, code: code, message: "canned", requestId: "req-1")
        }
    }

    /// The connection guard's 408 (the request was not whole within its deadline, never handled)
    /// was read as invalidRequest — a refusal — so a terminal gave up instead of looking the order
    /// up (MultiServerTests: "multi-36: invalidRequest" under load).
    @Test("a 408 is a failure of the connection: look the order up, as after a lost answer")
    func requestTimeoutIsACommunicationFailure() async throws {
        let server = try HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0),
                                    handler: Answering(status: 408, code: "requestTimeout"))
        let gw = RemoteGateway(baseURL: server.url, requestTimeout: .seconds(30), deviceToken: "tpm_test")
        let request = AuthorisationRequest(orderId: "t-408", amount: 1000,
                                           card: CardData(pan: PAN("4012888888881881")!, expiry: "2812"))
        do throws(GatewayError) {
            _ = try await gw.authorize(request)
            Issue.record("a 408 was taken for an answer")
        } catch {
            #expect(error.code == .connectionLost && error.isCommunicationFailure, "\(error)")
            #expect(error.reason.contains("408") && error.reason.contains("not handled"), "\(error.reason)")
        }
        // A 4xx the client cannot name stays a refusal.
        let other = try HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0),
                                   handler: Answering(status: 418, code: "teapot"))
        do throws(GatewayError) {
            _ = try await RemoteGateway(baseURL: other.url, requestTimeout: .seconds(30), deviceToken: "tpm_test").authorize(request)
            Issue.record("a 418 was taken for an answer")
        } catch {
            #expect(error.code == .invalidRequest, "\(error)")
        }
        await server.stop()
        await other.stop()
    }

    /// Every code GatewayError.swift declares, read from the source: a code added there and
    /// left out of ``ErrorCode/known`` would be decoded as another (orderNotOwned,
    /// notCapturable and notCancelable were: a terminal refused another terminal's order got
    /// invalidRequest).
    static let declaredCodes: [String] = {
        let url = repositoryRoot.appendingPathComponent("Sources/PaymentGateway/GatewayError.swift")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let t = line.trimmingCharacters(in: .whitespaces)
            guard t.hasPrefix("public static var "), t.contains(": Self {") else { return nil }
            return String(t.dropFirst("public static var ".count).prefix { $0 != ":" })
        }
    }()

    @Test("every code GatewayError declares is one the client decodes by its name")
    func everyDeclaredCodeIsKnown() {
        #expect(Self.declaredCodes.count >= 20, "read \(Self.declaredCodes)")
        let known = Set(GatewayError.Code.known.map(\.name))
        for name in Self.declaredCodes {
            #expect(known.contains(name), "\(name) is declared but not decoded by name")
            #expect(GatewayError.Code(named: name)?.name == name)
        }
    }

    @Test("a refusal the server names comes back to the terminal as that code",
          arguments: ["orderNotOwned", "notCapturable", "notCancelable", "orderConflict", "sdkUpgradeRequired"])
    func namedRefusalIsDecoded(_ name: String) async throws {
        let code = try #require(GatewayError.Code(named: name))
        let server = try HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0),
                                    handler: Answering(status: code.httpStatus, code: name))
        let request = AuthorisationRequest(orderId: "t-\(name)", amount: 1000,
                                           card: CardData(pan: PAN("4012888888881881")!, expiry: "2812"))
        do throws(GatewayError) {
            _ = try await RemoteGateway(baseURL: server.url, requestTimeout: .seconds(30), deviceToken: "tpm_test").authorize(request)
            Issue.record("HTTP \(code.httpStatus) \(name) was taken for an answer")
        } catch {
            #expect(error.code == code, "\(error)")
        }
        await server.stop()
    }
}
