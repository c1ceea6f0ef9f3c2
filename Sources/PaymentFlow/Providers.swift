/// Whether the app may use location, as the platform reports it.
public enum LocationAuthorization: String, Sendable, Hashable, CaseIterable {
    /// Allowed while in use.
    case authorized
    /// The user refused, or location is restricted.
    case denied
    /// Not asked yet: asking shows the permission prompt (``LocationProvider/requestAuthorization()``).
    case notDetermined
    /// The app has no location usage description (`NSLocationWhenInUseUsageDescription`):
    /// the platform refuses without asking.
    case missingUsageDescription
}

/// A position fix.
public struct Location: Sendable, Hashable {
    public var latitude: Double
    public var longitude: Double
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// Where the payment flow gets its location (the SDK needs a fix before the first payment).
public protocol LocationProvider: Sendable {
    /// The current authorisation state.
    func authorization() async -> LocationAuthorization
    /// Shows the permission prompt (for `.notDetermined`) and returns the user's answer.
    func requestAuthorization() async -> LocationAuthorization
    /// Waits for a fix. May take any time (the flow applies the location timeout on its clock)
    /// and must return or throw promptly when its task is cancelled.
    func currentLocation() async throws -> Location
}

/// A location provider with a fixed state and position: the embedded default.
public struct FixedLocationProvider: LocationProvider {
    public var state: LocationAuthorization
    /// The answer of the permission prompt when `state` is `.notDetermined`.
    public var promptAnswer: LocationAuthorization
    /// The fix; nil means no fix ever comes (the location timeout then fires).
    public var location: Location?

    public init(state: LocationAuthorization = .authorized, promptAnswer: LocationAuthorization = .authorized,
                location: Location? = Location(latitude: 41.3874, longitude: 2.1686)) {
        self.state = state
        self.promptAnswer = promptAnswer
        self.location = location
    }

    public func authorization() async -> LocationAuthorization { state }
    public func requestAuthorization() async -> LocationAuthorization { promptAnswer }
    public func currentLocation() async throws -> Location {
        if let location { return location }
        // No fix: wait until cancelled (the flow's location timeout cancels us).
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}

/// Shows the platform's Tap to Pay terms and returns whether the merchant accepted them (or
/// whether account linking succeeded).
public protocol TermsProvider: Sendable {
    func presentTerms() async -> Bool
}

/// A terms provider with a fixed answer.
public struct FixedTermsProvider: TermsProvider {
    public var accepts: Bool
    public init(accepts: Bool) { self.accepts = accepts }
    public func presentTerms() async -> Bool { accepts }
}

/// A PIN, held so that it never prints.
public struct PIN: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// 4 to 12 digits. Read only to build the PIN block.
    public let digits: String
    public init?(_ digits: String) {
        guard (4...12).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        self.digits = digits
    }
    public var description: String { "PIN(****)" }
    public var debugDescription: String { "PIN(****)" }
}

/// What the PIN pad is asked to collect.
public struct PINRequest: Sendable, Hashable {
    public var amount: Int
    public var currency: String
    public var maskedPAN: String
    public init(amount: Int, currency: String, maskedPAN: String) {
        self.amount = amount
        self.currency = currency
        self.maskedPAN = maskedPAN
    }
}

/// Collects the online PIN when the card asks for it. Return nil when the cardholder cancels;
/// throw when the PIN pad fails. Must return promptly when its task is cancelled (the flow's
/// PIN-entry timeout cancels it).
public protocol PINProvider: Sendable {
    func requestPIN(_ request: PINRequest) async throws -> PIN?
}

/// A PIN provider with a scripted answer (tests, the CLI's `--pin`).
public struct ScriptedPINProvider: PINProvider {
    public enum Answer: Sendable {
        case pin(PIN)
        case cancel
        case fail
        /// Never answers: the PIN-entry timeout fires.
        case never
    }
    public var answer: Answer
    public init(_ answer: Answer) { self.answer = answer }

    public struct Failure: Error {}

    public func requestPIN(_ request: PINRequest) async throws -> PIN? {
        switch answer {
        case .pin(let p): return p
        case .cancel: return nil
        case .fail: throw Failure()
        case .never:
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
    }
}
