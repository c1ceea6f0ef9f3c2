import DeviceStore
import Foundation
import GatewayService
import PaymentGateway
import Synchronization
import VirtualCard
import Storage
public import PaymentFlow

/// Why the shared ``TapToPay`` instance cannot be made from the environment (a `TAPEMU_GATEWAY`
/// that is not an http URL, a data directory that cannot be opened, an unknown `TAPEMU_CARD`).
public struct SharedInstanceError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Seed `000`'s static API — `TapToPay.prepare(token:)`, `TapToPay.acceptPayment(amount:orderId:callbackUrl:)`,
/// called on the type, as MONEI's SDK is — over one shared instance:
///
/// - configured once in code with ``configure(_:)`` (a test's gateway, card source, clock…), or
/// - made from the environment on first use (``configuration(environment:)``): the embedded gateway
///   and the device's store in `TAPEMU_DATA_DIR` (default: `$XDG_DATA_HOME/tapemu`, else
///   `~/.local/share/tapemu`, as the CLI's `--data-dir`), a virtual card (`TAPEMU_CARD`, a
///   built-in profile; default `visa-qvsdc`), and with `TAPEMU_GATEWAY=http://HOST:PORT` the
///   gateway served by `tapemu gateway serve` instead of the embedded one.
///
/// The instance API (`TapToPay(configuration:)`) stays beside it: tests that run several
/// payments side by side make their own instances.
extension TapToPay {
    /// The served gateway's URL (`tapemu gateway serve`) for the shared instance.
    public static let gatewayEnvironmentVariable = "TAPEMU_GATEWAY"
    /// The data directory of the embedded gateway and of the device's pending payments.
    public static let dataDirectoryEnvironmentVariable = "TAPEMU_DATA_DIR"
    /// The built-in virtual card profile the shared instance reads.
    public static let cardEnvironmentVariable = "TAPEMU_CARD"
    /// The card profile of the shared instance when `TAPEMU_CARD` is not set.
    public static let defaultCardProfile = "visa-qvsdc"

    private static let sharedState = Mutex<TapToPay?>(nil)

    /// Makes the shared instance from `configuration`, replacing any before it (a payment in
    /// progress on the one replaced runs to its end there).
    public static func configure(_ configuration: Configuration) {
        let instance = TapToPay(configuration: configuration)
        sharedState.withLock { $0 = instance }
    }

    /// The shared instance: the one ``configure(_:)`` made, else one made once from the process's
    /// environment (``configuration(environment:)``). Throws when the environment's cannot be made;
    /// it is tried again on the next call.
    public static func shared() throws(SharedInstanceError) -> TapToPay {
        try sharedState.withLock { (instance: inout TapToPay?) throws(SharedInstanceError) -> TapToPay in
            if let instance { return instance }
            let made = TapToPay(configuration: try configuration(environment: ProcessInfo.processInfo.environment))
            instance = made
            return made
        }
    }

    /// The configuration the shared instance takes from `environment` (see the type's overview).
    public static func configuration(environment: [String: String]) throws(SharedInstanceError) -> Configuration {
        let directory = environment[dataDirectoryEnvironmentVariable].flatMap { $0.isEmpty ? nil : $0 }
            ?? DataDirectory.defaultPath(environment: environment)
        let profileName = environment[cardEnvironmentVariable].flatMap { $0.isEmpty ? nil : $0 } ?? defaultCardProfile
        guard let profile = CardProfiles.named(profileName) else {
            throw SharedInstanceError("\(cardEnvironmentVariable)=\(profileName) is not a built-in card profile (\(CardProfiles.all.map(\.name).joined(separator: ", ")))")
        }
        let gateway: any Gateway
        if let url = environment[gatewayEnvironmentVariable], !url.isEmpty {
            if let problem = RemoteGateway.validate(url: url) {
                throw SharedInstanceError("\(gatewayEnvironmentVariable): \(problem)")
            }
            gateway = RemoteGateway(baseURL: url)
        } else {
            do {
                gateway = try EmbeddedGateway(dataDirectory: directory, access: .create)
            } catch {
                throw SharedInstanceError("cannot open the embedded gateway in \(directory): \(error.reason)")
            }
        }
        let store: PendingPaymentStore
        do {
            store = try PendingPaymentStore(dataDirectory: directory, access: .create)
        } catch {
            throw SharedInstanceError("cannot open the device's pending payments in \(directory): \(error.reason)")
        }
        return Configuration(cardSource: VirtualCardSource(profile: profile), gateway: gateway, pendingStore: store)
    }

    /// The shared instance, or the seed's error for a set-up that cannot be made (the payment did
    /// not start; ``shared()`` says why).
    private static func sharedForCall() throws(TapToPayError) -> TapToPay {
        do {
            return try shared()
        } catch {
            throw .paymentFailed(code: .unknown)
        }
    }

    /// ``TapToPay/prepare(token:)`` on the shared instance. Throws `paymentFailed(.unknown)` when
    /// the shared instance cannot be made (``shared()`` says why).
    public static func prepare(token: String) async throws(TapToPayError) {
        try await sharedForCall().prepare(token: token)
    }

    /// ``TapToPay/acceptPayment(amount:orderId:callbackUrl:)`` on the shared instance. Throws
    /// `paymentFailed(.unknown)` when the shared instance cannot be made (nothing was read or sent).
    public static func acceptPayment(amount: Int, orderId: String, callbackUrl: String? = nil)
        async throws(TapToPayError) -> PaymentResult
    {
        try await sharedForCall().acceptPayment(amount: amount, orderId: orderId, callbackUrl: callbackUrl)
    }

    /// ``TapToPay/cancel()`` on the shared instance (nothing when there is none).
    public static func cancel() {
        sharedState.withLock { $0 }?.cancel()
    }

    /// ``TapToPay/lastAttempt`` of the shared instance.
    public static var lastAttempt: PaymentDiagnostics? {
        sharedState.withLock { $0 }?.lastAttempt
    }

    /// ``TapToPay/diagnostics(for:)`` of the shared instance.
    public static func diagnostics(for orderId: String) -> PaymentDiagnostics? {
        sharedState.withLock { $0 }?.diagnostics(for: orderId)
    }
}
