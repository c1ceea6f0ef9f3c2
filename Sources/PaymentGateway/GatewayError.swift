public import CodedErrors

/// An error of the gateway layer: a request the gateway refused, a ledger that cannot be used,
/// or a transport fault between the caller and the gateway.
///
/// Tests compare ``code`` only (`==` too). The ``reason`` is for people; it never holds a full PAN.
///
/// For the payment flow: once an authorisation has started to leave (the submission point),
/// *every* error from ``Gateway/authorize(_:options:)`` means the outcome is unknown, whatever
/// its code. ``isCommunicationFailure`` marks the transport faults (``Code/timeout``,
/// ``Code/connectionLost``, ``Code/serverError``, ``Code/cancelled``): the request may or may
/// not have been recorded, so look the order up (``Gateway/charges(orderId:options:)``,
/// ``Gateway/transactionList(_:options:)``) instead of retrying.
public struct GatewayError: PlainCodedError {
    public typealias Code = ErrorCode<GatewayError>
    public let core: ErrorCore<Code>
    public init(core: ErrorCore<Code>) { self.core = core }

    /// A transport fault: the request may or may not have been recorded.
    public var isCommunicationFailure: Bool { code.isTransportFault }

    public var description: String { "\(code): \(reason)" }
}

/// What went wrong. Open: new codes may be added, so switch with a `default`.
extension ErrorCode<GatewayError> {
    // Refusals: the gateway answered and recorded nothing.

    /// The request is malformed (amount ≤ 0, empty orderId, bad currency, unreadable EMV
    /// data, an EMV amount that differs from the request, …). Nothing was recorded.
    /// Do not retry unchanged.
    public static var invalidRequest: Self { Self("invalidRequest") }
    /// The gateway blocks the SDK version the request came from. Nothing was recorded.
    /// Retrying does not help: the app needs a newer SDK.
    public static var sdkUpgradeRequired: Self { Self("sdkUpgradeRequired") }
    /// An authorisation reused an orderId the ledger already holds for a different amount,
    /// currency or card. Nothing was charged again. Use a new orderId for a new payment.
    public static var orderConflict: Self { Self("orderConflict") }
    /// A terminal's authorisation (``AuthorisationRequest/terminalClaim``) of an orderId
    /// that another terminal sent first, or that the ledger holds payments of that no
    /// terminal sent. Nothing was recorded. A terminal acts on its own orders only: use a
    /// new orderId.
    public static var orderNotOwned: Self { Self("orderNotOwned") }
    /// No transaction has this uniqueRef. Nothing was done.
    public static var notFound: Self { Self("notFound") }
    /// The transaction was reversed before; it was not reversed again. Nothing to retry.
    public static var alreadyReversed: Self { Self("alreadyReversed") }
    /// The transaction cannot be reversed: it was declined, it is a refund or a reversal,
    /// or it was (partly) refunded. Nothing was done.
    public static var notReversible: Self { Self("notReversible") }
    /// The transaction cannot be refunded: it was declined or reversed, or it is not a
    /// sale. Nothing was done.
    public static var notRefundable: Self { Self("notRefundable") }
    /// The refund asks for more than what is left of the sale (amount − refunds so far),
    /// or for 0 or less. Nothing was done.
    public static var refundExceedsRemaining: Self { Self("refundExceedsRemaining") }
    /// A capture of a payment that is not AUTHORIZED (a sale captured at once, a capture
    /// done before, a cancelled or declined one), or of another amount than the one
    /// authorised (tapemu captures in full). Nothing was done.
    public static var notCapturable: Self { Self("notCapturable") }
    /// MONEI's cancel of a payment that is not AUTHORIZED: a captured sale is refunded (or
    /// reversed through the CoreAPI), not cancelled. Nothing was done.
    public static var notCancelable: Self { Self("notCancelable") }
    /// A test control (`/admin/test/…`: an expired token, another account's token, a blocked
    /// SDK version) asked of a served gateway whose operator did not enable them
    /// (`tapemu gateway serve --test-controls`). Nothing was done; retrying does not help.
    public static var testControlsOff: Self { Self("testControlsOff") }

    // Transport faults: the outcome is unknown to the caller.

    /// No answer came within the request timeout. The request may have been recorded (a
    /// slow host) or not (lost on the way). Do not retry: look the order up.
    public static var timeout: Self { Self("timeout") }
    /// The connection dropped before the answer arrived. The request may have been
    /// recorded. Do not retry: look the order up.
    public static var connectionLost: Self { Self("connectionLost") }
    /// The gateway answered with a server error (HTTP 5xx). Outcome unknown to the caller.
    /// Do not retry: look the order up.
    public static var serverError: Self { Self("serverError") }
    /// The caller's task was cancelled while the request was under way. The request may
    /// have been recorded. Look the order up.
    public static var cancelled: Self { Self("cancelled") }

    // The ledger.

    /// The ledger could not be read or written (I/O error, disk full, permissions, a data
    /// directory that is not a directory). A failed write recorded nothing.
    public static var storage: Self { Self("storage") }
    /// Another process held the ledger locked longer than the busy timeout. Nothing was
    /// recorded; retrying later is safe.
    public static var busy: Self { Self("busy") }
    /// The ledger file is not a database or is damaged. Move it aside; tapemu never
    /// overwrites it.
    public static var corruptLedger: Self { Self("corruptLedger") }
    /// The ledger was written by a newer tapemu (its schema version is unknown here).
    public static var unsupportedLedgerVersion: Self { Self("unsupportedLedgerVersion") }
    /// The storage cannot be written: a read-only file system or file. Nothing was
    /// written; reads still work.
    public static var readOnlyStorage: Self { Self("readOnlyStorage") }
    /// The data directory does not exist (and the call does not create one): a mistyped
    /// path, or nothing was ever stored there.
    public static var noDataDirectory: Self { Self("noDataDirectory") }
    /// A store that this data directory held is missing, empty, or not this directory's
    /// (a file copied from elsewhere). tapemu never creates it anew: restore it, or start
    /// over in a new data directory.
    public static var storeMissing: Self { Self("storeMissing") }
}

extension ErrorCode<GatewayError> {
    /// ``timeout``, ``connectionLost``, ``serverError``, ``cancelled``: the outcome is unknown to
    /// the caller (``GatewayError/isCommunicationFailure``).
    public var isTransportFault: Bool {
        self == .timeout || self == .connectionLost || self == .serverError || self == .cancelled
    }

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
