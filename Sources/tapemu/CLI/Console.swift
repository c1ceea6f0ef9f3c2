import Foundation
import Synchronization

/// Where a command writes and reads: the process's stdout/stderr/stdin, or a capture in tests.
struct Console: Sendable {
    private let writeOut: @Sendable (String) -> Void
    private let writeErr: @Sendable (String) -> Void
    private let readIn: @Sendable () throws -> [UInt8]
    private let outputHealthy: @Sendable () -> Bool
    private let readChunk: @Sendable (Int) throws -> [UInt8]

    /// `stdinChunk(n)` returns up to `n` more bytes of stdin, empty at its end (default: all of
    /// `stdin` at once, then nothing).
    init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void,
         stdin: @escaping @Sendable () throws -> [UInt8], outputHealthy: @escaping @Sendable () -> Bool = { true },
         stdinChunk: (@Sendable (Int) throws -> [UInt8])? = nil) {
        self.writeOut = out
        self.writeErr = err
        self.readIn = stdin
        self.outputHealthy = outputHealthy
        if let stdinChunk {
            self.readChunk = stdinChunk
        } else {
            let done = Mutex(false)
            self.readChunk = { _ in
                if done.withLock({ d in defer { d = true }; return d }) { return [] }
                return try stdin()
            }
        }
    }

    /// Whether everything written to stdout so far went through (stdout is written unbuffered,
    /// so what went through is in the pipe or file): the moment a result counts as handed over.
    var outputWritten: Bool { outputHealthy() }

    /// The process's standard streams. A stream that cannot be written (closed, a full disk)
    /// does not trap as `FileHandle.write(_:)` does: a failed stdout is remembered, so the
    /// process can exit 74 instead of 0 with its output lost (see ``standardOutputFailed``).
    static let standard = fileHandles(out: .standardOutput, err: .standardError, input: .standardInput,
                                      onOutputFailure: { e in stdoutFailure.withLock { $0 = $0 ?? e } },
                                      outputHealthy: { stdoutFailure.withLock { $0 == nil } })

    /// A console over file handles; writing never traps: a failed stdout write goes to
    /// `onOutputFailure`, a failed stderr write is dropped.
    static func fileHandles(out: FileHandle, err: FileHandle, input: FileHandle,
                            onOutputFailure: @escaping @Sendable (any Error) -> Void,
                            outputHealthy: @escaping @Sendable () -> Bool = { true }) -> Console {
        Console(out: { text in
                    do { try out.write(contentsOf: Data(text.utf8)) } catch { onOutputFailure(error) }
                },
                err: { try? err.write(contentsOf: Data($0.utf8)) },
                stdin: { try readAll(input) }, outputHealthy: outputHealthy,
                stdinChunk: { n in
                    do {
                        return Array(try input.read(upToCount: n) ?? Data())
                    } catch {
                        throw ReadError(reason: ReadError.describing(error))
                    }
                })
    }

    private static let stdoutFailure = Mutex<(any Error)?>(nil)

    /// Why writing to the process's stdout failed, if it did.
    static var standardOutputFailed: (any Error)? { stdoutFailure.withLock { $0 } }

    /// Everything left in `handle`. A descriptor that cannot be read (stdin closed, a
    /// directory) throws instead of trapping as `readDataToEndOfFile()` does.
    static func readAll(_ handle: FileHandle) throws -> [UInt8] {
        do {
            return Array(try handle.readToEnd() ?? Data())
        } catch {
            throw ReadError(reason: ReadError.describing(error))
        }
    }

    /// Why a descriptor could not be read, in one line.
    struct ReadError: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }

        /// Foundation wraps the errno in two NSErrors: say just what the system call said.
        static func describing(_ error: any Error) -> String {
            let posix = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
            return posix.map { String(cString: strerror(Int32($0.code))) } ?? "\(error)"
        }
    }

    /// Writes `line` and a newline to stdout.
    func print(_ line: String = "") { writeOut(line + "\n") }
    /// Writes `text` as is to stdout.
    func write(_ text: String) { writeOut(text) }
    /// Writes `line` and a newline to stderr.
    func printError(_ line: String) { writeErr(line + "\n") }
    /// Everything on stdin.
    func readStandardInput() throws -> [UInt8] { try readIn() }
    /// Up to `count` more bytes of stdin; empty at its end.
    func readStandardInputChunk(_ count: Int) throws -> [UInt8] { try readChunk(count) }

    /// This console, calling `onOutput` whenever something goes to stdout.
    func observingOutput(_ onOutput: @escaping @Sendable () -> Void) -> Console {
        let out = writeOut
        return Console(out: { onOutput(); out($0) }, err: writeErr, stdin: readIn, outputHealthy: outputHealthy,
                       stdinChunk: readChunk)
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
