import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The built `tapemu` run as a child process, for the tests that signal it (Ctrl-C) at a moment
/// it reports on stderr: ``waitForStderr(containing:)`` waits for that line (a real event, never a
/// timer), ``signal(_:)`` sends the signal, ``finish()`` collects the exit status and output.
/// Stdin is /dev/null (no terminal: an online PIN is never typed).
public final class TapemuChild: @unchecked Sendable {
    // Process is not Sendable; this wrapper touches it from one task at a time.
    private let process = Process()
    private let output = Pipe(), errors = Pipe()
    private final class Stderr: Sendable {
        let state = Mutex<(text: String, ended: Bool, waiters: [(String, CheckedContinuation<Bool, Never>)])>(("", false, []))
    }
    private let stderrText = Stderr()
    private let stderrReader: Thread

    public init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = try tapemuExecutable()
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        let handle = errors.fileHandleForReading
        let state = stderrText
        stderrReader = Thread {
            while true {
                let chunk = handle.availableData   // blocks until data or end of file
                state.state.withLock { s in
                    if chunk.isEmpty { s.ended = true } else { s.text += String(decoding: chunk, as: UTF8.self) }
                }
                Self.wake(state)
                if chunk.isEmpty { return }
            }
        }
        try process.run()
        stderrReader.start()
    }

    /// Resumes every waiter whose text arrived (true) or whose stream ended without it (false).
    private static func wake(_ state: Stderr) {
        let resume = state.state.withLock { s -> [(CheckedContinuation<Bool, Never>, Bool)] in
            var out: [(CheckedContinuation<Bool, Never>, Bool)] = []
            var keep: [(String, CheckedContinuation<Bool, Never>)] = []
            for (needle, c) in s.waiters {
                if s.text.contains(needle) { out.append((c, true)) } else if s.ended { out.append((c, false)) } else { keep.append((needle, c)) }
            }
            s.waiters = keep
            return out
        }
        for (c, found) in resume { c.resume(returning: found) }
    }

    /// Waits until stderr holds `text` (true), or ends without it (false).
    public func waitForStderr(containing text: String) async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            stderrText.state.withLock { $0.waiters.append((text, c)) }
            Self.wake(stderrText)
        }
    }

    public func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    /// Waits for the process to end: its status (the signal's number + 128 when killed), stdout and stderr.
    public func finish() async -> (status: Int32, stdout: String, stderr: String) {
        let out = output.fileHandleForReading
        let process = self.process
        let (status, stdout) = await withCheckedContinuation { (c: CheckedContinuation<(Int32, String), Never>) in
            Thread.detachNewThread {
                let data = out.readDataToEndOfFile()
                process.waitUntilExit()
                let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
                c.resume(returning: (status, String(decoding: data, as: UTF8.self)))
            }
        }
        _ = await waitForStderr(containing: "\u{0}never\u{0}")   // until stderr has ended
        return (status, stdout, stderrText.state.withLock { $0.text })
    }

    deinit { if process.isRunning { process.terminate() } }
}
