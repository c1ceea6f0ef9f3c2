import Foundation
import HTTPServer
import PaymentGateway

/// `POST /v1/pos/auth-token` (MONEI's "Create POS Auth Token", the official SDK's
/// `client.pos_auth_token.create(...)`): the merchant's backend trades its API key for the token
/// a terminal's app passes to `prepare(token:)` — the only way to get a terminal token from a
/// served gateway.
///
/// - Request (`CreatePosAuthTokenRequest`): `{pointOfSaleId?, storeId?}`, both optional, or no
///   body at all. Each is 1 to 128 characters without control characters (else 400).
/// - Answer (`PosAuthTokenCreate200Response`): `{token}`, valid 24 hours, for the service's
///   account (``GatewayService/accountId``). Without a `pointOfSaleId` the terminal gets one made
///   up (`pos_<16 hex>`), as MONEI assigns one: a terminal that must find its own orders again
///   with a later token (recovery) names its `pointOfSaleId` every time.
extension GatewayService {
    struct POSAuthTokenRequest: Codable {
        var pointOfSaleId: String?
        var storeId: String?
    }
    struct POSAuthTokenAnswer: Codable {
        var token: String
    }

    /// How long a POS auth token is valid (MONEI: 24 hours).
    public static let posTokenLifetime: Duration = .seconds(24 * 3600)

    func registerPOSAuthToken(_ r: inout Router) {
        r.add("POST", "/v1/pos/auth-token", .apiKey) { [self] req, _ in
            await respond(req) { () throws(RouteError) in
                let body = req.body.isEmpty ? POSAuthTokenRequest() : try req.decode(POSAuthTokenRequest.self)
                for (field, value) in [("pointOfSaleId", body.pointOfSaleId), ("storeId", body.storeId)] {
                    guard let value else { continue }
                    guard (1...128).contains(value.utf8.count),
                          !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                        throw RouteError(400, "invalidRequest", "\(field) must be 1 to 128 characters without control characters")
                    }
                }
                let token = gateway.issueToken(accountId: accountId, mode: .test, ttl: Self.posTokenLifetime,
                                               pointOfSaleId: body.pointOfSaleId, storeId: body.storeId)
                return Wire.json(POSAuthTokenAnswer(token: token))
            }
        }
    }
}
