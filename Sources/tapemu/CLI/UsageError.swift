import Foundation

/// A problem with how the command line was written: printed as `tapemu: <reason>` and the
/// command's usage on stderr, exit status 64 (sysexits `EX_USAGE`).
struct UsageError: Error, Sendable, CustomStringConvertible {
    var reason: String
    init(_ reason: String) { self.reason = reason }
    var description: String { reason }
}
