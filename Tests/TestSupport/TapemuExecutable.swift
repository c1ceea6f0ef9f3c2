public import Foundation

/// The built `tapemu` executable, for the tests that run it as a child process (killed by
/// SIGKILL, several servers on one ledger): `TAPEMU_BINARY` if set, else the one built next to
/// this test bundle (`swift build --build-tests` builds both into the same directory).
public func tapemuExecutable() throws -> URL {
    if let path = ProcessInfo.processInfo.environment["TAPEMU_BINARY"], !path.isEmpty {
        return URL(fileURLWithPath: path)
    }
    let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    var dir = me.deletingLastPathComponent()
    // The bundle may be a directory (…/tapemuPackageTests.xctest/…) on some layouts.
    while dir.path != "/" {
        let candidate = dir.appendingPathComponent("tapemu")
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDir), !isDir.boolValue,
           FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        if dir.lastPathComponent == "debug" || dir.lastPathComponent == "release" { break }
        dir = dir.deletingLastPathComponent()
    }
    throw TapemuExecutableMissing(near: me.deletingLastPathComponent().path)
}

/// ``tapemuExecutable()`` found no `tapemu` next to the tests.
public struct TapemuExecutableMissing: Error, CustomStringConvertible {
    public let near: String
    public var description: String {
        "the tapemu executable is not built next to the tests (\(near)): run `swift build --build-tests` (or `swift build --product tapemu`) with the same scratch path, or set TAPEMU_BINARY"
    }
}
