import DeviceStore
import Foundation
import PaymentGateway
import CoreAPI
import PaymentFlow
import Testing

@Suite struct CoreAPIModelTests {
    @Test func saleRoundTripsThroughItsDictionary() throws {
        let sale = CoreSale(amount: 1250, currency: "EUR", orderId: "order-1042", maskedPAN: "476173******0010",
                            cardType: "visa", uniqueRef: "ABCDE12345")
        let d = sale.convertToDictionary()
        #expect(d == ["amount": "1250", "currency": "EUR", "orderId": "order-1042", "maskedPAN": "476173******0010",
                      "cardType": "visa", "uniqueRef": "ABCDE12345"])
        #expect(CoreSale(dictionary: d) == sale)
        #expect(sale.panLastFour == "0010")

        let bare = CoreSale(amount: 1, orderId: "o")
        #expect(bare.convertToDictionary() == ["amount": "1", "currency": "EUR", "orderId": "o"])
        #expect(CoreSale(dictionary: bare.convertToDictionary()) == bare)
        #expect(bare.panLastFour == nil)
        // Unknown keys are ignored; the currency is upper-cased.
        #expect(CoreSale(dictionary: ["amount": "5", "currency": "eur", "orderId": "x", "tip": "1"])
                == CoreSale(amount: 5, currency: "EUR", orderId: "x"))
    }

    @Test(arguments: [
        ["currency": "EUR", "orderId": "o"],                                  // no amount
        ["amount": "12.50", "currency": "EUR", "orderId": "o"],               // not minor units
        ["amount": "0", "currency": "EUR", "orderId": "o"],
        ["amount": "-5", "currency": "EUR", "orderId": "o"],
        ["amount": "99999999999999999999999", "currency": "EUR", "orderId": "o"],
        ["amount": "5", "currency": "EURO", "orderId": "o"],
        ["amount": "5", "currency": "E1R", "orderId": "o"],
        ["amount": "5", "orderId": "o"],
        ["amount": "5", "currency": "EUR"],
        ["amount": "5", "currency": "EUR", "orderId": ""],
        // A full PAN is never taken for a masked one.
        ["amount": "5", "currency": "EUR", "orderId": "o", "maskedPAN": "4761739001010010"],
        ["amount": "5", "currency": "EUR", "orderId": "o", "maskedPAN": "4761 7390 0101 0010".replacingOccurrences(of: " ", with: "")],
        [:],
    ] as [[String: String]])
    func badDictionariesGiveNoSale(_ d: [String: String]) {
        #expect(CoreSale(dictionary: d) == nil)
    }

    @Test func saleFromAPendingPaymentTakesTheCardFromTheRecord() {
        let p = PendingPayment(orderId: "o-9", origin: .coreAPI, amount: 700, currency: "EUR",
                               maskedPAN: "541333******0434", last4: "0434", cardBrand: "mastercard",
                               createdAt: Date(), sale: ["amount": "700", "currency": "EUR", "orderId": "o-9"])
        let sale = CoreSale(pending: p)
        #expect(sale == CoreSale(amount: 700, currency: "EUR", orderId: "o-9", maskedPAN: "541333******0434",
                                 cardType: "mastercard"))
        // A record written without a dictionary still gives the sale.
        var bare = p
        bare.sale = [:]
        #expect(CoreSale(pending: bare)?.orderId == "o-9")
        // A damaged dictionary gives none.
        var broken = p
        broken.sale = ["amount": "x"]
        #expect(CoreSale(pending: broken) == nil)
    }

    @Test func rawValuesAreStableAndUnique() {
        #expect(Set(CoreError.allCases.map(\.rawValue)).count == CoreError.allCases.count)
        #expect(Set(CoreDeviceError.allCases.map(\.rawValue)).count == CoreDeviceError.allCases.count)
        #expect(CoreError.networkError.rawValue == 1)
        #expect(CoreError(rawValue: 2) == .timeout)
        #expect(CoreDeviceError.appleTTPPasscodeDisabled.name == "APPLE_TTP_PASSCODE_DISABLED")
        #expect(CoreDeviceError.allCases.filter(\.isAppleTTP).allSatisfy { $0.name.hasPrefix("APPLE_TTP_") })
        #expect(CoreDeviceError.allCases.filter { !$0.isAppleTTP }.allSatisfy { !$0.name.hasPrefix("APPLE_TTP_") })
        #expect(CoreDeviceError.allCases.filter(\.isAppleTTP).count == 5)
        #expect(DeviceEnum.appleTTP.name == "AppleTTP")
    }

    @Test(arguments: [
        (CoreDeviceEnvironment.Condition.ready, nil),
        (.unsupportedModel, CoreDeviceError.appleTTPUnsupportedModel),
        (.unsupportedOSVersion, .appleTTPUnsupportedOSVersion),
        (.passcodeDisabled, .appleTTPPasscodeDisabled),
        (.accountLinkingFailed, .appleTTPAccountLinkingFailed),
        (.merchantBlocked, .appleTTPMerchantBlocked),
    ] as [(CoreDeviceEnvironment.Condition, CoreDeviceError?)])
    func eachConditionGivesItsDeviceError(_ condition: CoreDeviceEnvironment.Condition, _ expected: CoreDeviceError?) {
        #expect(CoreDeviceEnvironment(condition: condition).check()?.error == expected)
    }

    @Test(arguments: [
        ("iPhone11,2", "16.4", true), ("iPhone15,2", "18.1", true), ("iPhone17,1", "26.0", true),
        ("iPhone10,6", "18.1", false), ("iPad13,1", "18.1", false), ("iPhone", "18.1", false),
        ("iPhoneX,1", "18.1", false), ("iPhone15,2", "16.3.9", false), ("iPhone15,2", "16.4.0", true),
        ("iPhone15,2", "16", false), ("iPhone15,2", "", false), ("iPhone15,2", "17.a", false),
    ])
    func modelAndOSChecks(_ model: String, _ os: String, _ ok: Bool) {
        let env = CoreDeviceEnvironment(device: DeviceEnvironment(model: model, osVersion: os))
        #expect((env.check() == nil) == ok)
        if !ok {
            #expect(env.check()?.error == .appleTTPUnsupportedModel || env.check()?.error == .appleTTPUnsupportedOSVersion)
        }
    }

    @Test func anUnsupportedDeviceIsAnUnsupportedModel() {
        let env = CoreDeviceEnvironment(device: DeviceEnvironment(isSupported: false))
        #expect(env.check()?.error == .appleTTPUnsupportedModel)
    }
}
