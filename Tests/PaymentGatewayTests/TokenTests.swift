import Foundation
@testable import PaymentGateway
import Testing
import TestSupport

@Suite("Tokens")
struct TokenTests {
    @Test("a token is valid until its expiry, then expired", arguments: [TokenMode.test, .live])
    func validThenExpired(_ mode: TokenMode) async throws {
        let dir = TempDir()
        let now = WallClock()
        let g = try Fixture.gateway(dir, now: now)
        let token = g.issueToken(accountId: "acct_42", mode: mode, ttl: .seconds(600))
        #expect(token.hasPrefix("tpm_\(mode.rawValue)_"))
        guard case .valid(let claims) = try await g.validateToken(token) else {
            Issue.record("a fresh token must be valid")
            return
        }
        #expect(claims.accountId == "acct_42")
        #expect(claims.mode == mode)
        #expect(claims.expiresAt.timeIntervalSince(claims.issuedAt) == 600)
        now.advance(by: 599)
        #expect(try await g.validateToken(token) == .valid(claims))
        now.advance(by: 1)
        #expect(try await g.validateToken(token) == .expired(claims))
    }

    @Test("the service's check of a terminal's token (verifyToken), which remembers tokens it verified, still expires one on time and refuses a tampered copy or another gateway's")
    func verifiedTokenStillExpires() throws {
        let dir = TempDir(), other = TempDir()
        let now = WallClock()
        let g = try Fixture.gateway(dir, now: now)
        let token = g.issueToken(accountId: "acct_7", ttl: .seconds(600))
        guard case .valid(let claims) = g.verifyToken(token) else {
            Issue.record("a fresh token must be valid")
            return
        }
        #expect(g.verifyToken(token) == .valid(claims))
        now.advance(by: 599)
        #expect(g.verifyToken(token) == .valid(claims))
        now.advance(by: 1)
        #expect(g.verifyToken(token) == .expired(claims))
        var tampered = Array(token)
        let i = try #require(tampered.firstIndex(of: ".")) + 5
        tampered[i] = tampered[i] == "A" ? "B" : "A"
        guard case .invalid = g.verifyToken(String(tampered)) else {
            Issue.record("a tampered copy of a verified token must be invalid")
            return
        }
        let elsewhere = try Fixture.gateway(other, now: now)
        guard case .invalid = elsewhere.verifyToken(token) else {
            Issue.record("another gateway's token must be invalid")
            return
        }
    }

    @Test("a token with a ttl of zero is expired at once")
    func zeroTTL() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        guard case .expired = try await g.validateToken(g.issueToken(accountId: "a", ttl: .zero)) else {
            Issue.record("expected expired")
            return
        }
    }

    @Test("a tampered token is invalid", arguments: ["payload", "signature", "mode", "truncate"])
    func tampered(_ how: String) async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let token = g.issueToken(accountId: "acct_1", mode: .test, ttl: .seconds(600))
        var chars = Array(token)
        let dot = try #require(chars.firstIndex(of: "."))
        switch how {
        case "payload":
            let i = dot - 3
            chars[i] = chars[i] == "A" ? "B" : "A"
        case "signature":
            let i = dot + 5
            chars[i] = chars[i] == "A" ? "B" : "A"
        case "mode":
            chars = Array(token.replacingOccurrences(of: "tpm_test_", with: "tpm_live_"))
        default:
            chars.removeLast(4)
        }
        let result = try await g.validateToken(String(chars))
        guard case .invalid(let reason) = result else {
            Issue.record("a tampered token must be invalid, got \(result)")
            return
        }
        #expect(!reason.contains(token))
    }

    @Test("garbage is invalid, never a crash", arguments: [
        "", "tpm_", "tpm_test_", "tpm_test_.", "tpm_test_abc.def", "...", "tpm_test_####.####",
        "eyJhbGciOiJIUzI1NiJ9.e30.sig", String(repeating: "A", count: 10_000), "tpm_test_\u{1F600}.\u{1F600}",
    ])
    func garbage(_ token: String) async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        guard case .invalid = try await g.validateToken(token) else {
            Issue.record("garbage must be invalid")
            return
        }
    }

    @Test("a token from another gateway (another secret) is invalid")
    func otherGateway() async throws {
        let a = try Fixture.gateway(TempDir())
        let b = try Fixture.gateway(TempDir())
        guard case .invalid = try await b.validateToken(a.issueToken(accountId: "x")) else {
            Issue.record("another gateway's token must be invalid")
            return
        }
    }

    @Test("base64url round-trips and rejects bad input")
    func base64url() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(Encoding.unbase64url(Encoding.base64url(bytes)) == bytes)
        }
        #expect(Encoding.unbase64url("A") == nil)
        #expect(Encoding.unbase64url("AB+/") == nil)
        #expect(Encoding.unbase64url("AB=") == nil)
        #expect(Encoding.base64url(Array("hello".utf8)) == "aGVsbG8")
    }
}
