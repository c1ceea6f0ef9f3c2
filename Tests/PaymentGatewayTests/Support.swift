import BERTLV
import PaymentRules
import CardChannel
import Foundation
@testable import PaymentGateway
import Synchronization
import VirtualCard
import TestSupport



/// Test cards and requests.
enum Fixture {
    /// A double-length test issuer master key (not a real key).
    static let issuerMasterKey: [UInt8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,
                                           0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10]
    /// Public Visa test PANs (Luhn-valid).
    static let visa = PAN("4761739001010010")!
    static let otherVisa = PAN("4111111111111111")!
    static let amex = PAN("374245455400001")!

    /// EMV authorisation data as a card would give it, with a right cryptogram under `key`
    /// (or a wrong one when `corrupt`).
    static func emv(pan: PAN = visa, psn: UInt8 = 1, amount: Int, key: [UInt8] = issuerMasterKey,
                    atc: UInt16 = 0x0042, corrupt: Bool = false, cid: UInt8 = 0x80,
                    includePAN: Bool = true) -> [UInt8] {
        let terminal: [Tag: [UInt8]] = [
            .amountAuthorised: BCD.encodeNumeric(UInt64(amount), length: 6),
            .amountOther: BCD.encodeNumeric(0, length: 6),
            .terminalCountryCode: [0x07, 0x24],
            .terminalVerificationResults: [0, 0, 0, 0, 0],
            .transactionCurrencyCode: [0x09, 0x78],
            .transactionDate: [0x26, 0x11, 0x30],
            .transactionType: [0x00],
            .unpredictableNumber: [0xDE, 0xAD, 0xBE, 0xEF],
        ]
        let aip: [UInt8] = [0x20, 0x00]
        let iad: [UInt8] = [0x06, 0x01, 0x0A, 0x03, 0xA0, 0x00, 0x00]
        let data = ApplicationCryptogram.transactionData(terminal, aip: aip, atc: atc, issuerApplicationData: iad)
        var ac = ApplicationCryptogram.compute(issuerMasterKey: key, pan: pan, panSequenceNumber: psn, atc: atc, data: data)
        if corrupt { ac[0] ^= 0x01 }
        var tlvs: [TLV] = [
            TLV(tag: .applicationCryptogram, value: ac),
            TLV(tag: .cryptogramInformationData, value: [cid]),
            TLV(tag: .applicationTransactionCounter, value: [UInt8(atc >> 8), UInt8(atc & 0xFF)]),
            TLV(tag: .issuerApplicationData, value: iad),
            TLV(tag: .applicationInterchangeProfile, value: aip),
        ]
        for (tag, value) in terminal.sorted(by: { $0.key < $1.key }) { tlvs.append(TLV(tag: tag, value: value)) }
        if includePAN {
            tlvs.append(TLV(tag: .pan, value: pan.bcd))
            tlvs.append(TLV(tag: .panSequenceNumber, value: [psn]))
        }
        return tlvs.encoded
    }

    static func request(orderId: String = "order-\(UUID().uuidString.prefix(8))", amount: Int = 1000,
                        pan: PAN = visa, psn: UInt8 = 1, callbackUrl: String? = "https://merchant.example/hook",
                        emv: [UInt8]? = nil, sdkVersion: String? = "1.0.0") -> AuthorisationRequest {
        AuthorisationRequest(orderId: orderId, amount: amount, currency: "EUR", callbackUrl: callbackUrl,
                             card: CardData(pan: pan, expiry: "2812", panSequenceNumber: psn, brand: nil,
                                            emvData: emv ?? Fixture.emv(pan: pan, psn: psn, amount: amount)),
                             sdkVersion: sdkVersion, accountId: "acct_test")
    }

    /// A gateway on `dir` that knows the key of `visa` (and of nothing else).
    static func gateway(_ dir: TempDir, clock: any Clock<Duration> = ContinuousClock(), now: WallClock = WallClock(),
                        knownCards: [PAN] = [visa], verifier: any CryptogramVerifier = EMVCryptogramVerifier(),
                        timeout: Duration = .seconds(30), blocked: Set<String> = []) throws -> EmbeddedGateway {
        var keys: [PAN: IssuerKey] = [:]
        for p in knownCards { keys[p] = IssuerKey(masterKey: issuerMasterKey) }
        return try EmbeddedGateway(configuration: .init(
            dataDirectory: dir.sub("data"), clock: clock, requestTimeout: timeout, now: now.provider,
            issuerKeys: StaticIssuerKeyStore(cards: keys), cryptogramVerifier: verifier,
            blockedSDKVersions: blocked))
    }
}

/// Runs `body` and returns the GatewayError code it threw (nil if it did not throw).
func gatewayErrorCode<T>(_ body: () async throws(GatewayError) -> T) async -> GatewayError.Code? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error.code
    }
}

func gatewayErrorCode<T>(_ body: () throws(GatewayError) -> T) -> GatewayError.Code? {
    do {
        _ = try body()
        return nil
    } catch {
        return error.code
    }
}

/// BERTLV's `Tag`, named so that files importing Testing (which has its own `Tag`) can use it.
typealias EMVTag = Tag
