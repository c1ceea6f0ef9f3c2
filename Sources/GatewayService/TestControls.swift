import Foundation
import HTTPServer
import PaymentGateway

/// The served gateway's test controls: what a test run (`tapemu scenarios run --gateway URL`)
/// needs to make seed 000's setup errors happen on a served gateway, which its merchant REST
/// cannot make — an expired token (`tokenExpired`), a token of an account of its own whose
/// terms are not accepted yet (`termsDeclined`), and a blocked SDK version (`sdkUpgradeRequired`).
///
/// Off unless the operator enables them (`tapemu gateway serve --test-controls`): every route
/// takes ``RouteCredential/testControls`` — the merchant API key (else 401), on a gateway with
/// its test controls on (else 403 `testControlsOff`). None reads a payment or moves money.
///
/// - `POST /admin/test/tokens` `{pointOfSaleId?, accountId?, expired?}` → `{token, accountId,
///   expiresAt}`: a terminal token as `POST /v1/pos/auth-token` issues one, for `accountId`
///   (default the service's account; another one starts with its terms not accepted), already
///   expired when `expired` is true.
/// - `POST /admin/test/blocked-sdk-versions` `{version}` → `{version, blocked: true}`: the
///   ledger blocks it (`POST /terminal/v1/sdk-versions/check` then answers 426).
/// - `DELETE /admin/test/blocked-sdk-versions/{version}` → `{version, blocked: false}`.
extension GatewayService {
    struct TestTokenRequest: Codable {
        var pointOfSaleId: String?
        var accountId: String?
        var expired: Bool?
    }
    struct TestTokenAnswer: Codable {
        var token: String
        var accountId: String
        /// Unix milliseconds.
        var expiresAt: Int64
    }
    struct BlockedSDKVersion: Codable {
        var version: String
        var blocked: Bool?
    }

    /// An identifier a test control takes (a point of sale, an account, an SDK version): 1 to
    /// 128 characters without control characters.
    static func requireIdentifier(_ field: String, _ value: String) throws(RouteError) {
        guard (1...128).contains(value.utf8.count),
              !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw RouteError(400, "invalidRequest", "\(field) must be 1 to 128 characters without control characters")
        }
    }

    func registerTestControls(_ r: inout Router) {
        r.add("POST", "/admin/test/tokens", .testControls) { [self] req, _ in
            await respond(req) { () throws(RouteError) in
                let body = req.body.isEmpty ? TestTokenRequest() : try req.decode(TestTokenRequest.self)
                for (field, value) in [("pointOfSaleId", body.pointOfSaleId), ("accountId", body.accountId)] {
                    if let value { try Self.requireIdentifier(field, value) }
                }
                let account = body.accountId ?? accountId
                let token = gateway.issueToken(accountId: account, mode: .test,
                                               ttl: body.expired == true ? .zero : Self.posTokenLifetime,
                                               pointOfSaleId: body.pointOfSaleId)
                let claims: TokenClaims
                switch gateway.verifyToken(token) {
                case .valid(let c), .expired(let c): claims = c
                case .invalid(let reason): throw RouteError(500, "serverError", "the token just issued does not verify: \(reason)")
                }
                return Wire.json(TestTokenAnswer(token: token, accountId: account, expiresAt: Wire.millis(claims.expiresAt)))
            }
        }
        r.add("POST", "/admin/test/blocked-sdk-versions", .testControls) { [self] req, _ in
            await respond(req) { () throws(RouteError) in
                let body = try req.decode(BlockedSDKVersion.self)
                try Self.requireIdentifier("version", body.version)
                if body.blocked == false {
                    throw RouteError(400, "invalidRequest", "this route blocks a version; DELETE /admin/test/blocked-sdk-versions/{version} unblocks it")
                }
                let ledger = gateway.ledger
                try await call { () async throws(GatewayError) in try ledger.blockSDKVersion(body.version) }
                return Wire.json(BlockedSDKVersion(version: body.version, blocked: true))
            }
        }
        r.add("DELETE", "/admin/test/blocked-sdk-versions/{version}", .testControls) { [self] req, params in
            await respond(req) { () throws(RouteError) in
                let version = params["version"] ?? ""
                try Self.requireIdentifier("version", version)
                let ledger = gateway.ledger
                try await call { () async throws(GatewayError) in try ledger.unblockSDKVersion(version) }
                return Wire.json(BlockedSDKVersion(version: version, blocked: false))
            }
        }
    }
}
