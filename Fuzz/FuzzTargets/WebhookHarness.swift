import Foundation
import PaymentGateway

/// The receiver side of signed webhooks.
enum WebhookHarness {
    static let secret = Array("whsec_fuzz_test_secret".utf8)
    /// The receiver's clock: fixed, so an input replays the same way.
    static let now = Date(timeIntervalSince1970: 1_764_496_800)

    /// Input: a `MONEI-Signature` header value, a newline, then the raw body.
    ///
    /// Verification of the header ends with a timestamp or a typed error, under the default
    /// tolerance and under the widest one; a header signed here for the same body, at a time
    /// within the tolerance, verifies and gives back its timestamp; one for another body does not.
    @Sendable static func webhook(_ input: [UInt8]) throws(FuzzFailure) {
        let split = input.firstIndex(of: 0x0A) ?? input.endIndex
        let header = String(decoding: input[..<split], as: UTF8.self)
        let body = Array(input[min(split + 1, input.endIndex)...])

        for tolerance in [WebhookSignature.defaultTolerance, .seconds(Int64.max)] {
            _ = try? WebhookSignature.verify(header: header, body: body, secret: secret, tolerance: tolerance, now: now)
        }

        let t = Int64(now.timeIntervalSince1970) - Int64(body.count % 300)
        let signed = WebhookSignature.header(body: body, secret: secret, timestamp: t)
        do {
            let got = try WebhookSignature.verify(header: signed, body: body, secret: secret, now: now)
            try expect(got == t, "verification gave back timestamp \(got), not \(t)")
        } catch {
            throw FuzzFailure("a header signed for the body does not verify: \(error)")
        }
        // The same signature with the fuzzed header's elements after it still verifies unless
        // they give a second t (or are not key=value).
        if let got = try? WebhookSignature.verify(header: signed + "," + header, body: body, secret: secret, now: now) {
            try expect(got == t, "extra header elements changed the timestamp")
        }
        let other = body + [0x20]
        let wrong = try? WebhookSignature.verify(header: signed, body: other, secret: secret, now: now)
        try expect(wrong == nil, "a header signed for one body verifies another")
    }
}
