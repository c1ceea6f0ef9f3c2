/// Per-request transport settings: how long the caller waits, and a fault to inject.
public struct GatewayRequestOptions: Sendable, Hashable {
    /// How long the caller waits for the answer, on the gateway's clock; nil: the gateway's
    /// default (``EmbeddedGateway/Configuration/requestTimeout``).
    public var timeout: Duration?
    /// A fault for this request; nil: a fault armed on the gateway, else the amount's test
    /// trigger, else none. See ``GatewayFault``.
    public var fault: GatewayFault?

    public init(timeout: Duration? = nil, fault: GatewayFault? = nil) {
        self.timeout = timeout
        self.fault = fault
    }
}

/// The requests a fault can be armed for (``EmbeddedGateway/armFault(_:for:count:)``).
public enum GatewayOperation: String, Sendable, Hashable, CaseIterable {
    case authorise
    case charges
    case transactionList
    case reversal
    case refund
    /// MONEI's capture of an AUTHORIZED payment.
    case capture
    case validateToken
    case checkSDKVersion
    case terms
}

/// The acquirer as the payment flow sees it.
///
/// Implementations throw ``GatewayError`` only. Refusals (``GatewayError/Code/invalidRequest``,
/// ``GatewayError/Code/orderConflict``, ``GatewayError/Code/alreadyReversed``, …) mean nothing
/// was recorded. Transport faults (``GatewayError/isCommunicationFailure``) mean the request may
/// or may not have been recorded: never retry an authorisation after one; look the order up.
/// A declined authorisation is an answer, not an error.
public protocol Gateway: Sendable {
    /// Authorises a sale. Idempotent on `orderId`: an orderId the ledger holds is never
    /// charged again — the stored answer comes back (``AuthorisationResponse/isReplay``) when
    /// amount, currency and card match, else ``GatewayError/Code/orderConflict``.
    func authorize(_ request: AuthorisationRequest,
                   options: GatewayRequestOptions) async throws(GatewayError) -> AuthorisationResponse

    /// The sale of an order, as MONEI's `charges(filter: {orderId: {eq: …}})` (empty when the
    /// gateway never recorded it).
    func charges(orderId: String, options: GatewayRequestOptions) async throws(GatewayError) -> [Payment]

    /// Transactions by orderId and/or card last four, sales first, newest first (CoreAPI
    /// `requestTransactionList`). At least one filter field is required.
    func transactionList(_ filter: TransactionFilter,
                         options: GatewayRequestOptions) async throws(GatewayError) -> [TransactionSummary]

    /// Reverses (voids) an approved sale once. A second reversal throws
    /// ``GatewayError/Code/alreadyReversed`` and changes nothing; a declined sale throws
    /// ``GatewayError/Code/notReversible``.
    func reverse(uniqueRef: String, options: GatewayRequestOptions) async throws(GatewayError) -> ReversalResponse

    /// A referenced refund of `amount` minor units (nil: all that is left), never more than
    /// what is left (``GatewayError/Code/refundExceedsRemaining``).
    func refund(uniqueRef: String, amount: Int?,
                options: GatewayRequestOptions) async throws(GatewayError) -> RefundResponse

    /// Checks a token issued by this gateway (for `prepare(token:)`).
    func validateToken(_ token: String, options: GatewayRequestOptions) async throws(GatewayError) -> TokenValidation

    /// Throws ``GatewayError/Code/sdkUpgradeRequired`` when this SDK version is blocked.
    func checkSDKVersion(_ version: String, options: GatewayRequestOptions) async throws(GatewayError)

    /// Whether the merchant account accepted the Tap to Pay terms.
    func termsAccepted(accountId: String, options: GatewayRequestOptions) async throws(GatewayError) -> Bool

    /// Records the account's answer to the terms.
    func setTermsAccepted(_ accepted: Bool, accountId: String,
                          options: GatewayRequestOptions) async throws(GatewayError)

    /// This gateway as one terminal's own: its requests carry this terminal's credential —
    /// `token`, else the token this copy validates (`prepare(token:)`) — and never another
    /// terminal's, however many terminals share the gateway it was made from. Each `TapToPay`,
    /// and each CoreAPI terminal, takes one when it is made. The default is the gateway itself
    /// (an in-process gateway keeps no credential per terminal).
    func forTerminal(token: String?) -> any Gateway
}

extension Gateway {
    public func forTerminal(token: String?) -> any Gateway { self }
}

extension Gateway {
    public func authorize(_ request: AuthorisationRequest) async throws(GatewayError) -> AuthorisationResponse {
        try await authorize(request, options: GatewayRequestOptions())
    }

    public func charges(orderId: String) async throws(GatewayError) -> [Payment] {
        try await charges(orderId: orderId, options: GatewayRequestOptions())
    }

    public func transactionList(_ filter: TransactionFilter) async throws(GatewayError) -> [TransactionSummary] {
        try await transactionList(filter, options: GatewayRequestOptions())
    }

    public func transactionList(orderId: String? = nil, panLastFour: String? = nil,
                                options: GatewayRequestOptions = GatewayRequestOptions())
        async throws(GatewayError) -> [TransactionSummary] {
        try await transactionList(TransactionFilter(orderId: orderId, panLastFour: panLastFour), options: options)
    }

    public func reverse(uniqueRef: String) async throws(GatewayError) -> ReversalResponse {
        try await reverse(uniqueRef: uniqueRef, options: GatewayRequestOptions())
    }

    public func refund(uniqueRef: String, amount: Int? = nil) async throws(GatewayError) -> RefundResponse {
        try await refund(uniqueRef: uniqueRef, amount: amount, options: GatewayRequestOptions())
    }

    public func validateToken(_ token: String) async throws(GatewayError) -> TokenValidation {
        try await validateToken(token, options: GatewayRequestOptions())
    }

    public func checkSDKVersion(_ version: String) async throws(GatewayError) {
        try await checkSDKVersion(version, options: GatewayRequestOptions())
    }

    public func termsAccepted(accountId: String) async throws(GatewayError) -> Bool {
        try await termsAccepted(accountId: accountId, options: GatewayRequestOptions())
    }

    public func setTermsAccepted(_ accepted: Bool, accountId: String) async throws(GatewayError) {
        try await setTermsAccepted(accepted, accountId: accountId, options: GatewayRequestOptions())
    }
}
