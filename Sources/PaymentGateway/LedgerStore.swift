public import Foundation
import Cryptography

/// Where a gateway keeps its ledger: the embedded SQLite file (``Ledger``, the default) or a
/// database server several gateway processes share (`PostgresLedger`). Every backend gives the
/// same guarantees:
///
/// - one sale per orderId, whoever races on it (a replay returns the stored sale; a mismatch
///   throws ``GatewayError/Code/orderConflict``);
/// - a sale reversed at most once, refunds never beyond the remainder;
/// - the webhook of a state change written in the same transaction as the change;
/// - a webhook claimed by one deliverer at a time under a lease, claimed again once the lease
///   ran out (at least once);
/// - a write that throws recorded nothing, except ``GatewayError/Code/serverError`` from a
///   write whose commit was under way when the database went away: then it may have been
///   recorded (the caller's outcome is unknown; look the order up).
///
/// Calls block their thread (a lock, a disk flush, a network round trip): run them off
/// Swift's cooperative pool.
public protocol LedgerStore: Sendable {
    /// The key that signs webhooks (`MONEI-Signature`): the UTF-8 bytes of ``merchantAPIKey``,
    /// as MONEI signs with the account's API key (ledger schema version 3 on; an unmigrated
    /// ledger opened read only, which has no API key yet, gives ``legacyWebhookSecret``).
    var webhookSecret: [UInt8] { get }
    /// The merchant API key (``MerchantAPIKey``), made once per ledger and kept in it.
    var merchantAPIKey: String { get }
    /// The 32-byte secret that signed webhooks before version 3 (`tapemu gateway secret
    /// --legacy`): only the stored signatures of webhooks an earlier tapemu recorded use it.
    var legacyWebhookSecret: [UInt8] { get }
    /// The key that signs tokens.
    var tokenSigningSecret: [UInt8] { get }
    /// A keyed fingerprint of a PAN (never the PAN itself).
    func cardFingerprint(of digits: String) -> String
    /// Where the ledger is, for messages (never a password).
    var location: String { get }

    // Writes: the gateway's decisions.
    func storeSale(_ sale: Payment, fingerprint: String) throws(GatewayError) -> (Payment, isReplay: Bool)
    /// Group commit (``SaleGroupCommit``): records `sales` in ONE transaction and one commit,
    /// each exactly as ``storeSale(_:fingerprint:)`` would one after another in this order (a
    /// later sale of an orderId met earlier in the batch is a replay or an `orderConflict`).
    /// Each sale runs in its own savepoint: one whose write fails records nothing and the
    /// others go on. Returns one result per sale, in order, only once the commit is over;
    /// when the transaction fails as a whole (cannot begin, a failure that ends it, a refused
    /// or broken COMMIT), every sale gets that error, and it says what ``storeSale(_:fingerprint:)``'s
    /// would (nothing recorded, or `serverError`: maybe recorded). `beforeCommit` is called
    /// with the batch's orderIds after every sale was written and before COMMIT.
    ///
    /// A sale with a `claim` (a terminal's) first claims its orderId in its own savepoint, by
    /// ``claimOrder(_:by:tokenId:at:)``'s rule: refused (``GatewayError/Code/orderNotOwned``,
    /// nothing of that sale written) unless the order is that terminal's or nobody's; the claim
    /// is kept only with the sale's answer (a sale that fails takes its claim back with it), so
    /// the claim and the charge are durable together or not at all.
    func storeSales(_ sales: [(sale: Payment, fingerprint: String, claim: TerminalClaim?)],
                    beforeCommit: (@Sendable ([String]) -> Void)?) -> [Result<SaleOutcome, GatewayError>]
    func storeReversal(uniqueRef: String, at now: Date) throws(GatewayError) -> (sale: Payment, reversal: Payment)
    /// A refund of `amount` (nil: all that is left); `reason` (MONEI's `refundReason`) becomes
    /// the sale's ``Payment/lastRefundReason``.
    func storeRefund(uniqueRef: String, amount: Int?, reason: String?, at now: Date) throws(GatewayError) -> (sale: Payment, refund: Payment)
    /// MONEI's cancel: only an AUTHORIZED sale (else ``GatewayError/Code/notCancelable``, or
    /// `alreadyReversed` for one cancelled before); a reversal row, the sale CANCELED with its
    /// ``Payment/cancellationReason``, webhook `canceled`.
    func storeCancel(uniqueRef: String, reason: String?, at now: Date) throws(GatewayError) -> (sale: Payment, reversal: Payment)
    /// MONEI's capture: only an AUTHORIZED sale, in full (`amount` nil or the authorised
    /// amount; else ``GatewayError/Code/notCapturable``); the sale SUCCEEDED, webhook `captured`.
    func storeCapture(uniqueRef: String, amount: Int?, at now: Date) throws(GatewayError) -> Payment

    // Reads.
    func payment(paymentId: String) throws(GatewayError) -> Payment?
    func payment(uniqueRef: String) throws(GatewayError) -> Payment?
    func sales(orderId: String) throws(GatewayError) -> [Payment]
    func allPayments() throws(GatewayError) -> [Payment]
    func saleCount(orderId: String) throws(GatewayError) -> Int
    func transactions(_ filter: TransactionFilter) throws(GatewayError) -> [Payment]
    func payments(orderId: String) throws(GatewayError) -> [Payment]
    func children(ofPaymentId paymentId: String) throws(GatewayError) -> [Payment]
    func recentSales(limit: Int) throws(GatewayError) -> [Payment]

    // The webhook outbox and its delivery.
    func webhooks(orderId: String?, pendingOnly: Bool) throws(GatewayError) -> [Webhook]
    func webhookDeliveries(orderId: String?, paymentId: String?) throws(GatewayError) -> [WebhookDelivery]
    func webhookAttempts(webhookId: Int64) throws(GatewayError) -> [WebhookAttempt]
    func claimDueWebhooks(now: Date, owner: String, lease: Duration, limit: Int,
                          firstAttemptDelay: Duration) throws(GatewayError) -> [Webhook]
    func nextWebhookDue(firstAttemptDelay: Duration) throws(GatewayError) -> Date?
    /// Extends `owner`'s lease on webhook `id` to `until` (a deliverer about to send it after
    /// others of its batch); false when `owner` no longer holds it — its lease ran out and
    /// another deliverer claimed it, or it was delivered or given up meanwhile: then it must
    /// not be sent. Until `now` or earlier gives the webhook up to any deliverer at once.
    func renewWebhookLease(id: Int64, owner: String, until: Date) throws(GatewayError) -> Bool
    func recordWebhookAttempt(_ a: WebhookAttemptRecord) throws(GatewayError)
    func markWebhookDelivered(id: Int64, at date: Date) throws(GatewayError)
    func recordWebhookFailure(id: Int64, error: String) throws(GatewayError)

    // Which terminal sent each order (the gateway service's own-attempts rule).
    /// Claims `orderId` for `terminal` in a transaction of its own: ``OrderClaim/mine`` when it
    /// was free or already this terminal's; ``OrderClaim/otherTerminal`` when another terminal
    /// claimed it first; ``OrderClaim/unowned`` when payments of it exist that no terminal
    /// claimed. A claim is never removed.
    func claimOrder(_ orderId: String, by terminal: TerminalIdentity, tokenId: String,
                    at now: Date) throws(GatewayError) -> OrderClaim
    /// The terminal that claimed `orderId`, if any.
    func orderTerminal(_ orderId: String) throws(GatewayError) -> TerminalIdentity?

    // Accounts, SDK versions, named secrets.
    func termsAccepted(accountId: String) throws(GatewayError) -> Bool
    func setTermsAccepted(_ accepted: Bool, accountId: String, at date: Date) throws(GatewayError)
    func blockedSDKVersions() throws(GatewayError) -> Set<String>
    func blockSDKVersion(_ version: String) throws(GatewayError)
    func unblockSDKVersion(_ version: String) throws(GatewayError)
    func secret(named name: String) throws(GatewayError) -> [UInt8]

    // Request log (``RequestLogEntry``): bounded, never money.
    /// Appends `entries` in one transaction, in order, and prunes the oldest rows beyond the
    /// newest `bound` (``RequestLogEntry/defaultBound``). A failure records none of them.
    func appendRequestLog(_ entries: [RequestLogEntry], keeping bound: Int) throws(GatewayError)
    /// The lines after cursor `id` (0: from the oldest kept), oldest first, at most `limit`;
    /// only those at or after `since` when given. A ledger whose schema predates the log
    /// (opened read only, not migrated yet) has none.
    func requestLog(after id: Int64, since: Date?, limit: Int) throws(GatewayError) -> [RequestLogEntry]
}

extension LedgerStore {
    /// Sales without a terminal's claim (``storeSales(_:beforeCommit:)``).
    public func storeSales(_ sales: [(sale: Payment, fingerprint: String)],
                           beforeCommit: (@Sendable ([String]) -> Void)?) -> [Result<SaleOutcome, GatewayError>] {
        storeSales(sales.map { ($0.sale, $0.fingerprint, nil) }, beforeCommit: beforeCommit)
    }

    // The requirements' defaults (a protocol requirement has none of its own).
    public func webhooks() throws(GatewayError) -> [Webhook] { try webhooks(orderId: nil, pendingOnly: false) }
    public func webhooks(orderId: String?) throws(GatewayError) -> [Webhook] {
        try webhooks(orderId: orderId, pendingOnly: false)
    }
    public func webhooks(pendingOnly: Bool) throws(GatewayError) -> [Webhook] {
        try webhooks(orderId: nil, pendingOnly: pendingOnly)
    }
    public func webhookDeliveries() throws(GatewayError) -> [WebhookDelivery] {
        try webhookDeliveries(orderId: nil, paymentId: nil)
    }
    public func webhookDeliveries(orderId: String?) throws(GatewayError) -> [WebhookDelivery] {
        try webhookDeliveries(orderId: orderId, paymentId: nil)
    }
    public func webhookDeliveries(paymentId: String?) throws(GatewayError) -> [WebhookDelivery] {
        try webhookDeliveries(orderId: nil, paymentId: paymentId)
    }
    public func claimDueWebhooks(now: Date, owner: String, lease: Duration, limit: Int) throws(GatewayError) -> [Webhook] {
        try claimDueWebhooks(now: now, owner: owner, lease: lease, limit: limit, firstAttemptDelay: .zero)
    }
    public func nextWebhookDue() throws(GatewayError) -> Date? { try nextWebhookDue(firstAttemptDelay: .zero) }
    public func appendRequestLog(_ entries: [RequestLogEntry]) throws(GatewayError) {
        try appendRequestLog(entries, keeping: RequestLogEntry.defaultBound)
    }
    public func storeRefund(uniqueRef: String, amount: Int?, at now: Date) throws(GatewayError) -> (sale: Payment, refund: Payment) {
        try storeRefund(uniqueRef: uniqueRef, amount: amount, reason: nil, at: now)
    }
}

/// The SQLite ledger as a ``LedgerStore``.
extension Ledger: LedgerStore {
    public var tokenSigningSecret: [UInt8] { tokenSecret }
    public func cardFingerprint(of digits: String) -> String { fingerprint(of: digits) }
    public var location: String { path }
    public func storeSale(_ sale: Payment, fingerprint: String) throws(GatewayError) -> (Payment, isReplay: Bool) {
        try recordSale(sale, fingerprint: fingerprint)
    }
    public func storeSales(_ sales: [(sale: Payment, fingerprint: String, claim: TerminalClaim?)],
                           beforeCommit: (@Sendable ([String]) -> Void)?) -> [Result<SaleOutcome, GatewayError>] {
        recordSales(sales, beforeCommit: beforeCommit)
    }
    public func storeReversal(uniqueRef: String, at now: Date) throws(GatewayError) -> (sale: Payment, reversal: Payment) {
        try recordReversal(uniqueRef: uniqueRef, at: now)
    }
    public func storeRefund(uniqueRef: String, amount: Int?, reason: String?, at now: Date) throws(GatewayError) -> (sale: Payment, refund: Payment) {
        try recordRefund(uniqueRef: uniqueRef, amount: amount, reason: reason, at: now)
    }
    public func storeCancel(uniqueRef: String, reason: String?, at now: Date) throws(GatewayError) -> (sale: Payment, reversal: Payment) {
        try recordCancel(uniqueRef: uniqueRef, reason: reason, at: now)
    }
    public func storeCapture(uniqueRef: String, amount: Int?, at now: Date) throws(GatewayError) -> Payment {
        try recordCapture(uniqueRef: uniqueRef, amount: amount, at: now)
    }
}

/// The rules every backend applies the same way, and the rows it builds: shared so a new
/// backend decides exactly as the SQLite ledger does.
public enum LedgerRules {
    /// The ledger's own settings (never handed out by ``LedgerStore/secret(named:)``).
    public static let reservedSettings: Set<String> = ["webhook_secret", "token_secret", "fingerprint_key",
                                                       "data_directory_id"]

    /// Throws `orderConflict` when a replayed sale differs from the stored one.
    public static func checkReplay(stored: Payment, storedFingerprint: String, sale: Payment,
                                   fingerprint: String) throws(GatewayError) {
        var differences: [String] = []
        if stored.amount != sale.amount { differences.append("amount") }
        if stored.currency != sale.currency { differences.append("currency") }
        if storedFingerprint != fingerprint { differences.append("card") }
        // A sale (captured at once) is not answered with an authorisation still waiting for its
        // capture: that answer would say approved for funds only held (a terminal's APPROVED, a
        // CoreAPI `A`), which the merchant's cancel then releases.
        if sale.captured && stored.state == .authorized { differences.append("transactionType (it is AUTHORIZED, not captured)") }
        guard differences.isEmpty else {
            throw GatewayError(.orderConflict,
                               "order \(sale.orderId) already exists with a different \(differences.joined(separator: ", ")); nothing was charged")
        }
    }

    /// Throws the refusal of reversing `sale` (looked up by `uniqueRef`), if any.
    public static func checkReversible(_ sale: Payment, uniqueRef: String) throws(GatewayError) {
        guard sale.kind == .sale else {
            throw GatewayError(.notReversible, "\(uniqueRef) is a \(sale.kind.rawValue), not a sale")
        }
        guard !sale.reversed else {
            throw GatewayError(.alreadyReversed, "\(uniqueRef) was reversed before; it is not reversed again")
        }
        guard sale.status == .approved else {
            throw GatewayError(.notReversible, "\(uniqueRef) was declined; there is nothing to reverse")
        }
        guard sale.refundedAmount == 0 else {
            throw GatewayError(.notReversible, "\(uniqueRef) was refunded in part or in full; refund the rest instead")
        }
    }

    /// The amount a refund of `amount` (nil: all that is left) takes, or its refusal.
    public static func refundValue(_ sale: Payment, uniqueRef: String, amount: Int?) throws(GatewayError) -> Int {
        guard sale.kind == .sale else {
            throw GatewayError(.notRefundable, "Refund not allowed: \(uniqueRef) is a \(sale.kind.rawValue), not a sale")
        }
        guard sale.status == .approved else {
            throw GatewayError(.notRefundable, "Refund not allowed: \(uniqueRef) was declined; there is nothing to refund")
        }
        guard !sale.reversed else {
            throw GatewayError(.notRefundable, "Refund not allowed: \(uniqueRef) was reversed; there is nothing to refund")
        }
        guard sale.captured else {
            throw GatewayError(.notRefundable, "Refund not allowed: \(uniqueRef) is authorised only, nothing was captured: capture it or cancel it")
        }
        let remaining = sale.remainingAmount
        let value = amount ?? remaining
        guard value > 0, value <= remaining else {
            let r = remaining == 0 ? MoneiStatusCode.Refusal.fullyRefunded : MoneiStatusCode.Refusal.refundExceeds
            throw GatewayError(.refundExceedsRemaining,
                               "\(r.message): a refund of \(value) but \(remaining) of \(sale.amount) is left to refund")
        }
        return value
    }

    /// Throws the refusal of MONEI's cancel of `sale`, if any: only AUTHORIZED is cancelled
    /// (`notCancelable`, MONEI's 422, also for one cancelled before).
    public static func checkCancelable(_ sale: Payment, id: String) throws(GatewayError) {
        guard sale.kind == .sale else { throw GatewayError(.notCancelable, "\(id) is a \(sale.kind.rawValue), not a payment") }
        guard !sale.reversed else {
            throw GatewayError(.notCancelable, "\(MoneiStatusCode.Refusal.alreadyCanceled.message): \(id) was cancelled (or reversed) before")
        }
        guard sale.state == .authorized else {
            throw GatewayError(.notCancelable, "\(MoneiStatusCode.Refusal.notPreAuthorizedCancel.message): \(id) is \(MoneiStatus.of(sale)); only an AUTHORIZED payment is cancelled (refund a captured one)")
        }
    }

    /// Throws the refusal of MONEI's capture of `amount` of `sale`, if any.
    public static func checkCapturable(_ sale: Payment, id: String, amount: Int?) throws(GatewayError) {
        guard sale.kind == .sale, sale.state == .authorized else {
            let r: (code: String, message: String)
            switch sale.state {
            case .reversed: r = MoneiStatusCode.Refusal.alreadyCanceled
            case .approved, .refunded, .partiallyRefunded: r = MoneiStatusCode.Refusal.alreadyCaptured
            default: r = MoneiStatusCode.Refusal.notPreAuthorizedCapture
            }
            throw GatewayError(.notCapturable, "\(r.message): \(id) is \(MoneiStatus.of(sale)); only an AUTHORIZED payment is captured")
        }
        if let amount {
            guard amount > 0 else { throw GatewayError(.invalidRequest, "the capture amount must be a positive number of minor units (got \(amount))") }
            guard amount <= sale.amount else {
                throw GatewayError(.notCapturable, "\(MoneiStatusCode.Refusal.captureExceeds.message): \(amount) of \(sale.amount) authorised")
            }
            guard amount == sale.amount else {
                throw GatewayError(.notCapturable, "\(MoneiStatusCode.Refusal.partialCapture.message): tapemu captures the whole \(sale.amount) authorised, not \(amount)")
            }
        }
    }

    /// The reversal or refund row of `sale`.
    public static func child(of sale: Payment, kind: TransactionKind, amount: Int, message: String, at now: Date) -> Payment {
        Payment(paymentId: Encoding.paymentId(), kind: kind, orderId: sale.orderId, parentPaymentId: sale.paymentId,
                amount: amount, currency: sale.currency, status: .approved, statusCode: "00", statusMessage: message,
                authorisationCode: Encoding.authorisationCode(), uniqueRef: Encoding.uniqueRef(),
                cardBrand: sale.cardBrand, last4: sale.last4, maskedPAN: sale.maskedPAN, expiry: sale.expiry,
                panSequenceNumber: sale.panSequenceNumber, emvData: [], cryptogram: sale.cryptogram,
                callbackUrl: sale.callbackUrl, accountId: sale.accountId, sdkVersion: sale.sdkVersion,
                reversed: false, refundedAmount: 0, createdAt: now, updatedAt: now)
    }

    /// The body and `MONEI-Signature` header of the webhook announcing `sale`'s new state.
    public static func webhookMessage(for sale: Payment, event: WebhookEvent, at now: Date,
                                      secret: [UInt8]) -> (body: String, signature: String) {
        let body = MoneiPayment(webhookOf: sale, event: event).json()
        let t = Int64(now.timeIntervalSince1970.rounded(.down))
        return (body, WebhookSignature.header(body: Array(body.utf8), secret: secret, timestamp: t))
    }

    public static func millis(_ d: Date) -> Int64 { Int64((d.timeIntervalSince1970 * 1000).rounded(.down)) }
    public static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(ms) / 1000) }
    public static func millis(_ d: Duration) -> Int64 {
        d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
    }
    public static func hex(_ bytes: [UInt8]) -> String { Encoding.hex(bytes) }
    public static func unhex(_ text: String) -> [UInt8]? { Encoding.unhex(text) }
    public static func randomSecret() -> [UInt8] { Crypto.randomBytes(32) }
    public static func hmac(key: [UInt8], _ digits: String) -> String {
        Encoding.hex(Crypto.hmacSHA256(key: key, message: Array(digits.utf8)))
    }

    public static func webhook(id: Int64, paymentId: String, orderId: String, event: WebhookEvent, url: String,
                               body: String, signature: String, createdAt: Date, deliveredAt: Date?, attempts: Int,
                               lastError: String?) -> Webhook {
        Webhook(id: id, paymentId: paymentId, orderId: orderId, event: event, url: url, body: body, signature: signature,
                createdAt: createdAt, deliveredAt: deliveredAt, attempts: attempts, lastError: lastError)
    }

    public static func delivery(_ w: Webhook, nextAttemptAt: Date?, lastAttemptAt: Date?, lastStatus: Int?,
                                gaveUpAt: Date?) -> WebhookDelivery {
        WebhookDelivery(webhook: w, nextAttemptAt: nextAttemptAt, lastAttemptAt: lastAttemptAt, lastStatus: lastStatus,
                        gaveUpAt: gaveUpAt)
    }

    public static func attempt(webhookId: Int64, attempt: Int, startedAt: Date, finishedAt: Date, status: Int?,
                               error: String?, nextAttemptAt: Date?, fault: String?) -> WebhookAttempt {
        WebhookAttempt(webhookId: webhookId, attempt: attempt, startedAt: startedAt, finishedAt: finishedAt,
                       status: status, error: error, nextAttemptAt: nextAttemptAt, fault: fault)
    }
}
