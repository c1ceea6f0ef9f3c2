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
        stdin: { Array(FileHandle.standardInput.readDataToEndOfFile()) })

    /// Writes `line` and a newline to stdout.
    func print(_ line: String = "") { writeOut(line + "\n") }
    /// Writes `text` as is to stdout.
    func write(_ text: String) { writeOut(text) }
    /// Writes `line` and a newline to stderr.
    func printError(_ line: String) { writeErr(line + "\n") }
    /// Everything on stdin.
    func readStandardInput() throws -> [UInt8] { try readIn() }
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
