public import BERTLV
public import PaymentRules
public import Foundation

/// A card's brand as the ledger records and the gateway reports it (`visa`, `mastercard`, …):
/// a ``PaymentNetwork``'s raw value. Open, because a terminal over the wire may name any brand
/// and the ledger keeps what it was given; the brands and their tables (RIDs, PAN ranges) are
/// ``PaymentNetwork``'s.
public struct CardBrand: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue.lowercased() }
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }

    /// The record of `network`.
    public init(_ network: PaymentNetwork) { self.init(rawValue: network.rawValue) }
    /// The brand a PAN's leading digits suggest (``PaymentNetwork/init(pan:)``), used when the
    /// request names none.
    public init(pan: PAN) { self.init(PaymentNetwork(pan: pan)) }

    public static let visa = CardBrand(PaymentNetwork.visa)
    public static let mastercard = CardBrand(PaymentNetwork.mastercard)
    public static let amex = CardBrand(PaymentNetwork.amex)
    public static let discover = CardBrand(PaymentNetwork.discover)
    public static let jcb = CardBrand(PaymentNetwork.jcb)
    public static let unionPay = CardBrand(PaymentNetwork.unionpay)
    public static let maestro = CardBrand(PaymentNetwork.maestro)
    public static let unknown = CardBrand(PaymentNetwork.unknown)
}

/// The card as the reader saw it, for an online authorisation.
///
/// Its `description` never shows the full PAN (first 6 + last 4 only) nor the EMV bytes.
public struct CardData: Sendable, Hashable, CustomStringConvertible {
    /// The PAN (tag 5A or from track 2). Sent in full to the gateway; never stored in full.
    public var pan: PAN
    /// Expiry as YYMM (from 5F24 or track 2), when known.
    public var expiry: String?
    /// PAN sequence number (5F34); part of the cryptogram key derivation. 0 when absent.
    public var panSequenceNumber: UInt8
    /// The brand the reader chose; derived from the PAN when nil.
    public var brand: CardBrand?
    /// The EMV data for online authorisation: concatenated BER-TLV (9F26, 9F27, 9F36, 9F10,
    /// 9F37, 95, 9A, 9C, 9F02, 5F2A, 82, 9F1A, …).
    public var emvData: [UInt8]

    public init(pan: PAN, expiry: String? = nil, panSequenceNumber: UInt8 = 0, brand: CardBrand? = nil,
                emvData: [UInt8] = []) {
        self.pan = pan
        self.expiry = expiry
        self.panSequenceNumber = panSequenceNumber
        self.brand = brand
        self.emvData = emvData
    }

    /// The same from parsed data objects.
    public init(pan: PAN, expiry: String? = nil, panSequenceNumber: UInt8 = 0, brand: CardBrand? = nil,
                emv: [TLV]) {
        self.init(pan: pan, expiry: expiry, panSequenceNumber: panSequenceNumber, brand: brand,
                  emvData: emv.encoded)
    }

    public var description: String {
        "CardData(\(pan.masked), \(brand ?? CardBrand(pan: pan)), psn \(panSequenceNumber), \(emvData.count) EMV byte(s))"
    }
}

/// An online authorisation (a sale) as the terminal sends it.
public struct AuthorisationRequest: Sendable, Hashable, CustomStringConvertible {
    /// The merchant's order reference. The gateway never charges the same orderId twice.
    public var orderId: String
    /// Amount in minor units (cents), > 0.
    public var amount: Int
    /// ISO 4217 alphabetic code, upper case (`EUR`).
    public var currency: String
    /// Where the gateway sends the signed webhook of the final state (http or https URL).
    public var callbackUrl: String?
    public var card: CardData
    /// The SDK version string of the caller; a blocked one gets `sdkUpgradeRequired`.
    public var sdkVersion: String?
    /// The merchant account (from the token), when known.
    public var accountId: String?
    /// False for an authorisation only (MONEI `transactionType: AUTH`): an approval holds the
    /// funds (``PaymentState/authorized``) until a capture or a cancel. True: a sale, captured at
    /// once (every terminal payment).
    public var capture: Bool = true
    /// False for a card keyed in by the merchant's backend (MONEI `POST /v1/payments` with
    /// `paymentMethod.card`): there is no EMV data and no cryptogram to check. True for a card
    /// read by a terminal, whose cryptogram the gateway checks when it knows the card's key.
    public var cardPresent: Bool = true
    /// A terminal's authorisation (the gateway service's terminal API): the orderId becomes this
    /// terminal's in the sale's own transaction and durable commit, or the sale is refused with
    /// ``GatewayError/Code/orderNotOwned`` and nothing is recorded (``TerminalClaim``). Nil: no
    /// claim (in process, the merchant API).
    public var terminalClaim: TerminalClaim? = nil

    public init(orderId: String, amount: Int, currency: String = "EUR", callbackUrl: String? = nil,
                card: CardData, sdkVersion: String? = nil, accountId: String? = nil) {
        self.orderId = orderId
        self.amount = amount
        self.currency = currency
        self.callbackUrl = callbackUrl
        self.card = card
        self.sdkVersion = sdkVersion
        self.accountId = accountId
    }

    public var description: String {
        "AuthorisationRequest(order \(orderId), \(amount) \(currency), \(card))"
    }
}

/// What the gateway could say about the card's application cryptogram (9F26).
public enum CryptogramCheck: String, Sendable, Hashable, Codable {
    /// The gateway knows the card's issuer key and the cryptogram is right.
    case verified
    /// The gateway does not know the card (a real card, a foreign trace): not checked.
    case unverified
    /// The gateway knows the card and the cryptogram is wrong: the payment is declined.
    case failed
}

/// What a ledger row records.
public enum TransactionKind: String, Sendable, Hashable, Codable {
    case sale
    case refund
    case reversal
}

/// The state of a sale as the `charges` query shows it.
public enum PaymentState: String, Sendable, Hashable, Codable {
    case approved
    case declined
    /// Approved, then reversed (voided) in full.
    case reversed
    /// Approved, then refunded in full.
    case refunded
    /// Approved, then refunded in part.
    case partiallyRefunded
    /// Approved as an authorisation only (MONEI `transactionType: AUTH`): the funds are held,
    /// not captured. Capture makes it ``approved``; cancel (a reversal) makes it ``reversed``.
    case authorized
}

/// The one-letter response code of a transaction list (CoreAPI-style). Only ``approved`` is an
/// approval. Open: compare against the constants.
///
/// | Code | In tapemu |
/// |------|-----------|
/// | `A` | Approved: a sale authorised and still standing (refunds do not change it), or an approved refund. Reverse it to undo it. |
/// | `D` | Declined by the issuer (insufficient funds, expired, lost or stolen card, do not honour, a wrong cryptogram, …). Nothing to reverse. |
/// | `C` | Cancelled: a sale authorised and then reversed. Nothing left to reverse. |
/// | `R` | Referral: the issuer asked for a voice referral (ISO 8583 `01`). Not an approval; nothing to reverse. |
/// | `E` | Error: the host recorded the request but could not process it (ISO 8583 `96`, system malfunction). Not an approval; nothing to reverse. |
public struct TransactionCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let approved = TransactionCode(rawValue: "A")
    public static let declined = TransactionCode(rawValue: "D")
    public static let cancelled = TransactionCode(rawValue: "C")
    public static let referral = TransactionCode(rawValue: "R")
    public static let error = TransactionCode(rawValue: "E")

    /// Every code tapemu returns, with what it means here (for `tapemu gateway --triggers`).
    public static let meanings: [(code: TransactionCode, meaning: String)] = [
        (.approved, "approved: authorised and still standing (or an approved refund); reverse it to undo"),
        (.declined, "declined by the issuer; nothing to reverse"),
        (.cancelled, "cancelled: authorised, then reversed; nothing left to reverse"),
        (.referral, "referral: the issuer asks for a voice referral; not an approval"),
        (.error, "error: the host recorded the request but could not process it; not an approval"),
    ]
}

/// One ledger row: a sale, a refund or a reversal. Holds no full PAN.
public struct Payment: Sendable, Hashable {
    /// The gateway's id (32 hex digits).
    public var paymentId: String
    public var kind: TransactionKind
    public var orderId: String
    /// For a refund or a reversal: the sale's paymentId.
    public var parentPaymentId: String?
    /// Minor units.
    public var amount: Int
    public var currency: String
    /// The issuer's decision (refunds and reversals recorded here are always approved).
    public var status: AuthorisationStatus
    /// ISO 8583-style response code (`00` approved, `51` insufficient funds, …).
    public var statusCode: String
    /// Human-readable reason (the decline reason for a declined sale).
    public var statusMessage: String
    /// Six characters for an approval, nil otherwise.
    public var authorisationCode: String?
    /// The gateway's reference of this transaction (10 characters), for reversals and refunds.
    public var uniqueRef: String
    public var cardBrand: CardBrand
    public var last4: String
    /// First 6 + last 4 (`476173******0010`).
    public var maskedPAN: String
    public var expiry: String?
    public var panSequenceNumber: UInt8?
    /// The EMV data received with the request, without the data objects that hold the PAN,
    /// track data or the cardholder name (5A, 57, 56, 9F6B, 9F1F, 9F20, 5F20, 99).
    public var emvData: [UInt8]
    public var cryptogram: CryptogramCheck
    public var callbackUrl: String?
    public var accountId: String?
    public var sdkVersion: String?
    /// A sale reversed by ``Gateway/reverse(uniqueRef:options:)``.
    public var reversed: Bool
    /// Sum of the approved refunds of a sale.
    public var refundedAmount: Int
    public var createdAt: Date
    public var updatedAt: Date
    /// False for a sale authorised but not captured yet (MONEI `transactionType: AUTH`, state
    /// ``PaymentState/authorized``); true for every other row (a terminal sale is authorised and
    /// captured at once). Ledger schema version 3.
    public var captured: Bool = true
    /// MONEI's `lastRefundReason` of a sale: the reason given with its newest refund (nil when
    /// none was given). Ledger schema version 3.
    public var lastRefundReason: String? = nil
    /// MONEI's `lastRefundAmount` of a sale: its newest refund's amount (nil when none, or on a
    /// row refunded before version 3: then ``lastRefund(among:)`` of its children says it).
    public var lastRefundAmount: Int? = nil
    /// MONEI's `cancellationReason` of a sale cancelled (reversed) with a reason. Version 3.
    public var cancellationReason: String? = nil

    /// The sale's state for the `charges` query.
    public var state: PaymentState {
        guard status == .approved else { return .declined }
        if reversed { return .reversed }
        if !captured { return .authorized }
        if refundedAmount >= amount && refundedAmount > 0 { return .refunded }
        if refundedAmount > 0 { return .partiallyRefunded }
        return .approved
    }

    /// The one-letter code of a transaction list.
    public var transactionCode: TransactionCode {
        switch status {
        case .approved: return reversed ? .cancelled : .approved
        case .declined:
            switch statusCode {
            case DeclineReason.referral.statusCode: return .referral
            case DeclineReason.systemMalfunction.statusCode: return .error
            default: return .declined
            }
        }
    }

    /// What is left to refund.
    public var remainingAmount: Int { max(0, amount - refundedAmount) }

    /// The newest refund among a sale's `children` (its refunds and reversal, oldest first, as
    /// ``LedgerStore/children(ofPaymentId:)`` reads them): MONEI's `lastRefundAmount`, said the
    /// same by the merchant REST and GraphQL's `charges`.
    public static func lastRefund(among children: [Payment]) -> Payment? { children.last { $0.kind == .refund } }
}

/// The answer to an authorisation. A declined answer is not an error.
public struct AuthorisationResponse: Sendable, Hashable {
    public var paymentId: String
    public var orderId: String
    public var status: AuthorisationStatus
    public var statusCode: String
    public var statusMessage: String
    public var authorisationCode: String?
    public var uniqueRef: String
    public var amount: Int
    public var currency: String
    public var cardBrand: CardBrand
    public var last4: String
    public var maskedPAN: String
    public var cryptogram: CryptogramCheck
    /// The transaction-list code of the sale (`A`, `D`, `R`, `E`).
    public var transactionCode: TransactionCode
    /// True when the orderId was already in the ledger with the same amount, currency and
    /// card: this is the stored answer, and nothing was charged again.
    public var isReplay: Bool
    public var createdAt: Date

    public init(payment p: Payment, isReplay: Bool) {
        paymentId = p.paymentId
        orderId = p.orderId
        status = p.status
        statusCode = p.statusCode
        statusMessage = p.statusMessage
        authorisationCode = p.authorisationCode
        uniqueRef = p.uniqueRef
        amount = p.amount
        currency = p.currency
        cardBrand = p.cardBrand
        last4 = p.last4
        maskedPAN = p.maskedPAN
        cryptogram = p.cryptogram
        transactionCode = p.transactionCode
        self.isReplay = isReplay
        createdAt = p.createdAt
    }
}

/// A transaction-list query (CoreAPI `CoreTransactionFilter`). Set at least one field; when
/// both are set, a transaction must match both.
public struct TransactionFilter: Sendable, Hashable {
    public var orderId: String?
    /// The card's last four digits.
    public var panLastFour: String?
    public init(orderId: String? = nil, panLastFour: String? = nil) {
        self.orderId = orderId
        self.panLastFour = panLastFour
    }
}

/// One item of a transaction list (CoreAPI `CoreTransactionSummary`).
public struct TransactionSummary: Sendable, Hashable {
    /// `A`, `D`, `C`, `R`, `E`: see ``TransactionCode``.
    public var code: TransactionCode
    public var uniqueRef: String
    /// Minor units.
    public var amount: Int
    public var currency: String
    /// Masked PAN, first 6 + last 4.
    public var cardNumber: String
    public var orderId: String
    /// A sale or a refund (reversals show as code `C` on their sale, not as items).
    public var kind: TransactionKind
    public var paymentId: String
    public var statusCode: String
    public var statusMessage: String
    public var date: Date

    public init(_ p: Payment) {
        code = p.transactionCode
        uniqueRef = p.uniqueRef
        amount = p.amount
        currency = p.currency
        cardNumber = p.maskedPAN
        orderId = p.orderId
        kind = p.kind
        paymentId = p.paymentId
        statusCode = p.statusCode
        statusMessage = p.statusMessage
        date = p.createdAt
    }
}

/// The answer to a reversal.
public struct ReversalResponse: Sendable, Hashable {
    /// The reversal's own reference.
    public var uniqueRef: String
    /// The reversed sale's reference.
    public var originalUniqueRef: String
    /// The reversed sale.
    public var paymentId: String
    public var orderId: String
    /// The amount given back (the whole sale).
    public var amount: Int
    public var currency: String
    public var statusCode: String
    public var statusMessage: String
}

/// The answer to a referenced refund.
public struct RefundResponse: Sendable, Hashable {
    /// The refund's own reference.
    public var uniqueRef: String
    /// The refund's ledger id.
    public var refundPaymentId: String
    /// The refunded sale's reference and id.
    public var originalUniqueRef: String
    public var paymentId: String
    public var orderId: String
    /// This refund's amount.
    public var amount: Int
    public var currency: String
    /// All refunds of the sale so far, this one included.
    public var refundedAmount: Int
    /// What is left to refund.
    public var remainingAmount: Int
    public var statusCode: String
    public var statusMessage: String
}
