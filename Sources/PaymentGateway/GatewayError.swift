/// An error of the gateway layer: a request the gateway refused, a ledger that cannot be used,
/// or a transport fault between the caller and the gateway.
///
/// Tests compare ``code`` only. The ``reason`` is for people; it never holds a full PAN.
///
/// For the payment flow: once an authorisation has started to leave (the submission point),
/// *every* error from ``Gateway/authorize(_:options:)`` means the outcome is unknown, whatever
/// its code. ``isCommunicationFailure`` marks the transport faults (``Code/timeout``,
/// ``Code/connectionLost``, ``Code/serverError``, ``Code/cancelled``): the request may or may
/// not have been recorded, so look the order up (``Gateway/charges(orderId:options:)``,
/// ``Gateway/transactionList(_:options:)``) instead of retrying.
public struct GatewayError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. Open: new codes may be added, so switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        // Refusals: the gateway answered and recorded nothing.

        /// The request is malformed (amount ≤ 0, empty orderId, bad currency, unreadable EMV
        /// data, an EMV amount that differs from the request, …). Nothing was recorded.
        /// Do not retry unchanged.
        public static let invalidRequest = Code("invalidRequest")
        /// The gateway blocks the SDK version the request came from. Nothing was recorded.
        /// Retrying does not help: the app needs a newer SDK.
        public static let sdkUpgradeRequired = Code("sdkUpgradeRequired")
        /// An authorisation reused an orderId the ledger already holds for a different amount,
        /// currency or card. Nothing was charged again. Use a new orderId for a new payment.
        public static let orderConflict = Code("orderConflict")
        /// A terminal's authorisation (``AuthorisationRequest/terminalClaim``) of an orderId
        /// that another terminal sent first, or that the ledger holds payments of that no
        /// terminal sent. Nothing was recorded. A terminal acts on its own orders only: use a
        /// new orderId.
        public static let orderNotOwned = Code("orderNotOwned")
        /// No transaction has this uniqueRef. Nothing was done.
        public static let notFound = Code("notFound")
        /// The transaction was reversed before; it was not reversed again. Nothing to retry.
        public static let alreadyReversed = Code("alreadyReversed")
        /// The transaction cannot be reversed: it was declined, it is a refund or a reversal,
        /// or it was (partly) refunded. Nothing was done.
        public static let notReversible = Code("notReversible")
        /// The transaction cannot be refunded: it was declined or reversed, or it is not a
        /// sale. Nothing was done.
        public static let notRefundable = Code("notRefundable")
        /// The refund asks for more than what is left of the sale (amount − refunds so far),
        /// or for 0 or less. Nothing was done.
        public static let refundExceedsRemaining = Code("refundExceedsRemaining")
        /// A capture of a payment that is not AUTHORIZED (a sale captured at once, a capture
        /// done before, a cancelled or declined one), or of another amount than the one
        /// authorised (tapemu captures in full). Nothing was done.
        public static let notCapturable = Code("notCapturable")
        /// MONEI's cancel of a payment that is not AUTHORIZED: a captured sale is refunded (or
        /// reversed through the CoreAPI), not cancelled. Nothing was done.
        public static let notCancelable = Code("notCancelable")
        /// A test control (`/admin/test/…`: an expired token, another account's token, a blocked
        /// SDK version) asked of a served gateway whose operator did not enable them
        /// (`tapemu gateway serve --test-controls`). Nothing was done; retrying does not help.
        public static let testControlsOff = Code("testControlsOff")

        // Transport faults: the outcome is unknown to the caller.

        /// No answer came within the request timeout. The request may have been recorded (a
        /// slow host) or not (lost on the way). Do not retry: look the order up.
        public static let timeout = Code("timeout")
        /// The connection dropped before the answer arrived. The request may have been
        /// recorded. Do not retry: look the order up.
        public static let connectionLost = Code("connectionLost")
        /// The gateway answered with a server error (HTTP 5xx). Outcome unknown to the caller.
        /// Do not retry: look the order up.
        public static let serverError = Code("serverError")
        /// The caller's task was cancelled while the request was under way. The request may
        /// have been recorded. Look the order up.
        public static let cancelled = Code("cancelled")

        // The ledger.

        /// The ledger could not be read or written (I/O error, disk full, permissions, a data
        /// directory that is not a directory). A failed write recorded nothing.
        public static let storage = Code("storage")
        /// Another process held the ledger locked longer than the busy timeout. Nothing was
        /// recorded; retrying later is safe.
        public static let busy = Code("busy")
        /// The ledger file is not a database or is damaged. Move it aside; tapemu never
        /// overwrites it.
        public static let corruptLedger = Code("corruptLedger")
        /// The ledger was written by a newer tapemu (its schema version is unknown here).
        public static let unsupportedLedgerVersion = Code("unsupportedLedgerVersion")
        /// The storage cannot be written: a read-only file system or file. Nothing was
        /// written; reads still work.
        public static let readOnlyStorage = Code("readOnlyStorage")
        /// The data directory does not exist (and the call does not create one): a mistyped
        /// path, or nothing was ever stored there.
        public static let noDataDirectory = Code("noDataDirectory")
        /// A store that this data directory held is missing, empty, or not this directory's
        /// (a file copied from elsewhere). tapemu never creates it anew: restore it, or start
        /// over in a new data directory.
        public static let storeMissing = Code("storeMissing")
    }

    private struct Backing: Sendable {
        var code: Code
        var reason: String
        var file: String
        var line: Int
    }
    private var backing: Backing

    public var code: Code { backing.code }
    public var reason: String { backing.reason }
    public var file: String { backing.file }
    public var line: Int { backing.line }

    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        backing = Backing(code: code, reason: reason, file: file, line: line)
    }

    /// A transport fault: the request may or may not have been recorded.
    public var isCommunicationFailure: Bool {
        code == .timeout || code == .connectionLost || code == .serverError || code == .cancelled
    }

    public var description: String { "\(code): \(reason)" }

    /// Equal when the codes are: the reason and the place are for people.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension GatewayError.Code {
    /// The HTTP status the served gateway answers this refusal with (the merchant REST, the
    /// terminal API and the dashboard's actions alike).
    public var httpStatus: Int {
        switch self {
        case .invalidRequest: return 400
        case .orderNotOwned, .testControlsOff: return 403
        case .notFound: return 404
        case .orderConflict, .alreadyReversed: return 409
        case .notReversible, .notRefundable, .refundExceedsRemaining, .notCapturable, .notCancelable: return 422
        case .sdkUpgradeRequired: return 426
        case .busy, .cancelled: return 503
        case .timeout: return 504
        case .connectionLost: return 502
        default: return 500
        }
    }
}
