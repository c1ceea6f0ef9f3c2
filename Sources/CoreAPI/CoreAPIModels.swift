public import Foundation
import PaymentRules
public import DeviceStore
public import PaymentGateway

// The CoreAPI-style SDK of seeds `002` and `003` ("Handle errors"), in Swift spellings.
//
// The seeds' SDK is Objective-C: its model objects are classes whose properties are set after
// `init()` (`let filter = CoreTransactionFilter(); filter.orderId = …`). Here they are value
// types: write `var filter = CoreTransactionFilter()` and set the same properties. Amounts are
// minor units (cents) as everywhere in tapemu, where the seeds use a decimal in major units.

/// The kind of reader a device callback is about (`onDeviceConnected(_:withDeviceInfo:)`).
///
/// tapemu stands in for the iPhone's own NFC reader, so every device is ``appleTTP`` — whether
/// the cards come from a virtual card, a replayed trace or a USB reader through PC/SC (the
/// device info says which).
public enum DeviceEnum: Int, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// Apple Tap to Pay on iPhone.
    case appleTTP = 1

    /// The SDK's name of the device type, as `CoreReversal.deviceType` takes it: `AppleTTP`.
    public var name: String {
        switch self {
        case .appleTTP: "AppleTTP"
        }
    }

    public var description: String { name }
}

// MARK: - Sale and refund

/// A sale, as `processSale(_:)` takes it and as `onTransactionCommError` hands it back.
///
/// The card fields (``maskedPAN``, ``cardType``) are set once the card is read; ``uniqueRef``
/// once the gateway answered. A sale never holds a full PAN: ``maskedPAN`` is first 6 + last 4.
public struct CoreSale: Sendable, Hashable, Codable {
    /// Amount in minor units (cents), more than 0.
    public var amount: Int
    /// ISO 4217 alphabetic code; must be the terminal's currency.
    public var currency: String
    /// The merchant's order reference: the key of the recovery (the gateway never charges one
    /// orderId twice).
    public var orderId: String
    /// First 6 + last 4 of the card's PAN (`476173******0010`), set after the read.
    public var maskedPAN: String?
    /// The card scheme (`visa`, `mastercard`, …), set after the read.
    public var cardType: String?
    /// The gateway's reference of the transaction, set when the gateway answered.
    public var uniqueRef: String?

    public init(amount: Int, currency: String = "EUR", orderId: String, maskedPAN: String? = nil,
                cardType: String? = nil, uniqueRef: String? = nil) {
        self.amount = amount
        self.currency = currency
        self.orderId = orderId
        self.maskedPAN = maskedPAN
        self.cardType = cardType
        self.uniqueRef = uniqueRef
    }

    /// The card's last four digits (from ``maskedPAN``), when known.
    public var panLastFour: String? {
        guard let masked = maskedPAN else { return nil }
        let last = String(masked.suffix(4))
        return last.count == 4 && last.allSatisfy({ $0.isASCII && $0.isNumber }) ? last : nil
    }

    /// The dictionary keys of ``convertToDictionary()``.
    public enum DictionaryKey {
        public static let amount = "amount"
        public static let currency = "currency"
        public static let orderId = "orderId"
        public static let maskedPAN = "maskedPAN"
        public static let cardType = "cardType"
        public static let uniqueRef = "uniqueRef"
    }

    /// The sale as a dictionary of strings, to store on the device (seed `002`:
    /// `savePendingSale(sale.convertToDictionary())`). Absent fields are left out.
    public func convertToDictionary() -> [String: String] {
        var d: [String: String] = [
            DictionaryKey.amount: String(amount),
            DictionaryKey.currency: currency,
            DictionaryKey.orderId: orderId,
        ]
        d[DictionaryKey.maskedPAN] = maskedPAN
        d[DictionaryKey.cardType] = cardType
        d[DictionaryKey.uniqueRef] = uniqueRef
        return d
    }

    /// A sale from ``convertToDictionary()``'s dictionary. Nil when `amount` is not one a payment
    /// takes (``PaymentAmount``), `currency` is not three letters (``CurrencyCode``), `orderId` is missing or empty, or
    /// `maskedPAN` looks like a full, unmasked PAN (which tapemu never stores). Unknown keys are
    /// ignored.
    public init?(dictionary: [String: String]) {
        guard let amountText = dictionary[DictionaryKey.amount], let amount = Int(amountText), PaymentAmount.isValid(amount),
              let currency = dictionary[DictionaryKey.currency], CurrencyCode.isValid(currency),
              let orderId = dictionary[DictionaryKey.orderId], !orderId.isEmpty else { return nil }
        let masked = dictionary[DictionaryKey.maskedPAN]
        if let masked, !Self.isMasked(masked) { return nil }
        self.init(amount: amount, currency: currency.uppercased(), orderId: orderId, maskedPAN: masked,
                  cardType: dictionary[DictionaryKey.cardType], uniqueRef: dictionary[DictionaryKey.uniqueRef])
    }

    /// The sale a pending payment stands for: its stored dictionary, completed with the card
    /// fields the payment flow recorded after the read. Nil when neither gives a valid sale.
    public init?(pending: PendingPayment) {
        var d = pending.sale
        if d.isEmpty {
            d = [DictionaryKey.amount: String(pending.amount), DictionaryKey.currency: pending.currency,
                 DictionaryKey.orderId: pending.orderId]
        }
        if d[DictionaryKey.maskedPAN] == nil, let m = pending.maskedPAN { d[DictionaryKey.maskedPAN] = m }
        if d[DictionaryKey.cardType] == nil, let b = pending.cardBrand { d[DictionaryKey.cardType] = b }
        self.init(dictionary: d)
    }

    /// Whether `text` can be a masked PAN: at most 4 digits in a row at its end, or no run of
    /// 12 or more digits anywhere.
    static func isMasked(_ text: String) -> Bool {
        !SensitiveData.mayShowPAN(text)
    }
}

/// The gateway's answer to a sale (`onSaleResponse(_:)`). A response that is not approved is an
/// answer, not an error: ``code`` says what the gateway decided.
public struct CoreSaleResponse: Sendable, Hashable, Codable {
    /// `A` approved, `D` declined, `R` referral, `E` error, or `C` when the sale of this order
    /// was approved and then reversed (a sale run again after the recovery reversed it: nothing
    /// is charged, and ``responseText`` says to run it with a new orderId). See
    /// `TransactionCode`. Only `A` is an approval.
    public var code: String
    /// The sale, with its card fields and ``uniqueRef`` set.
    public var sale: CoreSale
    public var orderId: String
    public var uniqueRef: String
    public var amount: Int
    public var currency: String
    public var maskedPAN: String
    public var cardType: String
    /// Six characters for an approval.
    public var authCode: String?
    /// ISO 8583-style response code (`00`, `51`, …).
    public var responseCode: String
    public var responseText: String
    /// The gateway's payment id.
    public var paymentId: String

    /// Only `A` is an approval.
    public var isApproved: Bool { code == TransactionCode.approved.rawValue }
}

/// A referenced refund: give back `amount` of the sale with `uniqueRef`.
public struct CoreRefund: Sendable, Hashable, Codable {
    /// The sale's reference (`CoreSaleResponse.uniqueRef`, `CoreTransactionSummary.uniqueRef`).
    public var uniqueRef: String
    /// Minor units; nil refunds all that is left.
    public var amount: Int?

    public init(uniqueRef: String, amount: Int? = nil) {
        self.uniqueRef = uniqueRef
        self.amount = amount
    }
}

/// The gateway's answer to a referenced refund (`onRefundResponse(_:)`).
public struct CoreRefundResponse: Sendable, Hashable, Codable {
    /// `A`: refunds recorded by the gateway are approved.
    public var code: String
    /// The refund's own reference.
    public var uniqueRef: String
    /// The refunded sale's reference.
    public var originalUniqueRef: String
    public var orderId: String
    /// This refund's amount.
    public var amount: Int
    public var currency: String
    /// What is left to refund of the sale.
    public var remainingAmount: Int
    public var responseCode: String
    public var responseText: String
}

// MARK: - Errors

/// A transaction failure (`onError(_:withDescription:)` of the sale and refund listeners, and
/// the error of `onTransactionCommError`). Raw values are stable.
///
/// Before the submission point no payment exists: fix the cause and run the sale again. A
/// communication error (`onTransactionCommError`) carries one of ``networkError``, ``timeout``,
/// ``cardReadFailed``, ``invalidEMVData`` or ``cancelled``, and the sale may be charged: resolve
/// it (``PendingSaleResolver``) before charging again.
public enum CoreError: Int, Error, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// The gateway could not be reached or failed (connection lost, HTTP 5xx). Try again when
    /// the device is back online.
    case networkError = 1
    /// Something did not answer in time: no card presented within the presentation timeout, no
    /// PIN, or no answer from the gateway.
    case timeout = 2
    /// The card broke the EMV protocol (malformed answers, missing data, no supported
    /// application). Ask for another card.
    case invalidEMVData = 3
    /// The card or the reader failed during the read (card removed, mute card, reader gone); the
    /// device listener gets the ``CoreDeviceError``. Tap again.
    case cardReadFailed = 4
    /// The terminal's settings do not allow the sale (the sale's currency is not the terminal's,
    /// the terminal and the reader kernel disagree on the currency).
    case terminalSettings = 5
    /// The terminal has no token to authenticate with. Set ``CoreTerminal/token``.
    case invalidTokenSettings = 6
    /// The gateway does not accept the terminal's token. Get a new token.
    case invalidToken = 7
    /// The terminal's token expired. Get a new token.
    case tokenExpired = 8
    /// The card declined the sale itself (offline decline, AAC). Ask for another card.
    case cardDeclined = 9
    /// The sale was cancelled (``CoreAPI/cancelSale()``, the PIN entry cancelled). Before the
    /// submission point no payment occurred.
    case cancelled = 10
    /// The card asked for a cardholder verification the device cannot do.
    case cvmFailed = 11
    /// The PIN pad failed.
    case pinEntryFailed = 12
    /// The device's store could not be written. With `onError`: the pending sale could not be
    /// stored, so nothing was sent. With `onTransactionCommError`: the gateway's answer could not
    /// be stored with the pending sale (a full or read-only disk), so it is not handed over — the
    /// sale stays pending: resolve it.
    case storageError = 13
    /// The request is invalid: an amount of 0 or less, an empty orderId or uniqueRef, an empty
    /// transaction filter. Correct it.
    case invalidParameters = 14
    /// `initialise` has not succeeded (see the device listener's error), or the reader is gone.
    case deviceNotReady = 15
    /// A sale is already in progress on this device.
    case transactionInProgress = 16
    /// No transaction has this uniqueRef.
    case transactionNotFound = 17
    /// The sale cannot be refunded: declined or reversed, or the amount is more than what is left.
    case refundNotAllowed = 18
    /// The transaction was reversed before; it was not reversed again.
    case alreadyReversed = 19
    /// The transaction cannot be reversed (declined, a refund, or refunded).
    case notReversible = 20

    /// The case's Swift name (`networkError`).
    public var name: String {
        switch self {
        case .networkError: "networkError"
        case .timeout: "timeout"
        case .invalidEMVData: "invalidEMVData"
        case .cardReadFailed: "cardReadFailed"
        case .terminalSettings: "terminalSettings"
        case .invalidTokenSettings: "invalidTokenSettings"
        case .invalidToken: "invalidToken"
        case .tokenExpired: "tokenExpired"
        case .cardDeclined: "cardDeclined"
        case .cancelled: "cancelled"
        case .cvmFailed: "cvmFailed"
        case .pinEntryFailed: "pinEntryFailed"
        case .storageError: "storageError"
        case .invalidParameters: "invalidParameters"
        case .deviceNotReady: "deviceNotReady"
        case .transactionInProgress: "transactionInProgress"
        case .transactionNotFound: "transactionNotFound"
        case .refundNotAllowed: "refundNotAllowed"
        case .alreadyReversed: "alreadyReversed"
        case .notReversible: "notReversible"
        }
    }

    public var description: String { "\(rawValue) \(name)" }
}

/// A device failure (`onDeviceError(_:withDescription:)`). Raw values are stable.
///
/// The reader faults are what tapemu sees through PC/SC (or a trace, or a virtual card that
/// misbehaves on purpose). The `APPLE_TTP_` conditions come from the emulated device
/// (``CoreDeviceEnvironment``) and stop ``CoreAPI/initialise(terminal:saleListener:refundListener:deviceListener:)``.
public enum CoreDeviceError: Int, Error, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// No reader: none connected, none matching the name, or none available. The device is
    /// unavailable (`onDeviceDisconnected` follows).
    case noReader = 1
    /// The reader went away (unplugged). The device is unavailable.
    case readerRemoved = 2
    /// A card is in the field but does not answer (an APDU timed out).
    case cardMute = 3
    /// The card left the field during the read.
    case cardRemoved = 4
    /// The card service is not running (pcscd). The device is unavailable.
    case serviceUnavailable = 5
    /// Another program holds the card exclusively.
    case readerBusy = 6
    /// The card in the field is not a contactless payment card (a MIFARE tag, …).
    case unsupportedCard = 7
    /// The reader or its transport failed an exchange (a transmit error, a malformed response, a
    /// replayed trace that does not match).
    case readerFault = 8

    /// `APPLE_TTP_UNSUPPORTED_MODEL`: this iPhone cannot do Tap to Pay (iPhone XS or later).
    case appleTTPUnsupportedModel = 101
    /// `APPLE_TTP_UNSUPPORTED_OS_VERSION`: the iOS version is too old.
    case appleTTPUnsupportedOSVersion = 102
    /// `APPLE_TTP_PASSCODE_DISABLED`: Tap to Pay needs a device passcode.
    case appleTTPPasscodeDisabled = 103
    /// `APPLE_TTP_MERCHANT_BLOCKED`: the merchant is blocked from Tap to Pay.
    case appleTTPMerchantBlocked = 104
    /// `APPLE_TTP_ACCOUNT_LINKING_FAILED`: the Apple account could not be linked to the merchant
    /// (terms not accepted, linking failed).
    case appleTTPAccountLinkingFailed = 105

    /// The SDK constant name: `NO_READER`, `APPLE_TTP_PASSCODE_DISABLED`, …
    public var name: String {
        switch self {
        case .noReader: "NO_READER"
        case .readerRemoved: "READER_REMOVED"
        case .cardMute: "CARD_MUTE"
        case .cardRemoved: "CARD_REMOVED"
        case .serviceUnavailable: "SERVICE_UNAVAILABLE"
        case .readerBusy: "READER_BUSY"
        case .unsupportedCard: "UNSUPPORTED_CARD"
        case .readerFault: "READER_FAULT"
        case .appleTTPUnsupportedModel: "APPLE_TTP_UNSUPPORTED_MODEL"
        case .appleTTPUnsupportedOSVersion: "APPLE_TTP_UNSUPPORTED_OS_VERSION"
        case .appleTTPPasscodeDisabled: "APPLE_TTP_PASSCODE_DISABLED"
        case .appleTTPMerchantBlocked: "APPLE_TTP_MERCHANT_BLOCKED"
        case .appleTTPAccountLinkingFailed: "APPLE_TTP_ACCOUNT_LINKING_FAILED"
        }
    }

    /// Whether this is one of the Apple Tap to Pay conditions (`APPLE_TTP_…`).
    public var isAppleTTP: Bool { rawValue > 100 }

    /// Whether the device is unavailable after this error (`onDeviceDisconnected` fires).
    public var makesDeviceUnavailable: Bool {
        switch self {
        case .noReader, .readerRemoved, .serviceUnavailable: true
        case .cardMute, .cardRemoved, .readerBusy, .unsupportedCard, .readerFault: false
        case .appleTTPUnsupportedModel, .appleTTPUnsupportedOSVersion, .appleTTPPasscodeDisabled,
             .appleTTPMerchantBlocked, .appleTTPAccountLinkingFailed: true
        }
    }

    public var description: String { "\(rawValue) \(name)" }
}

/// Why a `RestConnector` request failed: a ``CoreError`` code, a message, and the gateway's
/// error when there was one. ``isRetryable`` says whether trying later may help.
public struct CoreRestError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: CoreError
    public var message: String
    /// The gateway's error, when the gateway (or the way to it) failed.
    public var gatewayError: GatewayError?

    public init(_ code: CoreError, _ message: String, gatewayError: GatewayError? = nil) {
        self.code = code
        self.message = message
        self.gatewayError = gatewayError
    }

    /// A transport failure (``CoreError/networkError``, ``CoreError/timeout``): the request may
    /// or may not have been done; try again later (the recovery keeps the pending sale).
    public var isRetryable: Bool { code == .networkError || code == .timeout }

    public var description: String { "\(code): \(message)" }
}

// MARK: - Transaction list and reversal

/// A transaction-list query (`RestConnector.requestTransactionList`): by orderId, by the card's
/// last four digits, or both (a transaction must then match both).
public struct CoreTransactionFilter: Sendable, Hashable, Codable {
    public var orderId: String?
    public var panLastFour: String?

    public init(orderId: String? = nil, panLastFour: String? = nil) {
        self.orderId = orderId
        self.panLastFour = panLastFour
    }
}

/// One transaction of a list.
public struct CoreTransactionSummary: Sendable, Hashable, Codable {
    /// `A` approved (and standing), `D` declined, `C` cancelled (reversed), `R` referral, `E`
    /// error. Only `A` is an approval; only `A` is worth reversing.
    public var code: String
    /// The reference a reversal or refund takes.
    public var uniqueRef: String
    /// Minor units.
    public var amount: Int
    public var currency: String
    /// The masked card number, first 6 + last 4.
    public var cardNumber: String?
    public var orderId: String
    /// `sale` or `refund`.
    public var type: String
    public var date: Date

    public init(code: String, uniqueRef: String, amount: Int, currency: String, cardNumber: String?,
                orderId: String, type: String, date: Date) {
        self.code = code
        self.uniqueRef = uniqueRef
        self.amount = amount
        self.currency = currency
        self.cardNumber = cardNumber
        self.orderId = orderId
        self.type = type
        self.date = date
    }

    init(_ s: TransactionSummary) {
        self.init(code: s.code.rawValue, uniqueRef: s.uniqueRef, amount: s.amount, currency: s.currency,
                  cardNumber: s.cardNumber, orderId: s.orderId, type: s.kind.rawValue, date: s.date)
    }
}

/// The answer to a transaction-list query: sales first, newest first. Empty when the gateway
/// holds nothing that matches (the sale never reached it).
public struct CoreTransactions: Sendable, Hashable, Codable {
    public var transactionSummary: [CoreTransactionSummary]
    public init(transactionSummary: [CoreTransactionSummary]) { self.transactionSummary = transactionSummary }
}

/// A reversal (void) of an authorised transaction, by its uniqueRef.
public struct CoreReversal: Sendable, Hashable, Codable {
    /// The transaction to reverse (``CoreTransactionSummary/uniqueRef``).
    public var uniqueRef: String?
    /// The device type that took the sale: `AppleTTP` (``DeviceEnum/name``). Nil means `AppleTTP`.
    public var deviceType: String?

    public init(uniqueRef: String? = nil, deviceType: String? = nil) {
        self.uniqueRef = uniqueRef
        self.deviceType = deviceType
    }
}

/// The answer to a reversal.
public struct CoreReversalResponse: Sendable, Hashable, Codable {
    /// `A`: the reversal was done.
    public var code: String
    /// The reversal's own reference.
    public var uniqueRef: String
    /// The reversed transaction.
    public var originalUniqueRef: String
    public var orderId: String
    public var amount: Int
    public var currency: String
    public var deviceType: String
    public var responseText: String
}

// MARK: - Terminal

/// The terminal a sale, a refund or a `RestConnector` request runs as: the gateway it talks to,
/// its credentials (``token``), its currency, and how long it waits.
public struct CoreTerminal: Sendable {
    /// The acquirer.
    public var gateway: any Gateway
    /// The merchant's token from the gateway (checked before each sale, refund and request).
    /// Nil: every request fails with ``CoreError/invalidTokenSettings``.
    public var token: String?
    /// ISO 4217 code of the terminal's sales; a sale in another currency fails with
    /// ``CoreError/terminalSettings``.
    public var currency: String
    /// How long a gateway request may take. Default 30 s.
    public var requestTimeout: Duration
    /// A fault to inject into the `RestConnector` requests and refunds (tests, `tapemu resolve
    /// --gateway-fault`). Sales take theirs from `PaymentConfiguration.gatewayFault`.
    public var requestFault: GatewayFault?

    public init(gateway: any Gateway, token: String?, currency: String = "EUR",
                requestTimeout: Duration = .seconds(30), requestFault: GatewayFault? = nil) {
        // The terminal's own view: its token on every request, never another terminal's.
        self.gateway = gateway.forTerminal(token: token)
        self.token = token
        self.currency = currency
        self.requestTimeout = requestTimeout
        self.requestFault = requestFault
    }

    var requestOptions: GatewayRequestOptions {
        GatewayRequestOptions(timeout: requestTimeout, fault: requestFault)
    }
}
