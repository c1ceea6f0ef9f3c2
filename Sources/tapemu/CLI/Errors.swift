/// A problem with how the command line was written: printed as `tapemu: <reason>` and the
/// command's usage on stderr, exit status 64 (sysexits `EX_USAGE`).
struct UsageError: Error, Sendable, CustomStringConvertible {
    var reason: String
    init(_ reason: String) { self.reason = reason }
    var description: String { reason }
}

/// Exit statuses, after sysexits(3) where one fits.
enum ExitCode {
    static let success: Int32 = 0
    /// Something failed that has no more specific status.
    static let failure: Int32 = 1
    /// `EX_USAGE`: the command line is wrong.
    static let usage: Int32 = 64
    /// `EX_DATAERR`: the input data is malformed (bad hex, truncated TLV, absurd lengths).
    static let dataError: Int32 = 65
    /// `EX_NOINPUT`: an input file does not exist or cannot be read.
    static let noInput: Int32 = 66
    /// `EX_UNAVAILABLE`: a service or device is not available (no reader, pcscd not running).
    static let unavailable: Int32 = 69
    /// `EX_SOFTWARE`: an internal error.
    static let software: Int32 = 70
    /// `EX_IOERR`: an input/output error.
    static let ioError: Int32 = 74
    /// `EX_TEMPFAIL`: a temporary failure; trying again may work (timeouts).
    static let temporaryFailure: Int32 = 75
}

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
    /// A device or service that is not there (exit 69).
    static func unavailable(_ message: String) -> CommandFailure { CommandFailure(exitCode: ExitCode.unavailable, message) }

    var description: String { message }
}
