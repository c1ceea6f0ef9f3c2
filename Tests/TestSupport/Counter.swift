import Synchronization

/// A counter shared with a `@Sendable` callback (a provider, a hook).
public final class Counter: Sendable {
    private let value = Mutex(0)

    public init() {}

    public var count: Int { value.withLock { $0 } }

    @discardableResult
    public func increment() -> Int { value.withLock { $0 += 1; return $0 } }
}

/// Records what a `@Sendable` callback was called with, in order.
public final class Recorder<Element: Sendable>: Sendable {
    private let values = Mutex<[Element]>([])

    public init() {}

    public func record(_ value: Element) { values.withLock { $0.append(value) } }

    /// Every value recorded so far.
    public var calls: [Element] { values.withLock { $0 } }
}
