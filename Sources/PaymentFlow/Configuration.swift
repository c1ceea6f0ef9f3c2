public import CardChannel
public import EMVKernel
public import Foundation
public import DeviceStore
public import PaymentGateway
public import Timing

/// The device tapemu pretends to be.
public struct DeviceEnvironment: Sendable, Hashable {
    /// Whether the device and OS support Tap to Pay (false → `notSupported` from every call).
    public var isSupported: Bool
    public var model: String
    public var osVersion: String

    public init(isSupported: Bool = true, model: String = "iPhone15,2", osVersion: String = "18.1") {
        self.isSupported = isSupported
        self.model = model
        self.osVersion = osVersion
    }
}

/// A point of the payment flow, for crash simulation: ``PaymentConfiguration/checkpoint`` is
/// called there and may never return, freezing the flow as a killed process would.
public enum FlowCheckpoint: String, Sendable, Hashable, CaseIterable {
    /// The card has been read; nothing is written yet.
    case cardRead
    /// The pending record is durable; the authorisation has not started leaving.
    case pendingWritten
    /// The authorisation request has started leaving (the submission point).
    case submitted
    /// The gateway's answer arrived and is stored in the pending record; the result is not
    /// handed over yet, and the record stays until it is.
    case answered
}

/// What the flow tells an observer as it goes (the CLI prints these on stderr).
public enum PaymentEvent: Sendable, Hashable {
    case waitingForLocation
    case waitingForCard(source: String)
    case reading
    case cardRead(brand: String, maskedPAN: String, cvm: String)
    case waitingForPIN
    case authorising(orderId: String, early: Bool)
    case answered(status: String)
    /// What went wrong under a `paymentFailed`, `cancelled`-free failure or an `outcomeUnknown`
    /// (the card did not answer, the trace diverged, the gateway's connection dropped): the
    /// seed's error types cannot carry it. Never holds a PAN.
    case failed(reason: String)
    /// The device could not update or remove the attempt's record (a full or read-only disk, a
    /// damaged store): it stays, and recovery will report this payment again. Never holds a PAN.
    case recordKept(reason: String)
}

/// When the device's record of an answered payment leaves: once the result is handed over.
public enum ResultHandOver: Sendable, Hashable {
    /// When the library call returns it (or the CoreAPI listener has been called).
    case onReturn
    /// When the caller says it has it (`TapToPay.acknowledge(_:)`, `CoreAPI.acknowledge(_:)`):
    /// a program that must write the result somewhere first (a CLI flushing stdout) keeps the
    /// record, with the answer in it, until then.
    case acknowledged
}

/// Everything a payment depends on, whichever SDK face runs it (`TapToPay`, `CoreAPI`).
/// The embedded default: a virtual Visa qVSDC card and the in-process gateway in a data directory.
public struct PaymentConfiguration: Sendable {
    /// The version both SDK faces report to the gateway unless told otherwise
    /// (`TapToPay.sdkVersion`).
    public static let defaultSDKVersion = "tapemu-1.0.0"

    /// Where cards come from.
    public var cardSource: any CardSource
    /// The acquirer.
    public var gateway: any Gateway
    /// The device's durable store of pending payments.
    public var pendingStore: PendingPaymentStore
    /// The clock of every timeout and timing.
    public var clock: MonotonicClock
    /// Wall time (token expiry, record timestamps).
    public var now: @Sendable () -> Date
    public var location: any LocationProvider
    public var terms: any TermsProvider
    public var pin: any PINProvider
    public var device: DeviceEnvironment
    /// This SDK's version string, which the gateway may block.
    public var sdkVersion: String
    public var timeouts: PaymentTimeouts
    /// The reader kernel's terminal settings (country, currency, TTQ, CVM limit, AIDs).
    public var terminal: TerminalConfiguration
    /// ISO 4217 alphabetic currency of the amounts.
    public var currency: String
    /// Faults to inject per authorisation (the CLI's `--gateway-fault`).
    public var gatewayFault: GatewayFault?
    /// Start the authorisation as soon as the cryptogram and card data are known (qVSDC),
    /// while the kernel goes on reading records. On by default, as real SDKs do.
    public var submitsEarly: Bool
    /// When the record of an answered payment leaves the device (default: on return).
    public var resultHandOver: ResultHandOver
    /// Called at each ``FlowCheckpoint``; a test can freeze the flow there.
    public var checkpoint: @Sendable (FlowCheckpoint) async -> Void
    /// Progress, for display.
    public var onEvent: @Sendable (PaymentEvent) -> Void

    public init(cardSource: any CardSource, gateway: any Gateway, pendingStore: PendingPaymentStore,
                clock: MonotonicClock = .continuous, now: @escaping @Sendable () -> Date = { Date() },
                location: any LocationProvider = FixedLocationProvider(),
                terms: any TermsProvider = FixedTermsProvider(accepts: true),
                pin: any PINProvider = ScriptedPINProvider(.cancel),
                device: DeviceEnvironment = DeviceEnvironment(), sdkVersion: String = PaymentConfiguration.defaultSDKVersion,
                timeouts: PaymentTimeouts = .default, terminal: TerminalConfiguration = .default,
                currency: String = "EUR", gatewayFault: GatewayFault? = nil, submitsEarly: Bool = true,
                resultHandOver: ResultHandOver = .onReturn,
                checkpoint: @escaping @Sendable (FlowCheckpoint) async -> Void = { _ in },
                onEvent: @escaping @Sendable (PaymentEvent) -> Void = { _ in }) {
        self.cardSource = cardSource
        self.gateway = gateway
        self.pendingStore = pendingStore
        self.clock = clock
        self.now = now
        self.location = location
        self.terms = terms
        self.pin = pin
        self.device = device
        self.sdkVersion = sdkVersion
        self.timeouts = timeouts
        self.terminal = terminal
        self.currency = currency
        self.gatewayFault = gatewayFault
        self.submitsEarly = submitsEarly
        self.resultHandOver = resultHandOver
        self.checkpoint = checkpoint
        self.onEvent = onEvent
    }
}
