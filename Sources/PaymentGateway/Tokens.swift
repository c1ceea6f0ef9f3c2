import Synchronization
public import Foundation
import Cryptography

/// Test or live: which world a token (and the payments made with it) belongs to.
public enum TokenMode: String, Sendable, Hashable, Codable {
    case test
    case live
}

/// What a token says, once its signature is checked.
public struct TokenClaims: Sendable, Hashable {
    public var accountId: String
    public var mode: TokenMode
    public var issuedAt: Date
    public var expiresAt: Date
    /// A random id (16 hex digits), unique per token.
    public var tokenId: String
    /// The terminal the token was issued to (MONEI's `pointOfSaleId`; one made up at issue when
    /// the merchant named none). nil only in tokens issued before tapemu wrote it.
    public var pointOfSaleId: String? = nil
    /// The store the terminal belongs to (MONEI's `storeId`), when the merchant named one.
    public var storeId: String? = nil

    /// The terminal this token speaks for: its account and point of sale. A token without a
    /// `pointOfSaleId` (issued before tapemu wrote one) is a terminal of its own.
    public var terminal: TerminalIdentity {
        TerminalIdentity(accountId: accountId, pointOfSaleId: pointOfSaleId ?? "token:\(tokenId)")
    }
}

/// Who sent an attempt: a merchant account's point of sale. A terminal acts only on the orders
/// it sent itself (the gateway service's rule; ``LedgerStore/claimOrder(_:by:tokenId:at:)``
/// records it), whichever of its tokens it uses.
public struct TerminalIdentity: Sendable, Hashable, CustomStringConvertible {
    public var accountId: String
    public var pointOfSaleId: String
    public init(accountId: String, pointOfSaleId: String) {
        self.accountId = accountId
        self.pointOfSaleId = pointOfSaleId
    }
    public var description: String { "\(accountId)/\(pointOfSaleId)" }
}

/// What ``LedgerStore/claimOrder(_:by:tokenId:at:)`` found for an orderId.
public enum OrderClaim: Sendable, Hashable {
    /// The order is this terminal's (claimed now, or before by this terminal).
    case mine
    /// Another terminal sent this orderId first.
    case otherTerminal
    /// The ledger holds payments of this orderId that no terminal claimed (made before
    /// terminals were recorded, or through the merchant API): no terminal acts on them.
    case unowned
}

/// A terminal's claim on the orderId of its authorisation, written with the sale in one
/// transaction (``AuthorisationRequest/terminalClaim``): the claim and the charge are durable
/// together or not at all. Its rule is ``LedgerStore/claimOrder(_:by:tokenId:at:)``'s.
public struct TerminalClaim: Sendable, Hashable {
    public var terminal: TerminalIdentity
    /// The token the terminal sent it with (recorded beside the claim).
    public var tokenId: String
    public init(terminal: TerminalIdentity, tokenId: String) {
        self.terminal = terminal
        self.tokenId = tokenId
    }
}

extension OrderClaim {
    /// The refusal of a terminal's authorisation of `orderId` that this claim found (nil: the
    /// order is the terminal's). The terminal API answers it `403 forbidden` with this reason.
    public func refusal(of orderId: String) -> GatewayError? {
        switch self {
        case .mine: return nil
        case .otherTerminal:
            return GatewayError(.orderNotOwned, "order \(orderId.prefix(64)) was sent by another terminal; a terminal acts on its own orders only")
        case .unowned:
            return GatewayError(.orderNotOwned, "order \(orderId.prefix(64)) was not sent by a terminal; a terminal cannot send it again")
        }
    }
}

/// The result of ``Gateway/validateToken(_:options:)``.
public enum TokenValidation: Sendable, Hashable {
    /// Signed by this gateway and not expired.
    case valid(TokenClaims)
    /// Signed by this gateway, but its expiry has passed.
    case expired(TokenClaims)
    /// Not a token of this gateway: unreadable, tampered with, or signed with another key.
    /// The reason never repeats the token.
    case invalid(reason: String)
}

/// Tokens the gateway issues for `prepare(token:)`:
/// `tpm_<mode>_<base64url(JSON claims)>.<base64url(HMAC-SHA256)>`, the HMAC over everything
/// before the dot, under the gateway's token secret.
enum TokenCodec {
    struct Payload: Codable {
        var acc: String
        var mode: TokenMode
        var iat: Int64
        var exp: Int64
        var jti: String
        var pos: String?
        var store: String?
    }

    static func issue(accountId: String, mode: TokenMode, issuedAt: Int64, expiresAt: Int64,
                      pointOfSaleId: String? = nil, storeId: String? = nil, secret: [UInt8]) -> String {
        let payload = Payload(acc: accountId, mode: mode, iat: issuedAt, exp: expiresAt,
                              jti: Encoding.hex(Crypto.randomBytes(8)), pos: pointOfSaleId, store: storeId)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = (try? encoder.encode(payload)).map { Array($0) } ?? []
        let signed = "tpm_\(mode.rawValue)_" + Encoding.base64url(json)
        let mac = Crypto.hmacSHA256(key: secret, message: Array(signed.utf8))
        return signed + "." + Encoding.base64url(mac)
    }

    static func validate(_ token: String, secret: [UInt8], now: Int64) -> TokenValidation {
        switch verify(token, secret: secret) {
        case .success(let v): return v.validation(now: now)
        case .failure(let invalid): return invalid.validation
        }
    }

    /// A token whose signature and claims were checked: what it says for good (only its expiry
    /// depends on the time).
    struct Verified: Sendable {
        var claims: TokenClaims
        var expiresAt: Int64
        func validation(now: Int64) -> TokenValidation { now >= expiresAt ? .expired(claims) : .valid(claims) }
    }

    struct Invalid: Error {
        var reason: String
        var validation: TokenValidation { .invalid(reason: reason) }
    }

    /// Checks `token`'s signature under `secret` and reads its claims.
    static func verify(_ token: String, secret: [UInt8]) -> Result<Verified, Invalid> {
        func invalid(_ reason: String) -> Result<Verified, Invalid> { .failure(Invalid(reason: reason)) }
        // Bound hostile input before any work.
        guard token.utf8.count <= 4096 else { return invalid("the token is too long") }
        guard token.hasPrefix("tpm_") else { return invalid("not a tapemu token (no tpm_ prefix)") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return invalid("the token is not <payload>.<signature>") }
        let signed = parts[0], signaturePart = parts[1]
        guard let mac = Encoding.unbase64url(signaturePart), mac.count == 32 else {
            return invalid("the token's signature is unreadable")
        }
        let expected = Crypto.hmacSHA256(key: secret, message: Array(signed.utf8))
        guard Crypto.constantTimeEqual(mac, expected) else {
            return invalid("the token's signature does not match (tampered, or from another gateway)")
        }
        // Signed by us from here on: still parse defensively.
        let header = signed.split(separator: "_", maxSplits: 2, omittingEmptySubsequences: false)
        guard header.count == 3, let mode = TokenMode(rawValue: String(header[1])),
              let json = Encoding.unbase64url(header[2]),
              let payload = try? JSONDecoder().decode(Payload.self, from: Data(json)),
              payload.mode == mode else {
            return invalid("the token's claims are unreadable")
        }
        let claims = TokenClaims(accountId: payload.acc, mode: payload.mode,
                                 issuedAt: Date(timeIntervalSince1970: TimeInterval(payload.iat)),
                                 expiresAt: Date(timeIntervalSince1970: TimeInterval(payload.exp)),
                                 tokenId: payload.jti, pointOfSaleId: payload.pos, storeId: payload.store)
        return .success(Verified(claims: claims, expiresAt: payload.exp))
    }
}

/// Tokens this gateway verified, by their text: a token's signature and claims never change, so
/// a terminal's every request after its first skips the HMAC and the claims' JSON (the service's
/// per-request credential check, issue 38); its expiry is checked against the time at every use.
/// Only tokens that verified are kept; at most ``capacity`` (all forgotten when full).
final class VerifiedTokens: Sendable {
    static let capacity = 4096
    private let secret: [UInt8]
    private let known = Mutex<[String: TokenCodec.Verified]>([:])

    init(secret: [UInt8]) { self.secret = secret }

    func validate(_ token: String, now: Int64) -> TokenValidation {
        if let v = known.withLock({ $0[token] }) { return v.validation(now: now) }
        switch TokenCodec.verify(token, secret: secret) {
        case .success(let v):
            known.withLock { k in
                if k.count >= Self.capacity { k.removeAll(keepingCapacity: true) }
                k[token] = v
            }
            return v.validation(now: now)
        case .failure(let invalid):
            return invalid.validation
        }
    }
}
