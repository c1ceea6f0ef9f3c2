import Foundation
import HTTPClient
import PaymentGateway
import Testing
import TestSupport

/// `POST /v1/payments` (MONEI's create) refuses what it cannot make with MONEI's error body and
/// records nothing; what it makes is decided at once, never with the full PAN in an answer.
@Suite("MONEI's create: POST /v1/payments", .temporaryDirectories)
struct MerchantCreateTests {
    static let card = #""paymentMethod":{"card":{"number":"4548812049400004","expMonth":"12","expYear":"2034","cvc":"123"}}"#

    @Test("a refused create is MONEI's error and records nothing", arguments: [
        (#"{"amount":100,"currency":"EUR","orderId":"c-1","transactionType":"PAYOUT",\#(card)}"#, 422, "UnprocessableEntityError"),
        (#"{"amount":100,"currency":"EUR","orderId":"c-1","transactionType":"auth",\#(card)}"#, 400, "BadRequestError"),
        (#"{"amount":100,"currency":"EUR","orderId":"c-1"}"#, 422, "UnprocessableEntityError"),
        (#"{"amount":100,"currency":"EUR","orderId":"c-1","paymentMethod":{"card":{"number":"4548 8120"}}}"#, 400, "BadRequestError"),
        (#"{"amount":100,"currency":"EUR","orderId":"c-1","paymentMethod":{"card":{"number":"4548812049400004","expMonth":"13","expYear":"34"}}}"#, 400, "BadRequestError"),
        (#"{"amount":100,"currency":"EUR","orderId":"c-1","paymentMethod":{"card":{"number":"4548812049400004","expMonth":"12","expYear":"2O34"}}}"#, 400, "BadRequestError"),
        (#"{"amount":0,"currency":"EUR","orderId":"c-1",\#(card)}"#, 400, "BadRequestError"),
        (#"{"amount":100,"currency":"eur","orderId":"c-1",\#(card)}"#, 400, "BadRequestError"),
        (#"{"currency":"EUR","orderId":"c-1",\#(card)}"#, 400, "BadRequestError"),
    ] as [(String, Int, String)])
    func refused(_ body: String, _ status: Int, _ name: String) async throws {
        let live = try LiveService()
        let r = try await live.send("POST", "/v1/payments", json: body, key: live.service.apiKey)
        #expect(r.status == status, "\(String(decoding: r.body, as: UTF8.self))")
        let doc = try jsonObject(r.body)
        #expect(doc["status"] as? String == name && doc["statusCode"] as? Int == status)
        #expect(doc["requestId"] is String && doc["requestTime"] is String && doc["message"] is String)
        #expect(!String(decoding: r.body, as: UTF8.self).contains("4548812049400004"))
        #expect(try live.service.gateway.ledger.allPayments().isEmpty)
        await live.server.stop()
    }

    @Test("a create is decided at once by the test triggers; the same create again is its replay; another card on the order is 409")
    func decided() async throws {
        let live = try LiveService()
        let key = live.service.apiKey
        let declined = try await live.send("POST", "/v1/payments", json: #"{"amount":1051,"currency":"EUR","orderId":"c-2",\#(Self.card)}"#, key: key)
        let doc = try jsonObject(declined.body)
        #expect(declined.status == 200 && doc["status"] as? String == "FAILED")
        #expect(doc["statusCode"] as? String == "E221" && doc["issuerResponseCode"] as? String == "51")
        let again = try await live.send("POST", "/v1/payments", json: #"{"amount":1051,"currency":"EUR","orderId":"c-2",\#(Self.card)}"#, key: key)
        #expect(try jsonObject(again.body)["id"] as? String == doc["id"] as? String)
        let other = try await live.send("POST", "/v1/payments", json: #"{"amount":1051,"currency":"EUR","orderId":"c-2","paymentMethod":{"card":{"number":"5555555555554444"}}}"#, key: key)
        let otherDoc = try jsonObject(other.body)
        #expect(other.status == 409 && otherDoc["status"] as? String == "ConflictError")
        #expect(try live.service.gateway.ledger.saleCount(orderId: "c-2") == 1)
        let stored = try #require(try live.service.gateway.ledger.sales(orderId: "c-2").first)
        #expect(stored.maskedPAN == "454881******0004" && stored.emvData.isEmpty && stored.expiry == "3412")
        await live.server.stop()
    }
}
