public import Foundation
public import PaymentRules
public import CodedErrors

// Public initialisers for the gateway's answers, so a `Gateway` in another module (the HTTP
// client of the gateway service) can rebuild what the server sent. Labelled `reported…` so they
// never clash with the memberwise initialisers this module uses.

extension Payment {
    /// A ledger row as a remote gateway reported it.
    public init(reportedId paymentId: String, kind: TransactionKind, orderId: String, parentPaymentId: String?,
                amount: Int, currency: String, status: AuthorisationStatus, statusCode: String,
                statusMessage: String, authorisationCode: String?, uniqueRef: String, cardBrand: CardBrand,
                last4: String, maskedPAN: String, expiry: String?, panSequenceNumber: UInt8?, emvData: [UInt8],
                cryptogram: CryptogramCheck, callbackUrl: String?, accountId: String?, sdkVersion: String?,
                reversed: Bool, refundedAmount: Int, createdAt: Date, updatedAt: Date) {
        self.init(paymentId: paymentId, kind: kind, orderId: orderId, parentPaymentId: parentPaymentId,
                  amount: amount, currency: currency, status: status, statusCode: statusCode,
                  statusMessage: statusMessage, authorisationCode: authorisationCode, uniqueRef: uniqueRef,
                  cardBrand: cardBrand, last4: last4, maskedPAN: maskedPAN, expiry: expiry,
                  panSequenceNumber: panSequenceNumber, emvData: emvData, cryptogram: cryptogram,
                  callbackUrl: callbackUrl, accountId: accountId, sdkVersion: sdkVersion, reversed: reversed,
                  refundedAmount: refundedAmount, createdAt: createdAt, updatedAt: updatedAt)
    }
}

extension ReversalResponse {
    /// A reversal's answer as a remote gateway reported it.
    public init(reportedRef uniqueRef: String, originalUniqueRef: String, paymentId: String, orderId: String,
                amount: Int, currency: String, statusCode: String, statusMessage: String) {
        self.init(uniqueRef: uniqueRef, originalUniqueRef: originalUniqueRef, paymentId: paymentId,
                  orderId: orderId, amount: amount, currency: currency, statusCode: statusCode,
                  statusMessage: statusMessage)
    }
}

extension RefundResponse {
    /// A refund's answer as a remote gateway reported it.
    public init(reportedRef uniqueRef: String, refundPaymentId: String, originalUniqueRef: String,
                paymentId: String, orderId: String, amount: Int, currency: String, refundedAmount: Int,
                remainingAmount: Int, statusCode: String, statusMessage: String) {
        self.init(uniqueRef: uniqueRef, refundPaymentId: refundPaymentId, originalUniqueRef: originalUniqueRef,
                  paymentId: paymentId, orderId: orderId, amount: amount, currency: currency,
                  refundedAmount: refundedAmount, remainingAmount: remainingAmount, statusCode: statusCode,
                  statusMessage: statusMessage)
    }
}

extension TokenClaims {
    /// A token's claims as a remote gateway reported them.
    public init(reportedAccount accountId: String, mode: TokenMode, issuedAt: Date, expiresAt: Date, tokenId: String,
                pointOfSaleId: String? = nil, storeId: String? = nil) {
        self.init(accountId: accountId, mode: mode, issuedAt: issuedAt, expiresAt: expiresAt, tokenId: tokenId,
                  pointOfSaleId: pointOfSaleId, storeId: storeId)
    }
}

extension ErrorCode<GatewayError> {
    /// Every code this version knows, for decoding a code a remote gateway sent by name.
    public static var known: [Self] {
        [.invalidRequest, .sdkUpgradeRequired, .orderConflict, .orderNotOwned, .notFound, .alreadyReversed,
         .notReversible, .notRefundable, .refundExceedsRemaining, .notCapturable, .notCancelable, .timeout,
         .connectionLost, .serverError, .cancelled, .storage, .busy, .corruptLedger, .unsupportedLedgerVersion,
         .readOnlyStorage, .noDataDirectory, .storeMissing, .testControlsOff]
    }

    /// The code named `name` (its `description`); nil for a name this version does not know.
    public init?(named name: String) {
        guard let c = Self.known.first(where: { $0.name == name }) else { return nil }
        self = c
    }
}
