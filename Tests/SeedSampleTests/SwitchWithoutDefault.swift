import TapToPay

// The seed: "A `switch` without a `default` case needs `@unknown default`." TapToPayError is not
// frozen; tapemu's library is built without library evolution, so the compiler sees every case:
// `@unknown default` then only warns ("default will never be executed"). This must compile, as an
// app written to the seed's advice is.
func nameWithoutDefault(_ error: TapToPayError) -> String {
    switch error {
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
    case .paymentFailed(let code):
        switch code {
        case .cardDeclined: "cardDeclined"
        case .readerNotReady: "readerNotReady"
        case .locationTimeout: "locationTimeout"
        case .unknown: "unknown"
        @unknown default: "a newer code"
        }
    @unknown default: "a newer error"
    }
}
