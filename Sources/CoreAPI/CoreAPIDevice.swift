public import PaymentFlow
public import CardChannel

/// The emulated iPhone the CoreAPI-style SDK runs on, so an app can meet every `APPLE_TTP_`
/// condition of seed `002` on demand.
///
/// `initialise` checks, in this order, and stops at the first failure:
///
/// | Check | Fails when | Device error |
/// |-------|------------|--------------|
/// | model | `DeviceEnvironment.isSupported` is false, or the model is not `iPhoneN,M` with N ≥ 11 (iPhone XS or later) | `APPLE_TTP_UNSUPPORTED_MODEL` |
/// | OS | `osVersion` is older than ``minimumOSVersion`` (16.4) | `APPLE_TTP_UNSUPPORTED_OS_VERSION` |
/// | passcode | ``passcodeEnabled`` is false | `APPLE_TTP_PASSCODE_DISABLED` |
/// | account | ``accountLinkingSucceeds`` is false | `APPLE_TTP_ACCOUNT_LINKING_FAILED` |
/// | merchant | ``merchantBlocked`` is true | `APPLE_TTP_MERCHANT_BLOCKED` |
///
/// ``init(condition:)`` builds an environment that produces one condition (the CLI's
/// `--device-condition`).
public struct CoreDeviceEnvironment: Sendable, Hashable {
    /// A condition the emulated device can be put in.
    public enum Condition: String, Sendable, Hashable, CaseIterable {
        case ready
        case unsupportedModel = "unsupported-model"
        case unsupportedOSVersion = "unsupported-os"
        case passcodeDisabled = "passcode-disabled"
        case accountLinkingFailed = "account-linking-failed"
        case merchantBlocked = "merchant-blocked"
    }

    /// The oldest iOS version with Tap to Pay in tapemu's emulation.
    public static let minimumOSVersion = "16.4"
    /// iPhone XS (`iPhone11,2`) is the first model with Tap to Pay.
    public static let minimumModelMajor = 11

    /// Model and OS (shared with the MONEI-style face).
    public var device: DeviceEnvironment
    public var passcodeEnabled: Bool
    public var accountLinkingSucceeds: Bool
    public var merchantBlocked: Bool

    public init(device: DeviceEnvironment = DeviceEnvironment(), passcodeEnabled: Bool = true,
                accountLinkingSucceeds: Bool = true, merchantBlocked: Bool = false) {
        self.device = device
        self.passcodeEnabled = passcodeEnabled
        self.accountLinkingSucceeds = accountLinkingSucceeds
        self.merchantBlocked = merchantBlocked
    }

    /// An environment in `condition` (a supported iPhone otherwise).
    public init(condition: Condition) {
        self.init()
        switch condition {
        case .ready: break
        case .unsupportedModel: device.model = "iPhone10,6"   // iPhone X
        case .unsupportedOSVersion: device.osVersion = "15.7"
        case .passcodeDisabled: passcodeEnabled = false
        case .accountLinkingFailed: accountLinkingSucceeds = false
        case .merchantBlocked: merchantBlocked = true
        }
    }

    /// The first failing check, or nil when the device can take payments.
    public func check() -> (error: CoreDeviceError, description: String)? {
        if !device.isSupported || !Self.modelSupported(device.model) {
            return (.appleTTPUnsupportedModel, "the model \(device.model) does not support Tap to Pay (iPhone XS or later)")
        }
        if !Self.version(device.osVersion, isAtLeast: Self.minimumOSVersion) {
            return (.appleTTPUnsupportedOSVersion,
                    "iOS \(device.osVersion) does not support Tap to Pay (\(Self.minimumOSVersion) or later)")
        }
        if !passcodeEnabled {
            return (.appleTTPPasscodeDisabled, "Tap to Pay needs a device passcode; set one in Settings")
        }
        if !accountLinkingSucceeds {
            return (.appleTTPAccountLinkingFailed, "the Apple account could not be linked to the merchant")
        }
        if merchantBlocked {
            return (.appleTTPMerchantBlocked, "the merchant is blocked from Tap to Pay")
        }
        return nil
    }

    /// What `onDeviceConnected` reports.
    public var deviceInfo: [String: String] {
        ["model": device.model, "osVersion": device.osVersion]
    }

    static func modelSupported(_ model: String) -> Bool {
        guard model.hasPrefix("iPhone"), let comma = model.firstIndex(of: ",") else { return false }
        guard let major = Int(model[model.index(model.startIndex, offsetBy: 6)..<comma]) else { return false }
        return major >= minimumModelMajor
    }

    static func version(_ v: String, isAtLeast minimum: String) -> Bool {
        func parts(_ s: String) -> [Int]? {
            let p = s.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
            guard !p.isEmpty, p.allSatisfy({ $0 != nil && $0! >= 0 }) else { return nil }
            return p.map { $0! }
        }
        guard let a = parts(v), let b = parts(minimum) else { return false }
        for i in 0..<max(a.count, b.count) {
            let x = i < a.count ? a[i] : 0, y = i < b.count ? b[i] : 0
            if x != y { return x > y }
        }
        return true
    }
}

/// Whether the reader is there, as a ``CoreDeviceMonitor`` sees it.
public enum CoreDeviceStatus: Sendable, Hashable {
    /// Ready; the info goes to `onDeviceConnected` (`reader`, `source`, …).
    case connected(info: [String: String])
    /// Gone: the error goes to `onDeviceError`, then `onDeviceDisconnected` fires.
    case unavailable(CoreDeviceError, description: String)

    public var isConnected: Bool {
        if case .connected = self { return true }
        return false
    }
}

/// Follows the reader's attach and detach, for `onDeviceConnected` / `onDeviceDisconnected`.
///
/// The TapToPay module does not depend on PC/SC: the command line wires a monitor over pcscd's
/// reader states (`SCardGetStatusChange` on the reader and on the plug-and-play pseudo reader);
/// a virtual card or a trace is always there (no monitor needed).
public protocol CoreDeviceMonitor: Sendable {
    /// The status now.
    func currentStatus() async -> CoreDeviceStatus
    /// Waits until the status is no longer `known` and returns the new one. Throws
    /// `CancellationError` promptly when the task is cancelled.
    func waitForChange(from known: CoreDeviceStatus) async throws -> CoreDeviceStatus
}

extension CoreDeviceError {
    /// The device error a card channel failure stands for; nil for failures that are not the
    /// device's (no card presented in time, cancelled).
    public init?(_ error: CardChannelError) {
        switch error.code {
        case .noCard, .cancelled: return nil
        case .noService: self = .serviceUnavailable
        case .noReader: self = .noReader
        case .readerRemoved: self = .readerRemoved
        case .cardRemoved: self = .cardRemoved
        case .timeout: self = .cardMute
        case .sharingViolation: self = .readerBusy
        case .notAPaymentCard: self = .unsupportedCard
        default: self = .readerFault
        }
    }
}
