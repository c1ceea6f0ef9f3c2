import Foundation
@testable import PaymentGateway
import Testing
import TestSupport

@Suite("Webhooks")
struct WebhookTests {
    static let secret = Array("whsec_test_secret".utf8)
    static let body = #"{"id":"abc","status":"approved"}"#
    static let t: Int64 = 1_800_000_000
    static let now = Date(timeIntervalSince1970: TimeInterval(t))

    private func code(header: String?, body: String = WebhookTests.body, secret: [UInt8] = WebhookTests.secret,
                      now: Date = WebhookTests.now, tolerance: Duration = .seconds(300)) -> WebhookSignatureError.Code? {
        do {
            try WebhookSignature.verify(header: header, body: body, secret: secret, tolerance: tolerance, now: now)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("the signature is hex HMAC-SHA256 of \"<t>.<raw body>\" (values computed independently)")
    func knownVectors() {
        #expect(WebhookSignature.header(body: Array("x".utf8), secret: Array("key".utf8), timestamp: 1)
                == "t=1,v1=fc4913c41a7bf793267e2a384f3261c9436ec2cd097bd745e7b0d99113f510ec")
        #expect(WebhookSignature.signature(body: Array(Self.body.utf8), secret: Self.secret, timestamp: Self.t)
                == "752d318ba3d0316f1ed831f1b0062018c7370896d2aca6710cb57af244c37bf4")
    }

    @Test("a signature made by sign verifies")
    func roundTrip() {
        let header = WebhookSignature.header(body: Array(Self.body.utf8), secret: Self.secret, timestamp: Self.t)
        #expect(code(header: header) == nil)
        #expect(code(header: " " + header.replacingOccurrences(of: ",", with: " , ") + " ") == nil)
    }

    @Test("a wrong secret, a changed body, or a wrong signature does not verify")
    func badSignature() {
        let header = WebhookSignature.header(body: Array(Self.body.utf8), secret: Self.secret, timestamp: Self.t)
        #expect(code(header: header, secret: Array("other".utf8)) == .noMatchingSignature)
        #expect(code(header: header, body: Self.body + " ") == .noMatchingSignature)
        #expect(code(header: "t=\(Self.t),v1=" + String(repeating: "0", count: 64)) == .noMatchingSignature)
        #expect(code(header: "t=\(Self.t),v1=nothex") == .noMatchingSignature)
        #expect(code(header: "t=\(Self.t)") == .noMatchingSignature)
        // The timestamp is signed: moving it breaks the signature.
        let moved = header.replacingOccurrences(of: "t=\(Self.t)", with: "t=\(Self.t + 1)")
        #expect(code(header: moved) == .noMatchingSignature)
    }

    @Test("a timestamp outside the tolerance is stale, either way")
    func stale() {
        let old = WebhookSignature.header(body: Array(Self.body.utf8), secret: Self.secret, timestamp: Self.t - 301)
        let future = WebhookSignature.header(body: Array(Self.body.utf8), secret: Self.secret, timestamp: Self.t + 301)
        let edge = WebhookSignature.header(body: Array(Self.body.utf8), secret: Self.secret, timestamp: Self.t - 300)
        #expect(code(header: old) == .staleTimestamp)
        #expect(code(header: future) == .staleTimestamp)
        #expect(code(header: edge) == nil)
        #expect(code(header: old, tolerance: .seconds(600)) == nil)
        #expect(code(header: "t=1,v1=00") == .staleTimestamp)
        #expect(code(header: "t=\(Int64.max),v1=00") == .staleTimestamp)
    }

    @Test("a missing or malformed header is a typed error", arguments: [
        (nil, WebhookSignatureError.Code.missingHeader), ("", .missingHeader), ("   ", .missingHeader),
        ("v1=abc", .malformedHeader), ("t=,v1=ab", .malformedHeader), ("t=12a,v1=ab", .malformedHeader),
        ("t=-5,v1=ab", .malformedHeader), ("t=1,t=2,v1=ab", .malformedHeader), ("garbage", .malformedHeader),
        ("t=1,,v1=ab", .malformedHeader), ("=1", .malformedHeader), ("t=1.5,v1=ab", .malformedHeader),
        ("t=99999999999999999999,v1=ab", .malformedHeader),
    ] as [(String?, WebhookSignatureError.Code)])
    func malformed(_ c: (String?, WebhookSignatureError.Code)) {
        #expect(code(header: c.0) == c.1)
    }

    @Test("unknown schemes are ignored and any of several v1 values may match")
    func schemes() {
        let good = WebhookSignature.signature(body: Array(Self.body.utf8), secret: Self.secret, timestamp: Self.t)
        let bad = String(repeating: "ab", count: 32)
        #expect(code(header: "t=\(Self.t),v0=zzz,v1=\(good),v2=\(bad)") == nil)
        #expect(code(header: "t=\(Self.t),v1=\(bad),v1=\(good)") == nil)
        #expect(code(header: "v1=\(good),t=\(Self.t)") == nil)
        #expect(code(header: "t=\(Self.t),v1=\(good.uppercased())") == nil)
        // A correct value under an unknown scheme does not count.
        #expect(code(header: "t=\(Self.t),v2=\(good)") == .noMatchingSignature)
        #expect(code(header: "t=\(Self.t),v0=\(good),v1=\(bad)") == .noMatchingSignature)
    }

    @Test("each final state writes a signed webhook for the callbackUrl that a receiver verifies")
    func outbox() async throws {
        let dir = TempDir()
        let now = WallClock()
        let g = try Fixture.gateway(dir, now: now)
        let approved = try await g.authorize(Fixture.request(orderId: "w-1", amount: 1000))
        _ = try await g.authorize(Fixture.request(orderId: "w-2", amount: 1051))
        _ = try await g.refund(uniqueRef: approved.uniqueRef, amount: 400)
        _ = try await g.refund(uniqueRef: approved.uniqueRef)
        let other = try await g.authorize(Fixture.request(orderId: "w-3", amount: 1000))
        _ = try await g.reverse(uniqueRef: other.uniqueRef)
        _ = try await g.authorize(Fixture.request(orderId: "w-4", amount: 1000, callbackUrl: nil))

        let hooks = try g.webhooks()
        #expect(hooks.map(\.event) == [.approved, .declined, .partiallyRefunded, .refunded, .approved, .reversed])
        #expect(hooks.map(\.orderId) == ["w-1", "w-2", "w-1", "w-1", "w-3", "w-3"])
        #expect(hooks.allSatisfy { $0.url == "https://merchant.example/hook" && $0.deliveredAt == nil })
        for h in hooks {
            let t = try WebhookSignature.verify(header: h.signature, body: h.body, secret: g.webhookSecret, now: now.now)
            #expect(t == Int64(now.now.timeIntervalSince1970))
            let json = try #require(try JSONSerialization.jsonObject(with: Data(h.body.utf8)) as? [String: Any])
            #expect(json["orderId"] as? String == h.orderId)
            #expect(json["id"] as? String == h.paymentId)
            #expect(json["event"] as? String == h.event.rawValue)
            #expect(!h.body.contains(Fixture.visa.digits))
        }
        let first = try #require(try JSONSerialization.jsonObject(with: Data(hooks[0].body.utf8)) as? [String: Any])
        // MONEI's Payment object (its SDKs' verifySignature returns it): MONEI's status, the card under paymentMethod.
        #expect(first["status"] as? String == "SUCCEEDED")
        #expect(first["amount"] as? Int == 1000)
        let card = (first["paymentMethod"] as? [String: Any])?["card"] as? [String: Any]
        #expect(card?["last4"] as? String == "0010" && card?["brand"] as? String == "visa")
        // A receiver with another secret refuses them.
        #expect(throws: WebhookSignatureError.self) {
            try WebhookSignature.verify(header: hooks[0].signature, body: hooks[0].body, secret: Array("x".utf8),
                                        now: now.now)
        }

        // The outbox query: per order, pending only, delivery marks.
        #expect(try g.webhooks(orderId: "w-3").map(\.event) == [.approved, .reversed])
        try g.ledger.recordWebhookFailure(id: hooks[0].id, error: "connection refused")
        try g.ledger.markWebhookDelivered(id: hooks[1].id, at: now.now)
        let pending = try g.webhooks(pendingOnly: true)
        #expect(pending.count == hooks.count - 1)
        #expect(pending.first?.attempts == 1 && pending.first?.lastError == "connection refused")
        #expect(try g.webhooks(orderId: "w-2").first?.deliveredAt != nil)
    }
}
