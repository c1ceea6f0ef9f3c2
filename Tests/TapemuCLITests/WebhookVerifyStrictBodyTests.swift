import Foundation
import PaymentGateway
import Testing
import TestSupport
@testable import tapemu

/// `webhook verify` reads a signed body with the one strict JSON reader (issue 33, item 4): a body
/// that names a key twice means one thing to a first-wins parser and another to a last-wins one.
@Suite("webhook verify refuses a signed body that is not strict JSON", .temporaryDirectories)
struct WebhookVerifyStrictBodyTests {
    static let secret = String(repeating: "ab", count: 32)

    func verify(_ body: String) async throws -> (status: Int32, out: String, err: String) {
        let file = try temporaryDirectory() + "/body.json"
        try Data(body.utf8).write(to: URL(fileURLWithPath: file))
        let t: Int64 = 1_800_000_000
        let header = WebhookSignature.header(body: Array(body.utf8), secret: WebhookSignature.secretBytes(Self.secret), timestamp: t)
        return await runCLI(["webhook", "verify", "--secret", Self.secret, "--header", header, "--body-file", file,
                             "--now", String(t), "--json"])
    }

    @Test("a repeated key: exit 1, malformedBody naming it, though the signature holds")
    func repeatedKey() async throws {
        let r = try await verify(#"{"id":"p1","amount":1000,"status":"SUCCEEDED","amount":999999}"#)
        #expect(r.status == 1, "\(r.out)\(r.err)")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        #expect(doc["code"] as? String == "malformedBody")
        #expect((doc["reason"] as? String)?.contains(#""amount""#) == true, "\(r.out)")
    }

    @Test("the same body without the repeat verifies")
    func strictBodyVerifies() async throws {
        let r = try await verify(#"{"id":"p1","amount":1000,"status":"SUCCEEDED"}"#)
        #expect(r.status == 0, "\(r.out)\(r.err)")
    }
}
