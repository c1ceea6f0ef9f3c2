import PaymentGateway

/// The gateway's REST requests of the CoreAPI-style SDK: the transaction list and reversals, the
/// two steps of the seeds' recovery process.
///
/// The seeds' SDK calls these synchronously "from a background thread"; here they are `async`
/// (call them from any task — they never block a thread) and throw ``CoreRestError``. Each
/// request first checks the terminal's token with the gateway.
///
/// ```swift
/// var filter = CoreTransactionFilter()
/// filter.orderId = sale.orderId
/// filter.panLastFour = sale.panLastFour
/// let result = try await RestConnector.requestTransactionList(filter, with: terminal)
/// guard let match = result.transactionSummary.first, match.code == "A" else { return }
/// var reversal = CoreReversal()
/// reversal.deviceType = "AppleTTP"
/// reversal.uniqueRef = match.uniqueRef
/// try await RestConnector.request(reversal, isRefund: false, with: terminal)
/// ```
public enum RestConnector {
    /// Transactions by orderId and/or the card's last four digits, sales first, newest first.
    ///
    /// Throws ``CoreError/invalidParameters`` for an empty filter, an empty orderId or a
    /// `panLastFour` that is not four digits; the token errors; ``CoreError/networkError`` and
    /// ``CoreError/timeout`` when the gateway cannot be reached (try again later).
    public static func requestTransactionList(_ filter: CoreTransactionFilter,
                                              with terminal: CoreTerminal) async throws(CoreRestError) -> CoreTransactions {
        guard filter.orderId != nil || filter.panLastFour != nil else {
            throw CoreRestError(.invalidParameters, "a transaction filter needs an orderId or the card's last four digits")
        }
        if let o = filter.orderId, o.isEmpty { throw CoreRestError(.invalidParameters, "the orderId is empty") }
        if let l = filter.panLastFour, l.utf8.count != 4 || !l.allSatisfy({ $0.isASCII && $0.isNumber }) {
            throw CoreRestError(.invalidParameters, "panLastFour must be four digits")
        }
        _ = try await authenticate(terminal)
        do {
            let items = try await terminal.gateway.transactionList(
                TransactionFilter(orderId: filter.orderId, panLastFour: filter.panLastFour), options: terminal.requestOptions)
            return CoreTransactions(transactionSummary: items.map(CoreTransactionSummary.init))
        } catch {
            throw restError(error, doing: "the transaction list")
        }
    }

    /// Reverses (voids) the authorised sale `reversal.uniqueRef` names, once.
    ///
    /// - Parameters:
    ///   - isRefund: false for a sale (the recovery's case). True asks to reverse a refund, which
    ///     tapemu's gateway does not do: it throws ``CoreError/notReversible`` without a request.
    /// - Throws: ``CoreError/alreadyReversed`` when the sale was reversed before — it is never
    ///   reversed twice, and nothing changes; ``CoreError/notReversible`` for a declined or
    ///   refunded sale; ``CoreError/transactionNotFound``; ``CoreError/invalidParameters`` for a
    ///   missing uniqueRef; the token errors; ``CoreError/networkError`` / ``CoreError/timeout``
    ///   when the gateway cannot be reached (the reversal may have been done: list the
    ///   transaction again — code `C` — before trying again).
    @discardableResult
    public static func requestReversal(_ reversal: CoreReversal, isRefund: Bool,
                                       with terminal: CoreTerminal) async throws(CoreRestError) -> CoreReversalResponse {
        guard let ref = reversal.uniqueRef, !ref.isEmpty else {
            throw CoreRestError(.invalidParameters, "the reversal has no uniqueRef")
        }
        let deviceType = reversal.deviceType ?? DeviceEnum.appleTTP.name
        guard !deviceType.isEmpty else { throw CoreRestError(.invalidParameters, "the reversal's deviceType is empty") }
        guard !isRefund else {
            throw CoreRestError(.notReversible, "tapemu's gateway does not reverse refunds (isRefund is true)")
        }
        _ = try await authenticate(terminal)
        do {
            let r = try await terminal.gateway.reverse(uniqueRef: ref, options: terminal.requestOptions)
            return CoreReversalResponse(code: TransactionCode.approved.rawValue, uniqueRef: r.uniqueRef,
                                        originalUniqueRef: r.originalUniqueRef, orderId: r.orderId, amount: r.amount,
                                        currency: r.currency, deviceType: deviceType, responseText: r.statusMessage)
        } catch {
            throw restError(error, doing: "the reversal")
        }
    }

    /// Seed `002`'s spelling of ``requestReversal(_:isRefund:with:)``.
    @discardableResult
    public static func request(_ reversal: CoreReversal, isRefund: Bool,
                               with terminal: CoreTerminal) async throws(CoreRestError) -> CoreReversalResponse {
        try await requestReversal(reversal, isRefund: isRefund, with: terminal)
    }

    // MARK: - Shared with the facade

    /// Checks the terminal's token with the gateway; returns its claims.
    static func authenticate(_ terminal: CoreTerminal) async throws(CoreRestError) -> TokenClaims {
        guard let token = terminal.token, !token.isEmpty else {
            throw CoreRestError(.invalidTokenSettings, "the terminal has no token")
        }
        let validation: TokenValidation
        do {
            validation = try await terminal.gateway.validateToken(token, options: terminal.requestOptions)
        } catch {
            throw restError(error, doing: "the token check")
        }
        switch validation {
        case .valid(let claims): return claims
        case .expired: throw CoreRestError(.tokenExpired, "the terminal's token expired; get a new one")
        case .invalid: throw CoreRestError(.invalidToken, "the gateway does not accept the terminal's token")
        }
    }

    /// The CoreError a gateway error stands for.
    static func restError(_ error: GatewayError, doing what: String) -> CoreRestError {
        let code: CoreError
        switch error.code {
        case .timeout: code = .timeout
        case .cancelled: code = .cancelled
        // The gateway failed, its ledger included (nothing was recorded): not the request.
        case .connectionLost, .serverError, .busy, .storage, .corruptLedger, .unsupportedLedgerVersion,
             .readOnlyStorage, .noDataDirectory, .storeMissing: code = .networkError
        case .notFound: code = .transactionNotFound
        case .alreadyReversed: code = .alreadyReversed
        case .notReversible: code = .notReversible
        case .notRefundable, .refundExceedsRemaining: code = .refundNotAllowed
        case .invalidRequest, .orderConflict: code = .invalidParameters
        case .sdkUpgradeRequired: code = .terminalSettings
        default: code = error.isCommunicationFailure ? .networkError : .invalidParameters
        }
        return CoreRestError(code, "\(what) failed: \(error)", gatewayError: error)
    }
}
