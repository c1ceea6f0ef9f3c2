package import Timing

/// Every timeout of a payment, each a `Duration` measured on the configured clock.
public struct PaymentTimeouts: Sendable, Hashable {
    /// How long the reader waits for a card to be presented. Default 30 s.
    public var cardPresentation: Duration
    /// How long one APDU may take. Default 2 s.
    public var apdu: Duration
    /// How long the cardholder has to enter an online PIN. Default 30 s.
    public var pinEntry: Duration
    /// How long the first call waits for a location fix. Default 15 s (seed `000`).
    public var locationFix: Duration
    /// How long a gateway request may take. Default 30 s.
    public var gatewayRequest: Duration

    public init(cardPresentation: Duration = .seconds(30), apdu: Duration = .seconds(2),
                pinEntry: Duration = .seconds(30), locationFix: Duration = .seconds(15),
                gatewayRequest: Duration = .seconds(30)) {
        self.cardPresentation = cardPresentation
        self.apdu = apdu
        self.pinEntry = pinEntry
        self.locationFix = locationFix
        self.gatewayRequest = gatewayRequest
    }

    public static let `default` = PaymentTimeouts()
}

/// The outcome of waiting for something with a deadline.
package enum Timed<T: Sendable>: Sendable {
    case value(T)
    case timedOut
    case cancelled
    case failed(any Error)
}

/// Runs `operation` until `timeout` passes on `clock`; the caller stops waiting then, whatever
/// the operation does. Timed out and cancelled stay distinct.
package func withTimeout<T: Sendable>(_ timeout: Duration, clock: MonotonicClock,
                                      _ operation: @escaping @Sendable () async throws -> T) async -> Timed<T> {
    let deadline = clock.now + timeout
    do throws(TimeoutStop) {
        let value = try await withDeadline(
            deadline, on: clock, onTimeout: { TimeoutStop.timedOut }, onCancel: { TimeoutStop.cancelled }
        ) { () async throws(TimeoutStop) -> Result<T, any Error> in
            do {
                return .success(try await operation())
            } catch is CancellationError {
                throw .cancelled
            } catch {
                return .failure(error)
            }
        }
        switch value {
        case .success(let v): return .value(v)
        case .failure(let e): return .failed(e)
        }
    } catch {
        return error == .timedOut ? .timedOut : .cancelled
    }
}

/// Why ``withTimeout(_:clock:_:)`` stopped waiting.
private enum TimeoutStop: Error {
    case timedOut
    case cancelled
}
