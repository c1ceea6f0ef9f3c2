import Foundation
import PaymentGateway
import Testing
import TestSupport

/// `tapemu webhook verify` refuses a signature wrong only in its last hex digit and a body
/// changed only in its last byte (exit 1, `noMatchingSignature`), and accepts the right pair.
@Suite("tapemu webhook verify: a difference in the last byte is found", .temporaryDirectories)
struct WebhookVerifyLastByteTests {
    @Test("right → valid (0); last hex digit of the signature changed → 1; last byte of the body changed → 1")
    func lastByte() async throws {
        let dir = try temporaryDirectory()
        let secretHex = String(repeating: "5a", count: 32)
        let secret = WebhookSignature.secretBytes(secretHex)
        let body = Array(#"{"id":"pay_1","status":"SUCCEEDED","amount":1250}"#.utf8)
        let t: Int64 = 1_800_000_000
        let signature = WebhookSignature.signature(body: body, secret: secret, timestamp: t)
        let bodyFile = dir + "/body.json"
        try Data(body).write(to: URL(fileURLWithPath: bodyFile))
        func verify(_ v1: String, _ file: String) async -> (status: Int32, out: String, err: String) {
            await runCLI(["webhook", "verify", "--secret", secretHex, "--header", "MONEI-Signature: t=\(t),v1=\(v1)",
                          "--body-file", file, "--now", String(t), "--json"])
        }
        let ok = await verify(signature, bodyFile)
        #expect(ok.status == 0, "\(ok.out)\(ok.err)")

        let last = signature.last!
        let digit: Character = last == "0" ? "1" : "0"
        let wrongSignature = await verify(String(signature.dropLast()) + String(digit), bodyFile)
        #expect(wrongSignature.status == 1)
        #expect(try jsonObject(wrongSignature.out)["code"] as? String == "noMatchingSignature")

        var changed = body
        changed[changed.count - 1] ^= 0x01
        let changedFile = dir + "/changed.json"
        try Data(changed).write(to: URL(fileURLWithPath: changedFile))
        let wrongBody = await verify(signature, changedFile)
        #expect(wrongBody.status == 1)
        #expect(try jsonObject(wrongBody.out)["code"] as? String == "noMatchingSignature")
    }
}
