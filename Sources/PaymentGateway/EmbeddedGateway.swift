import BERTLV
public import PaymentRules
public import Foundation
import Synchronization
public import Timing
public import Storage
import Cryptography

/// The emulated acquirer, in-process: decides by ``TestTriggers``, checks the cryptograms of
/// cards whose issuer key it knows, keeps a durable ``Ledger``, writes signed webhooks to the
/// outbox, and injects ``GatewayFault``s on request.
///
/// Every wait (no answer, slow answer) runs on ``Configuration/clock``: tests inject a manual
/// clock and never sleep. A new `EmbeddedGateway` on the same data directory sees everything
/// an earlier one recorded.
public final class EmbeddedGateway: Gateway {
    public struct Configuration: Sendable {
        /// Where the ledger lives (created if needed).
        public var dataDirectory: String
        /// The clock of every timeout and delay: tapemu's one clock type (module `Timing`), made
        /// from the clock given to the initialiser (a `ManualClock` in tests).
        public var clock: MonotonicClock
        /// How long a caller waits when the request does not say (``GatewayRequestOptions/timeout``).
        public var requestTimeout: Duration
        /// The delay of amount trigger `93` (slow answer).
        public var slowAnswerDelay: Duration
        /// Wall-clock time, for timestamps, token expiry and webhook signatures.
        public var now: @Sendable () -> Date
        /// The issuer keys of the cards whose cryptograms are verified (default: tapemu's
        /// virtual cards; ``StaticIssuerKeyStore/empty`` verifies nothing).
        public var issuerKeys: any IssuerKeyStore
        public var cryptogramVerifier: any CryptogramVerifier
        /// SDK versions refused with `sdkUpgradeRequired` (besides those blocked in the ledger).
        public var blockedSDKVersions: Set<String>
        /// How long to wait for another process's lock on the ledger.
        public var busyTimeout: Duration
        /// How the ledger is opened: `.create` (a payment), `.existing`, `.readOnly` (queries).
        public var access: DataDirectoryLayout.Access

        public init(dataDirectory: String = DataDirectory.defaultPath(),
                    clock: any Clock<Duration> = ContinuousClock(),
                    requestTimeout: Duration = .seconds(30),
                    slowAnswerDelay: Duration = GatewayFault.defaultSlowDelay,
                    now: @escaping @Sendable () -> Date = { Date() },
                    issuerKeys: any IssuerKeyStore = VirtualCardIssuerKeys(),
                    cryptogramVerifier: any CryptogramVerifier = EMVCryptogramVerifier(),
                    blockedSDKVersions: Set<String> = [],
                    busyTimeout: Duration = .seconds(5),
                    access: DataDirectoryLayout.Access = .create) {
            self.dataDirectory = dataDirectory
            self.clock = MonotonicClock(clock)
            self.requestTimeout = requestTimeout
            self.slowAnswerDelay = slowAnswerDelay
            self.now = now
            self.issuerKeys = issuerKeys
            self.cryptogramVerifier = cryptogramVerifier
            self.blockedSDKVersions = blockedSDKVersions
            self.busyTimeout = busyTimeout
            self.access = access
        }
    }

    /// The documented test triggers (for `tapemu gateway --triggers`).
    public static let triggers: [TestTrigger] = TestTriggers.all

    public let configuration: Configuration
    /// The ledger: the SQLite file in ``Configuration/dataDirectory``, or the store given to
    /// ``init(configuration:ledger:)`` (e.g. PostgreSQL shared by several servers).
    public let ledger: any LedgerStore
    /// Concurrent authorisations share transactions and commits of ``ledger``
    /// (``SaleGroupCommit``, ``LedgerStore/storeSales(_:beforeCommit:)``), whatever its backend.
    let groupCommit = SaleGroupCommit()
    /// The terminals' tokens this gateway verified (``verifyToken(_:)``).
    private let verifiedTokens: VerifiedTokens
    private let armed = Mutex<[GatewayOperation: [GatewayFault]]>([:])

    /// Opens the ledger in the configuration's data directory.
    public init(configuration: Configuration) throws(GatewayError) {
        self.configuration = configuration
        ledger = try Ledger(directory: configuration.dataDirectory, busyTimeout: configuration.busyTimeout,
                            access: configuration.access)
        verifiedTokens = VerifiedTokens(secret: ledger.tokenSigningSecret)
    }

    /// A gateway over `ledger` (the configuration's data directory and access are not used).
    public init(configuration: Configuration, ledger: any LedgerStore) {
        self.configuration = configuration
        self.ledger = ledger
        verifiedTokens = VerifiedTokens(secret: ledger.tokenSigningSecret)
    }

    public convenience init(dataDirectory: String, clock: any Clock<Duration> = ContinuousClock(),
                            access: DataDirectoryLayout.Access = .create) throws(GatewayError) {
        try self.init(configuration: Configuration(dataDirectory: dataDirectory, clock: clock, access: access))
    }

    /// The key that signs this gateway's webhooks.
    public var webhookSecret: [UInt8] { ledger.webhookSecret }

    // MARK: Faults

    /// Arms `fault` for the next `count` requests of `operation` that do not bring their own
    /// (``GatewayRequestOptions/fault``). Armed faults replace the amount's trigger fault.
    public func armFault(_ fault: GatewayFault, for operation: GatewayOperation = .authorise, count: Int = 1) {
        armed.withLock { $0[operation, default: []] += Array(repeating: fault, count: max(0, count)) }
    }

    /// Drops every armed fault.
    public func clearArmedFaults() {
        armed.withLock { $0 = [:] }
    }

    private func takeArmed(_ operation: GatewayOperation) -> GatewayFault? {
        armed.withLock { a -> GatewayFault? in
            guard var queue = a[operation], !queue.isEmpty else { return nil }
            let f = queue.removeFirst()
            a[operation] = queue
            return f
        }
    }

    private func wait(_ duration: Duration, _ context: String) async throws(GatewayError) {
        do {
            try await configuration.clock.sleep(for: duration)
        } catch {
            throw GatewayError(.cancelled, "cancelled while waiting for the gateway (\(context))")
        }
    }

    /// One request over the emulated wire: the fault decides whether `body` runs (records) and
    /// what the caller gets. A lost or slow answer is lost or slow whatever it holds: a result,
    /// a decline or a refusal.
    private func exchange<T>(_ operation: GatewayOperation, options: GatewayRequestOptions,
                             triggerFault: GatewayFault? = nil,
                             _ body: () async throws(GatewayError) -> T) async throws(GatewayError) -> T {
        let fault = options.fault ?? takeArmed(operation) ?? triggerFault ?? .none
        let timeout = options.timeout ?? configuration.requestTimeout
        switch fault {
        case .noAnswer:
            try await wait(timeout, "no answer; nothing was recorded")
            throw GatewayError(.timeout, "no answer within \(timeout) (injected fault: the request never arrived)")
        case .serverError:
            throw GatewayError(.serverError, "the gateway answered HTTP 500 (injected fault: nothing was recorded)")
        case .none, .lostAnswer, .slow:
            break
        }
        if Task.isCancelled {
            throw GatewayError(.cancelled, "cancelled before the request was sent; nothing was recorded")
        }
        // The gateway handles the request; its answer (a result or a refusal) then meets the fault.
        let answer: Result<T, GatewayError>
        do throws(GatewayError) {
            answer = .success(try await body())
        } catch {
            answer = .failure(error)
        }
        switch fault {
        case .lostAnswer:
            throw GatewayError(.connectionLost,
                               "the connection dropped before the answer arrived (injected fault: the request was handled)")
        case .slow(let delay):
            if delay >= timeout {
                try await wait(timeout, "slow answer; the request was handled")
                throw GatewayError(.timeout, "no answer within \(timeout) (injected fault: slow answer, the request was handled)")
            }
            try await wait(delay, "slow answer; the request was handled")
        case .none, .noAnswer, .serverError:
            break
        }
        return try answer.get()
    }

    // MARK: Authorisation

    public func authorize(_ request: AuthorisationRequest,
                          options: GatewayRequestOptions) async throws(GatewayError) -> AuthorisationResponse {
        var triggerFault = request.amount > 0 ? TestTriggers.trigger(forAmount: request.amount)?.fault : nil
        if case .slow = triggerFault { triggerFault = .slow(configuration.slowAnswerDelay) }
        return try await exchange(.authorise, options: options, triggerFault: triggerFault) { () async throws(GatewayError) in
            try await record(request)
        }
    }

    /// The EMV data without what identifies the card or the cardholder (``SensitiveData``'s
    /// sensitive tags and the cardholder's name): never stored.
    static func redacted(_ nodes: [TLV]) -> [TLV] {
        nodes.compactMap { n -> TLV? in
            if SensitiveData.isSensitive(n.tag) || SensitiveData.isCardholderName(n.tag) { return nil }
            return n.isConstructed ? TLV(tag: n.tag, children: redacted(n.children)) : n
        }
    }

    /// Throws the `invalidRequest` that ``authorize(_:options:)`` would refuse `request` with for
    /// its shape (order id, amount, currency, callbackUrl, expiry, PSN, SDK version's length,
    /// EMV data), touching no ledger: the gateway service checks it before it takes an armed
    /// fault, which waits for a well-formed authorisation.
    public func checkShape(_ request: AuthorisationRequest) throws(GatewayError) {
        _ = try validate(request)
    }

    private func validate(_ r: AuthorisationRequest) throws(GatewayError) -> [TLV] {
        func invalid(_ reason: String) -> GatewayError { GatewayError(.invalidRequest, reason) }
        guard !r.orderId.isEmpty else { throw invalid("the orderId is empty") }
        guard OrderID.isValid(r.orderId) else { throw invalid("the orderId must be \(OrderID.rule)") }
        guard PaymentAmount.isValid(r.amount) else {
            throw invalid(r.amount <= 0 ? "the amount must be more than 0 (got \(r.amount))" : "the amount does not fit 12 digits")
        }
        guard CurrencyCode.isCanonical(r.currency) else {
            throw invalid("the currency must be an ISO 4217 code of three upper-case letters")
        }
        if let url = r.callbackUrl, !CallbackURL.isValid(url) {
            throw invalid("the callbackUrl must be an http or https URL with a host, at most \(CallbackURL.maximumLength) bytes, without spaces or control characters")
        }
        if let e = r.card.expiry {
            guard e.utf8.count == 4, e.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let mm = Int(e.suffix(2)), (1...12).contains(mm) else {
                throw invalid("the card expiry must be YYMM")
            }
        }
        guard r.card.panSequenceNumber <= 99 else { throw invalid("the PAN sequence number must be 0 to 99") }
        if let v = r.sdkVersion, v.utf8.count > 64 { throw invalid("the SDK version string is too long") }
        guard r.card.emvData.count <= 4096 else { throw invalid("more than 4096 bytes of EMV data") }
        let emv: [TLV]
        do {
            emv = try BERTLV.parse(r.card.emvData)
        } catch {
            throw invalid("the EMV data is not BER-TLV: \(error.reason)")
        }
        if let amountTLV = emv.find(.amountAuthorised) {
            guard let v = BCD.value(amountTLV.value), v == UInt64(r.amount) else {
                throw invalid("the EMV amount (9F02) differs from the requested amount")
            }
        }
        if let currencyTLV = emv.find(.transactionCurrencyCode), let known = ISOCodes.currency(code: r.currency) {
            guard let v = BCD.value(currencyTLV.value), v == UInt64(known.numeric) else {
                throw invalid("the EMV currency (5F2A) differs from the requested currency \(r.currency)")
            }
        }
        return emv
    }

    private struct Decision {
        var status: AuthorisationStatus
        var reason: DeclineReason
        var cryptogram: CryptogramCheck
    }

    /// The issuer's decision, in the documented order (see ``TestTriggers``).
    private func decide(_ r: AuthorisationRequest, emv: [TLV]) -> Decision {
        var check = CryptogramCheck.unverified
        // A card keyed in by the merchant's backend brings no cryptogram: nothing to check.
        if r.cardPresent,
           let key = configuration.issuerKeys.issuerKey(for: r.card.pan, panSequenceNumber: r.card.panSequenceNumber) {
            check = configuration.cryptogramVerifier.verify(issuerKey: key, pan: r.card.pan,
                                                            panSequenceNumber: r.card.panSequenceNumber, emvData: emv)
                ? .verified : .failed
        }
        func decline(_ reason: DeclineReason) -> Decision { Decision(status: .declined, reason: reason, cryptogram: check) }
        if check == .failed { return decline(.cryptogramFailed) }
        if let cid = emv.find(.cryptogramInformationData)?.value.first, cid & 0xC0 == 0x00 {
            return decline(.cardDeclinedOffline)
        }
        if !r.card.pan.isLuhnValid { return decline(.invalidCardNumber) }
        if let t = TestTriggers.trigger(forPAN: r.card.pan.digits), let reason = t.decline { return decline(reason) }
        if let t = TestTriggers.trigger(forAmount: r.amount), let reason = t.decline { return decline(reason) }
        return Decision(status: .approved, reason: .approved, cryptogram: check)
    }

    /// Group commits of sales so far in this process: batches, sales in them, the largest batch.
    public var groupCommitStatistics: (batches: Int, sales: Int, largest: Int) { groupCommit.statistics }

    /// Calls `hook` with the orderIds of every group commit after its sales were written and
    /// before its COMMIT, on either backend (the gateway service's `kill-mid-batch` fault: the
    /// process dies there); nil removes it.
    public func setBeforeBatchCommit(_ hook: (@Sendable ([String]) -> Void)?) {
        groupCommit.setBeforeCommit(hook)
    }

    /// Validates and decides alone, then records in the ledger's next group commit
    /// (``SaleGroupCommit``): concurrent authorisations share one transaction and one durable
    /// commit, each answered after that commit exactly as if it had been alone.
    private func record(_ r: AuthorisationRequest) async throws(GatewayError) -> AuthorisationResponse {
        let emv = try validate(r)
        if let v = r.sdkVersion { try requireSupported(sdkVersion: v) }
        let decision = decide(r, emv: emv)
        let now = configuration.now()
        let pan = r.card.pan
        let sale = Payment(
            paymentId: Encoding.paymentId(), kind: .sale, orderId: r.orderId, parentPaymentId: nil, amount: r.amount,
            currency: r.currency, status: decision.status, statusCode: decision.reason.statusCode,
            statusMessage: decision.reason.statusMessage,
            authorisationCode: decision.status == .approved ? Encoding.authorisationCode() : nil,
            uniqueRef: Encoding.uniqueRef(), cardBrand: r.card.brand ?? CardBrand(pan: pan), last4: pan.last4,
            maskedPAN: pan.masked, expiry: r.card.expiry, panSequenceNumber: r.card.panSequenceNumber,
            emvData: Self.redacted(emv).encoded, cryptogram: decision.cryptogram, callbackUrl: r.callbackUrl,
            accountId: r.accountId, sdkVersion: r.sdkVersion, reversed: false, refundedAmount: 0,
            createdAt: now, updatedAt: now, captured: r.capture)
        let o = try await groupCommit.record(sale, fingerprint: ledger.cardFingerprint(of: pan.digits),
                                             claim: r.terminalClaim, in: ledger)
        return AuthorisationResponse(payment: o.payment, isReplay: o.isReplay)
    }

    private func requireSupported(sdkVersion v: String) throws(GatewayError) {
        var blocked = configuration.blockedSDKVersions.contains(v)
        if !blocked { blocked = try ledger.blockedSDKVersions().contains(v) }
        if blocked {
            throw GatewayError(.sdkUpgradeRequired, "SDK version \(v) is blocked by the gateway; update the SDK")
        }
    }

    // MARK: Queries, reversals, refunds

    public func charges(orderId: String, options: GatewayRequestOptions) async throws(GatewayError) -> [Payment] {
        try await exchange(.charges, options: options) { () throws(GatewayError) in
            guard !orderId.isEmpty else { throw GatewayError(.invalidRequest, "the orderId is empty") }
            return try ledger.sales(orderId: orderId)
        }
    }

    public func transactionList(_ filter: TransactionFilter,
                                options: GatewayRequestOptions) async throws(GatewayError) -> [TransactionSummary] {
        try await exchange(.transactionList, options: options) { () throws(GatewayError) in
            guard filter.orderId != nil || filter.panLastFour != nil else {
                throw GatewayError(.invalidRequest, "a transaction list needs an orderId or the card's last four digits")
            }
            if let o = filter.orderId, o.isEmpty { throw GatewayError(.invalidRequest, "the orderId is empty") }
            if let l = filter.panLastFour, l.utf8.count != 4 || !l.allSatisfy({ $0.isASCII && $0.isNumber }) {
                throw GatewayError(.invalidRequest, "panLastFour must be four digits")
            }
            return try ledger.transactions(filter).map(TransactionSummary.init)
        }
    }

    public func reverse(uniqueRef: String, options: GatewayRequestOptions) async throws(GatewayError) -> ReversalResponse {
        try await exchange(.reversal, options: options) { () throws(GatewayError) in
            guard !uniqueRef.isEmpty else { throw GatewayError(.invalidRequest, "the uniqueRef is empty") }
            let (sale, reversal) = try ledger.storeReversal(uniqueRef: uniqueRef, at: configuration.now())
            return ReversalResponse(uniqueRef: reversal.uniqueRef, originalUniqueRef: sale.uniqueRef,
                                    paymentId: sale.paymentId, orderId: sale.orderId, amount: reversal.amount,
                                    currency: sale.currency, statusCode: reversal.statusCode,
                                    statusMessage: reversal.statusMessage)
        }
    }

    public func refund(uniqueRef: String, amount: Int?,
                       options: GatewayRequestOptions) async throws(GatewayError) -> RefundResponse {
        try await refund(uniqueRef: uniqueRef, amount: amount, reason: nil, options: options)
    }

    /// MONEI's cancel (`POST /v1/payments/{id}/cancel`): only an AUTHORIZED payment
    /// (``LedgerStore/storeCancel(uniqueRef:reason:at:)``). Returns the sale as it now stands.
    public func cancel(uniqueRef: String, reason: String?,
                       options: GatewayRequestOptions) async throws(GatewayError) -> Payment {
        try await exchange(.reversal, options: options) { () throws(GatewayError) in
            guard !uniqueRef.isEmpty else { throw GatewayError(.invalidRequest, "the uniqueRef is empty") }
            return try ledger.storeCancel(uniqueRef: uniqueRef, reason: reason, at: configuration.now()).sale
        }
    }

    /// MONEI's capture (`POST /v1/payments/{id}/capture`): an AUTHORIZED payment, in full
    /// (``LedgerStore/storeCapture(uniqueRef:amount:at:)``). Returns the sale as it now stands.
    public func capture(uniqueRef: String, amount: Int?,
                        options: GatewayRequestOptions) async throws(GatewayError) -> Payment {
        try await exchange(.capture, options: options) { () throws(GatewayError) in
            guard !uniqueRef.isEmpty else { throw GatewayError(.invalidRequest, "the uniqueRef is empty") }
            return try ledger.storeCapture(uniqueRef: uniqueRef, amount: amount, at: configuration.now())
        }
    }

    /// A referenced refund whose `reason` (MONEI's `refundReason`) the sale keeps.
    public func refund(uniqueRef: String, amount: Int?, reason: String?,
                       options: GatewayRequestOptions) async throws(GatewayError) -> RefundResponse {
        try await exchange(.refund, options: options) { () throws(GatewayError) in
            guard !uniqueRef.isEmpty else { throw GatewayError(.invalidRequest, "the uniqueRef is empty") }
            // A malformed request, on every route alike (terminal, MONEI): not "more than is left".
            // Past 12 digits no sale can have it to give back: malformed (400), not "more than
            // is left" (422), the same rule as an authorisation's amount.
            if let amount, !PaymentAmount.isValid(amount) {
                throw GatewayError(.invalidRequest, amount <= 0
                    ? "the refund amount must be a positive number of minor units (got \(amount))"
                    : "the refund amount does not fit 12 digits (at most \(EMVAmount.maximum) minor units)")
            }
            let (sale, refund) = try ledger.storeRefund(uniqueRef: uniqueRef, amount: amount, reason: reason,
                                                        at: configuration.now())
            return RefundResponse(uniqueRef: refund.uniqueRef, refundPaymentId: refund.paymentId,
                                  originalUniqueRef: sale.uniqueRef, paymentId: sale.paymentId, orderId: sale.orderId,
                                  amount: refund.amount, currency: sale.currency, refundedAmount: sale.refundedAmount,
                                  remainingAmount: sale.remainingAmount, statusCode: refund.statusCode,
                                  statusMessage: refund.statusMessage)
        }
    }

    // MARK: Tokens, SDK versions, terms

    /// Issues a signed token for `prepare(token:)` that expires `ttl` from now (a ttl of 0 or
    /// less gives a token that is already expired, for tests).
    /// `pointOfSaleId` names the terminal it is for (nil: one is made up, `pos_<16 hex>`, as
    /// MONEI assigns one); `storeId` its store.
    public func issueToken(accountId: String, mode: TokenMode = .test, ttl: Duration = .seconds(3600),
                           pointOfSaleId: String? = nil, storeId: String? = nil) -> String {
        let now = Int64(configuration.now().timeIntervalSince1970.rounded(.down))
        return TokenCodec.issue(accountId: accountId, mode: mode, issuedAt: now,
                                expiresAt: now + ttl.components.seconds,
                                pointOfSaleId: pointOfSaleId ?? "pos_" + Encoding.hex(Crypto.randomBytes(8)),
                                storeId: storeId, secret: ledger.tokenSigningSecret)
    }

    /// What `token` says, checked here and now: no request, no fault (the gateway service's
    /// check of a terminal's credential).
    public func verifyToken(_ token: String) -> TokenValidation {
        verifiedTokens.validate(token, now: Int64(configuration.now().timeIntervalSince1970.rounded(.down)))
    }

    public func validateToken(_ token: String, options: GatewayRequestOptions) async throws(GatewayError) -> TokenValidation {
        try await exchange(.validateToken, options: options) { () throws(GatewayError) in
            TokenCodec.validate(token, secret: ledger.tokenSigningSecret,
                                now: Int64(configuration.now().timeIntervalSince1970.rounded(.down)))
        }
    }

    public func checkSDKVersion(_ version: String, options: GatewayRequestOptions) async throws(GatewayError) {
        try await exchange(.checkSDKVersion, options: options) { () throws(GatewayError) in
            try requireSupported(sdkVersion: version)
        }
    }

    /// Blocks an SDK version in the ledger (every later run sees it).
    public func blockSDKVersion(_ version: String) throws(GatewayError) { try ledger.blockSDKVersion(version) }
    public func unblockSDKVersion(_ version: String) throws(GatewayError) { try ledger.unblockSDKVersion(version) }

    public func termsAccepted(accountId: String, options: GatewayRequestOptions) async throws(GatewayError) -> Bool {
        try await exchange(.terms, options: options) { () throws(GatewayError) in
            try ledger.termsAccepted(accountId: accountId)
        }
    }

    public func setTermsAccepted(_ accepted: Bool, accountId: String,
                                 options: GatewayRequestOptions) async throws(GatewayError) {
        try await exchange(.terms, options: options) { () throws(GatewayError) in
            try ledger.setTermsAccepted(accepted, accountId: accountId, at: configuration.now())
        }
    }

    // MARK: Outbox

    /// The webhook outbox (see ``Ledger/webhooks(orderId:pendingOnly:)``).
    public func webhooks(orderId: String? = nil, pendingOnly: Bool = false) throws(GatewayError) -> [Webhook] {
        try ledger.webhooks(orderId: orderId, pendingOnly: pendingOnly)
    }
}

extension DeclineReason {
    /// Not a decline: the approval's code and message.
    public static let approved = DeclineReason(statusCode: "00", statusMessage: "Approved")
    /// The PAN fails the Luhn check.
    public static let invalidCardNumber = DeclineReason(statusCode: "14", statusMessage: "Invalid card number")
}
