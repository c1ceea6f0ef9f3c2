/// Every error of the MONEI-style Tap to Pay API (seed `000`: "Handle errors and unclear outcomes").
///
/// Most cases mean that no payment occurred. One, ``outcomeUnknown(orderId:)``, means the card
/// **can be charged**: do not retry, wait for the signed webhook or look the order up.
///
/// The enum is not frozen: new cases may come in later versions, so a `switch` over it needs
/// `@unknown default` (as the seed says), or a `default`.
public enum TapToPayError: Error, Hashable, Sendable {
    /// The device or OS does not support Tap to Pay. Thrown by all calls. Hide Tap to Pay.
    case notSupported
    /// Location access not allowed (or the usage description is missing). Thrown by `prepare`
    /// and `acceptPayment`. Ask the user to allow it in Settings, then try again.
    case locationDenied
    /// The user did not accept the terms, or account linking failed. Thrown by `acceptPayment`.
    /// The next `acceptPayment` shows the terms again.
    case termsDeclined
    /// `amount` is 0 or less or beyond 12 digits, `orderId` is empty, longer than 128 characters or
    /// holds control characters, or `callbackUrl` is not an http(s) URL. Thrown by `acceptPayment`.
    /// Correct the value.
    case invalidArgument
    /// The token expired. Thrown by `prepare` and `acceptPayment`. Get a new token, `prepare`, retry.
    case tokenExpired
    /// The token cannot be read. Thrown by `prepare`; nothing is kept, so `acceptPayment` then
    /// throws ``notPrepared``. Send only the `token` field, get a new token, `prepare` again.
    case invalidToken
    /// No valid token is stored. Thrown by `acceptPayment`. Call `prepare` first.
    case notPrepared
    /// A payment is in progress. Thrown by `acceptPayment`. Wait until it ends.
    case busy
    /// The user cancelled on the payment sheet (``TapToPay/cancel()``; `tapemu pay`'s Ctrl-C)
    /// before a card was presented. No payment occurred. Start a new payment when the customer is
    /// ready. (A cancelled task, or the user's cancel once a card is being read, is
    /// ``outcomeUnknown(orderId:)``.)
    case cancelled
    /// This SDK version is blocked. Thrown by `prepare` and `acceptPayment`. Update the SDK.
    case sdkUpgradeRequired
    /// The SDK cannot tell whether the payment reached the gateway. **The card can be charged.**
    /// Thrown by `acceptPayment` for any card read error, PIN entry error, lost reader session or
    /// cancelled task — before the request left or after it: the SDK cannot tell which (seed 000)
    /// — and for any connection or server error or unclear reply once the request left. Do not
    /// retry and do not charge again with a new orderId: show a pending state, wait for the signed
    /// webhook, then query the charges by `orderId`. (``TapToPay/lastAttempt`` says what tapemu
    /// knows beside it.)
    case outcomeUnknown(orderId: String)
    /// The payment or the set-up failed; see ``TapToPayErrorCode``. Thrown by all calls.
    case paymentFailed(code: TapToPayErrorCode)
}

/// Why a payment or the set-up failed (``TapToPayError/paymentFailed(code:)``). No payment occurred
/// for any of them. Not frozen.
public enum TapToPayErrorCode: String, Hashable, Sendable, CaseIterable {
    /// The card was declined during the read: its own offline decline (an AAC), or a cardholder
    /// verification it requires that this device cannot do. Ask for a different card.
    case cardDeclined
    /// The reader session was not ready before reading began: the card source gave no card — none
    /// was presented within the presentation timeout, or the reader could not be opened, failed or
    /// went away while waiting (no pcscd, no such reader, the reader removed). Once a card is being
    /// read, a reader fault is ``TapToPayError/outcomeUnknown(orderId:)``. Try again; the reader is
    /// prepared again on the next call.
    case readerNotReady
    /// No location fix within the location timeout (15 s by default). Make sure Location
    /// Services are on, then try again.
    case locationTimeout
    /// The payment did not start. Try again; if it continues, contact support.
    case unknown
}

extension TapToPayError: CustomStringConvertible {
    /// A stable machine-readable name: `outcomeUnknown`, `paymentFailed.readerNotReady`, …
    public var code: String {
        switch self {
        case .notSupported: "notSupported"
        case .locationDenied: "locationDenied"
        case .termsDeclined: "termsDeclined"
        case .invalidArgument: "invalidArgument"
        case .tokenExpired: "tokenExpired"
        case .invalidToken: "invalidToken"
        case .notPrepared: "notPrepared"
        case .busy: "busy"
        case .cancelled: "cancelled"
        case .sdkUpgradeRequired: "sdkUpgradeRequired"
        case .outcomeUnknown: "outcomeUnknown"
        case .paymentFailed(let code): "paymentFailed.\(code.rawValue)"
        }
    }

    /// Whether a payment may exist for this error (only ``outcomeUnknown(orderId:)``).
    public var mayHaveCharged: Bool {
        if case .outcomeUnknown = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .notSupported: "This device does not support Tap to Pay."
        case .locationDenied: "Location access is not allowed."
        case .termsDeclined: "The Tap to Pay terms were not accepted."
        case .invalidArgument: "The amount must be more than 0 and at most 12 digits, and the order ID 1 to 128 printable characters."
        case .tokenExpired: "The token expired; get a new one and call prepare."
        case .invalidToken: "The token cannot be read; get a new one and call prepare."
        case .notPrepared: "No valid token is stored; call prepare first."
        case .busy: "A payment is already in progress."
        case .cancelled: "The payment was cancelled. No payment occurred."
        case .sdkUpgradeRequired: "This SDK version is blocked; upgrade."
        case .outcomeUnknown(let orderId):
            "The outcome of order \(orderId) is unknown: the card may have been charged. Do not retry; wait for the webhook or query the order."
        case .paymentFailed(let code):
            switch code {
            case .cardDeclined: "The card was declined during the read. No payment occurred."
            case .readerNotReady: "The reader session was not ready or expired. No payment occurred."
            case .locationTimeout: "No location fix in time. No payment occurred."
            case .unknown: "The payment did not start. No payment occurred."
            }
        }
    }
}
