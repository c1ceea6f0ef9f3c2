import Foundation
@testable import PaymentGateway
import Testing

/// The verifier compares every byte: a signature wrong only in its last hex digit (or last byte)
/// and a body changed only in its last byte are refused. (Every bad signature the other tests
/// used differed early: a verifier comparing half the signature passed them all.)
@Suite("Webhook verifier: a difference in the last byte is found")
struct WebhookLastByteTests {
    static let secret = Array("tpk_test_0123456789abcdef".utf8)
    static let body = Array(#"{"id":"pay_1","status":"SUCCEEDED","amount":1250}"#.utf8)
    static let t: Int64 = 1_800_000_000
    static let now = Date(timeIntervalSince1970: TimeInterval(t))
    static var signature: String { WebhookSignature.signature(body: body, secret: secret, timestamp: t) }

    static func code(_ v1: String, body: [UInt8] = body) -> WebhookSignatureError.Code? {
        do {
            try WebhookSignature.verify(header: "t=\(t),v1=\(v1)", body: body, secret: secret, now: now)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("the right signature verifies (the control)")
    func control() {
        #expect(Self.code(Self.signature) == nil)
    }

    /// The signature with its last hex digit replaced by each of the 15 others.
    static let lastDigits: [Character] = Array("0123456789abcdef")

    @Test("a signature wrong only in its last hex digit does not verify", arguments: lastDigits)
    func lastHexDigit(_ digit: Character) {
        let right = Self.signature
        guard digit != right.last else { return }
        #expect(Self.code(String(right.dropLast()) + String(digit)) == .noMatchingSignature)
    }

    @Test("a signature wrong only in its last byte (each bit of it) does not verify", arguments: 0..<8)
    func lastByte(_ bit: Int) {
        var bytes = Encoding.unhex(Self.signature)!
        bytes[bytes.count - 1] ^= UInt8(1 << bit)
        #expect(Self.code(Encoding.hex(bytes)) == .noMatchingSignature)
    }

    @Test("a body changed only in its last byte does not verify; one byte longer or shorter neither")
    func bodyLastByte() {
        var changed = Self.body
        changed[changed.count - 1] ^= 0x01
        #expect(Self.code(Self.signature, body: changed) == .noMatchingSignature)
        #expect(Self.code(Self.signature, body: Self.body + [0x20]) == .noMatchingSignature)
        #expect(Self.code(Self.signature, body: Array(Self.body.dropLast())) == .noMatchingSignature)
    }
}
