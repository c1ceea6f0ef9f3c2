/// Hears how a sale ended (seeds `002`/`003`). Every `processSale` ends with exactly one of the
/// three calls.
///
/// | Callback | When | The card may be charged? |
/// |----------|------|---------------------------|
/// | ``onSaleResponse(_:)`` | the gateway answered: `code` `A` approved, or `D`/`R`/`E`, or `C` (the order's sale was reversed since) | as the code says |
/// | ``onError(_:withDescription:)`` | the sale failed before the authorisation started leaving (network problems before the card, a card or reader fault, a timeout, a cancel) | no |
/// | ``onTransactionCommError(_:withError:withMessage:)`` | the card was read and the authorisation left, but no clear answer came back | **yes**: resolve the sale |
///
/// Callbacks run on the task that called `processSale`, before it returns.
public protocol CoreAPISaleListener: Sendable {
    /// The gateway's answer. Only `response.code == "A"` is an approval.
    func onSaleResponse(_ response: CoreSaleResponse)

    /// A transaction error: no payment occurred.
    func onError(_ error: CoreError, withDescription message: String?)

    /// A communication error: the card was read and the request may or may not have reached the
    /// gateway. `sale` is the original sale with its card fields set. It is already stored on the
    /// device (``CoreAPI/pendingSales()``); resolve it with ``PendingSaleResolver`` (the seeds'
    /// recovery process) before charging the customer again.
    func onTransactionCommError(_ sale: CoreSale, withError error: CoreError, withMessage message: String?)
}

/// Hears how a referenced refund ended. There is no communication-error callback: a refund that
/// cannot reach the gateway (or whose answer is lost) is reported through
/// ``onError(_:withDescription:)`` with ``CoreError/networkError`` or ``CoreError/timeout``, as
/// seed `002` notes — look the sale up with `RestConnector.requestTransactionList` before
/// refunding again.
public protocol CoreAPIRefundListener: Sendable {
    func onRefundResponse(_ response: CoreRefundResponse)
    func onError(_ error: CoreError, withDescription message: String?)
}

/// Hears about the device (the reader standing in for the iPhone's NFC). Callbacks come from the
/// task that found the change: `initialise`, a sale that met a reader fault, or
/// ``CoreAPI/runDeviceMonitor()`` — possibly while a sale runs on another task.
public protocol CoreAPIDeviceListener: Sendable {
    /// A device failure: a reader fault, or an `APPLE_TTP_` condition at initialise.
    func onDeviceError(_ deviceError: CoreDeviceError, withDescription message: String?)
    /// The device is active and ready (at initialise, and when a reader comes back).
    func onDeviceConnected(_ type: DeviceEnum, withDeviceInfo deviceInfo: [String: String])
    /// The device became unavailable (a reader unplugged, pcscd gone). Disable the payment button.
    func onDeviceDisconnected(_ type: DeviceEnum)
}
