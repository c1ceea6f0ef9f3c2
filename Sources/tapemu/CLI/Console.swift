import Foundation
import Synchronization

/// Where a command writes and reads: the process's stdout/stderr/stdin, or a capture in tests.
struct Console: Sendable {
    private let writeOut: @Sendable (String) -> Void
    private let writeErr: @Sendable (String) -> Void
    private let readIn: @Sendable () throws -> [UInt8]

    init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void,
         stdin: @escaping @Sendable () throws -> [UInt8]) {
        self.writeOut = out
        self.writeErr = err
        self.readIn = stdin
    }

    /// The process's standard streams.
    static let standard = Console(
        out: { FileHandle.standardOutput.write(Data($0.utf8)) },
        err: { FileHandle.standardError.write(Data($0.utf8)) },
        stdin: { try readAll(FileHandle.standardInput) })

    /// Everything left in `handle`. A descriptor that cannot be read (stdin closed, a
    /// directory) throws instead of trapping as `readDataToEndOfFile()` does.
    static func readAll(_ handle: FileHandle) throws -> [UInt8] {
        do {
            return Array(try handle.readToEnd() ?? Data())
        } catch {
            // Foundation wraps the errno in two NSErrors: say just what read(2) said.
            let posix = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
            throw ReadError(reason: posix.map { String(cString: strerror(Int32($0.code))) } ?? "\(error)")
        }
    }

    /// Why a descriptor could not be read, in one line.
    struct ReadError: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    /// Writes `line` and a newline to stdout.
    func print(_ line: String = "") { writeOut(line + "\n") }
    /// Writes `text` as is to stdout.
    func write(_ text: String) { writeOut(text) }
    /// Writes `line` and a newline to stderr.
    func printError(_ line: String) { writeErr(line + "\n") }
    /// Everything on stdin.
    func readStandardInput() throws -> [UInt8] { try readIn() }

    /// This console, calling `onOutput` whenever something goes to stdout.
    func observingOutput(_ onOutput: @escaping @Sendable () -> Void) -> Console {
        let out = writeOut
        return Console(out: { onOutput(); out($0) }, err: writeErr, stdin: readIn)
    }
}

/// A console that keeps what is written, for tests.
final class CapturedConsole: Sendable {
    private let state = Mutex<(out: String, err: String)>(("", ""))
    let input: [UInt8]

    init(stdin: [UInt8] = []) { self.input = stdin }

    var stdout: String { state.withLock { $0.out } }
    var stderr: String { state.withLock { $0.err } }

    var console: Console {
        let input = self.input
        return Console(out: { s in self.state.withLock { $0.out += s } },
                       err: { s in self.state.withLock { $0.err += s } },
                       stdin: { input })
    }
}
