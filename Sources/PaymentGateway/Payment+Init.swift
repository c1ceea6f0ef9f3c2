public import Foundation
public import PaymentRules

extension Payment {
    /// A payment row built in memory (tests, data sources that are not the ledger). The ledger
    /// makes its own rows; this never writes one.
    public init(paymentId: String, kind: TransactionKind = .sale, orderId: String, parentPaymentId: String? = nil,
                amount: Int, currency: String = "EUR", status: AuthorisationStatus = .approved,
                statusCode: String = "00", statusMessage: String = "Approved", authorisationCode: String? = nil,
                uniqueRef: String, cardBrand: CardBrand = .visa, last4: String, maskedPAN: String,
                expiry: String? = nil, panSequenceNumber: UInt8? = nil, emvData: [UInt8] = [],
                cryptogram: CryptogramCheck = .unverified, callbackUrl: String? = nil, accountId: String? = nil,
                sdkVersion: String? = nil, reversed: Bool = false, refundedAmount: Int = 0,
                createdAt: Date, updatedAt: Date? = nil) {
        self.paymentId = paymentId
        self.kind = kind
        self.orderId = orderId
        self.parentPaymentId = parentPaymentId
        self.amount = amount
        self.currency = currency
        self.status = status
        self.statusCode = statusCode
        self.statusMessage = statusMessage
        self.authorisationCode = authorisationCode
        self.uniqueRef = uniqueRef
        self.cardBrand = cardBrand
        self.last4 = last4
        self.maskedPAN = maskedPAN
        self.expiry = expiry
        self.panSequenceNumber = panSequenceNumber
        self.emvData = emvData
        self.cryptogram = cryptogram
        self.callbackUrl = callbackUrl
        self.accountId = accountId
        self.sdkVersion = sdkVersion
        self.reversed = reversed
        self.refundedAmount = refundedAmount
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
    }
}

extension Payment {
    /// This row with ``captured`` set (a row rebuilt from a wire shape that says its state).
    public func withCaptured(_ captured: Bool) -> Payment {
        var p = self
        p.captured = captured
        return p
    }
}
