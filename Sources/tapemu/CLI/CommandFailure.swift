import Foundation

/// An error a command throws to choose its exit status: printed as `tapemu: <message>` on
/// stderr, no usage.
struct CommandFailure: Error, Sendable, CustomStringConvertible {
    var exitCode: Int32
    var message: String

    init(exitCode: Int32, _ message: String) {
        self.exitCode = exitCode
        self.message = message
    }

    /// Malformed input data (exit 65).
    static func dataError(_ message: String) -> CommandFailure { CommandFailure(exitCode: ExitCode.dataError, message) }
    /// An input file that cannot be read (exit 66).
    static func noInput(_ message: String) -> CommandFailure { CommandFailure(exitCode: ExitCode.noInput, message) }
    /// An input file that could not be read: exit 66 when it does not exist, 74 when it exists
    /// but cannot be read (a directory, no permission, an I/O error).
    static func unreadable(_ path: String, _ message: String) -> CommandFailure {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        return CommandFailure(exitCode: exists ? ExitCode.ioError : ExitCode.noInput, message)
    }

    /// A device or service that is not there (exit 69).
    static func unavailable(_ message: String) -> CommandFailure { CommandFailure(exitCode: ExitCode.unavailable, message) }

    var description: String { message }
}
