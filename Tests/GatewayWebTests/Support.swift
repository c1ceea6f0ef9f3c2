import Foundation
import TestSupport
import PaymentGateway
import BERTLV
import PaymentRules

/// A sale through the real embedded gateway (card unknown to it: cryptogram unverified).
func pay(_ gateway: EmbeddedGateway, orderId: String, amount: Int = 1000, pan: String = "4111111111111111",
         callbackUrl: String? = "http://127.0.0.1:9/hook") async throws -> AuthorisationResponse {
    try await gateway.authorize(
        AuthorisationRequest(orderId: orderId, amount: amount, currency: "EUR", callbackUrl: callbackUrl,
                             card: CardData(pan: PAN(pan)!, expiry: "2812"), sdkVersion: "1.0.0", accountId: "acct_test"),
        options: GatewayRequestOptions())
}

/// An embedded gateway that knows no card's key (every cryptogram unverified, so approved).
func makeGateway(_ dir: TempDir, now: @escaping @Sendable () -> Date = { Date() }) throws -> EmbeddedGateway {
    try EmbeddedGateway(configuration: .init(dataDirectory: dir.sub("data"), now: now,
                                             issuerKeys: StaticIssuerKeyStore(cards: [:])))
}
