public import Foundation

/// Runs the program at `path` with `arguments` to its end: `stdin` on its standard input (then
/// closed), `environment` added to this process's; its exit status and what it printed on
/// stdout and stderr (with `mergingStandardError`, both in `stdout`, as a terminal shows them,
/// and `stderr` empty). Blocks the calling thread until the program ends.
public func runToEnd(_ path: String, _ arguments: [String], stdin: String = "", environment: [String: String] = [:],
                     mergingStandardError: Bool = false) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, added in added }
    let input = Pipe(), output = Pipe(), errors = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = mergingStandardError ? output : errors
    try process.run()
    if !stdin.isEmpty { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = mergingStandardError ? Data() : errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
}
