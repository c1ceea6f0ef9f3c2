public import Foundation
import Synchronization

/// Wall-clock time a test controls (token expiry, timestamps, webhook signatures).
public final class WallClock: Sendable {
    private let date: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { date = Mutex(start) }

    public var now: Date { date.withLock { $0 } }

    public func advance(by seconds: TimeInterval) { date.withLock { $0 += seconds } }

    /// ``now`` as the `@Sendable () -> Date` the gateway and the payment flow take.
    public var provider: @Sendable () -> Date { { self.now } }
}
