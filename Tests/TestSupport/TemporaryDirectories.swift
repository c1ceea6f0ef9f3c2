public import Foundation
public import Testing
import Synchronization

/// A fresh temporary directory, removed (with what is in it) when the value is released.
public final class TempDir: Sendable {
    public let path: String

    public init(prefix: String = "tapemu-tests") {
        path = NSTemporaryDirectory() + prefix + "-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A path inside this directory (not created).
    public func sub(_ name: String) -> String { path + "/" + name }
}

/// A fresh temporary directory for the test that is running, removed when that test ends. Only
/// inside a suite or test with the ``Testing/Trait/temporaryDirectories`` trait (anywhere else the
/// directory could not be removed, and the test fails saying so).
public func temporaryDirectory(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tapemu-cli-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    if let registry = TemporaryDirectories.current {
        registry.add(dir)
    } else {
        Issue.record("temporaryDirectory() outside a test with the .temporaryDirectories trait: \(dir) would be left behind",
                     sourceLocation: sourceLocation)
    }
    return dir
}

/// Removes, after each test, the directories ``temporaryDirectory(sourceLocation:)`` made for it.
public struct TemporaryDirectories: SuiteTrait, TestTrait, TestScoping {
    /// The directories of the test running in this task (and its child tasks).
    @TaskLocal static var current: Registry?

    final class Registry: Sendable {
        private let paths = Mutex<[String]>([])
        func add(_ path: String) { paths.withLock { $0.append(path) } }
        func removeAll() {
            for path in paths.withLock({ p in defer { p = [] }; return p }) {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
    }

    public init() {}

    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        guard !test.isSuite else { return try await function() }
        let registry = Registry()
        defer { registry.removeAll() }
        try await Self.$current.withValue(registry) { try await function() }
    }
}

extension Trait where Self == TemporaryDirectories {
    /// Each test's ``temporaryDirectory(sourceLocation:)`` directories are removed when it ends.
    public static var temporaryDirectories: Self { TemporaryDirectories() }
}
