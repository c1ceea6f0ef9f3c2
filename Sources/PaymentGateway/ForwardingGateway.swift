/// A gateway that hands every request to another one: conform, give ``inner``, and implement
/// only the requests that behave differently (fault injection, crash points, races in tests).
public protocol ForwardingGateway: Gateway {
    /// The gateway that answers whatever this one does not override.
    var inner: any Gateway { get }
}

extension ForwardingGateway {
    public func authorize(_ request: AuthorisationRequest,
                          options: GatewayRequestOptions) async throws(GatewayError) -> AuthorisationResponse {
        try await inner.authorize(request, options: options)
    }

    public func charges(orderId: String, options: GatewayRequestOptions) async throws(GatewayError) -> [Payment] {
        try await inner.charges(orderId: orderId, options: options)
    }

    public func transactionList(_ filter: TransactionFilter,
                                options: GatewayRequestOptions) async throws(GatewayError) -> [TransactionSummary] {
        try await inner.transactionList(filter, options: options)
    }

    public func reverse(uniqueRef: String, options: GatewayRequestOptions) async throws(GatewayError) -> ReversalResponse {
        try await inner.reverse(uniqueRef: uniqueRef, options: options)
    }

    public func refund(uniqueRef: String, amount: Int?,
                       options: GatewayRequestOptions) async throws(GatewayError) -> RefundResponse {
        try await inner.refund(uniqueRef: uniqueRef, amount: amount, options: options)
    }

    public func validateToken(_ token: String, options: GatewayRequestOptions) async throws(GatewayError) -> TokenValidation {
        try await inner.validateToken(token, options: options)
    }

    public func checkSDKVersion(_ version: String, options: GatewayRequestOptions) async throws(GatewayError) {
        try await inner.checkSDKVersion(version, options: options)
    }

    public func termsAccepted(accountId: String, options: GatewayRequestOptions) async throws(GatewayError) -> Bool {
        try await inner.termsAccepted(accountId: accountId, options: options)
    }

    public func setTermsAccepted(_ accepted: Bool, accountId: String,
                                 options: GatewayRequestOptions) async throws(GatewayError) {
        try await inner.setTermsAccepted(accepted, accountId: accountId, options: options)
    }
}
