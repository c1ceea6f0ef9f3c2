import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A child process on a pseudo-terminal: what it writes is collected as it comes, and a test
/// waits for a text to show (a real event: each read of the terminal wakes the waiter), never
/// for a time.
final class PseudoTerminalProcess: @unchecked Sendable {
    private let process = Process()
    private let master: Int32
    private let output = NSCondition()
    private var text = ""
    private var closed = false

    init(_ path: String, _ arguments: [String]) throws {
        // /dev/ptmx: unlock the new terminal (TIOCSPTLCK) and ask its number (TIOCGPTN), as
        // unlockpt(3) and ptsname(3) do on Linux (Glibc's module does not export those).
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0, number: UInt32 = 0
        guard master >= 0, ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else {
            throw POSIXError(.EIO)
        }
        let name = "/dev/pts/\(number)"
        var size = winsize(ws_row: 50, ws_col: 200, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(master, UInt(TIOCSWINSZ), &size)
        guard let slave = FileHandle(forUpdatingAtPath: name) else { throw POSIXError(.ENOENT) }
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["TERM"] = "xterm"
        process.environment = env
        process.standardInput = slave
        process.standardOutput = slave
        process.standardError = slave
        try process.run()
        try slave.close()
        let fd = master
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(fd, &buffer, buffer.count)
                output.lock()
                if n <= 0 { closed = true } else { text += String(decoding: buffer[..<n], as: UTF8.self) }
                output.broadcast()
                output.unlock()
                if n <= 0 { return }
            }
        }
    }

    /// Everything written so far.
    var transcript: String { output.lock(); defer { output.unlock() }; return text }

    /// Waits until `needle` shows `count` times (at most `limit`, a guard against a hang).
    @discardableResult
    func waitFor(_ needle: String, count: Int = 1, limit: Duration = .seconds(30)) -> Bool {
        let deadline = Date().addingTimeInterval(Double(limit.components.seconds))
        output.lock()
        defer { output.unlock() }
        while text.components(separatedBy: needle).count - 1 < count {
            if closed || !output.wait(until: deadline) { return false }
        }
        return true
    }

    /// Types `keys` (as a person would: the terminal's line discipline and libedit see them).
    func type(_ keys: String) {
        let bytes = Array(keys.utf8)
        _ = bytes.withUnsafeBufferPointer { write(master, $0.baseAddress, $0.count) }
    }

    /// The exit status, once the terminal has closed.
    func finish() -> Int32 {
        process.waitUntilExit()
        close(master)
        return process.terminationStatus
    }
}

/// Issue 36, item 4: `transmit --interactive`, a prompt with line editing and history.
@Suite("tapemu transmit --interactive", .temporaryDirectories)
struct TransmitInteractiveTests {
    @Test("the prompt sends each line, explains the answer, recalls a line with the up arrow, edits it, and ends on exit")
    func prompt() throws {
        let tapemu = try tapemuExecutable()
        let term = try PseudoTerminalProcess(tapemu.path, ["transmit", "--interactive"])
        #expect(term.waitFor("apdu> "), "\(term.transcript)")
        term.type(TransmitCommandTests.selectPPSE + "\r")
        #expect(term.waitFor("9000 success"), "\(term.transcript)")
        #expect(term.waitFor("2PAY.SYS.DDF01"))
        #expect(term.waitFor("apdu> ", count: 2))
        // A line that is not an APDU is said, and the prompt comes back.
        term.type("zz\r")
        #expect(term.waitFor("line 2: not an APDU in hex"), "\(term.transcript)")
        #expect(term.waitFor("apdu> ", count: 3))
        // Up twice: the SELECT PPSE again, from the history.
        term.type("\u{1B}[A\u{1B}[A\r")
        #expect(term.waitFor("9000 success", count: 2), "\(term.transcript)")
        #expect(term.waitFor("apdu> ", count: 4))
        // Editing: type the SELECT of the Visa AID with a wrong last byte, go back with Ctrl-B
        // (the left arrow), delete it, put the right one.
        let select = TransmitCommandTests.selectVisa
        term.type(String(select.dropLast(2)) + "FF" + "\u{02}\u{02}\u{04}\u{04}" + "00\r")
        #expect(term.waitFor("> \(select)  SELECT"), "\(term.transcript)")
        #expect(term.waitFor("apdu> ", count: 5))
        term.type("exit\r")
        #expect(term.finish() == 0, "\(term.transcript)")
        #expect(term.transcript.components(separatedBy: "> \(select)  SELECT").count - 1 == 1, "\(term.transcript)")
    }

    @Test("--interactive takes no APDU arguments, -f or --json", arguments: [
        ["transmit", "-i", TransmitCommandTests.selectPPSE], ["transmit", "-i", "-f", "x"], ["transmit", "-i", "--json"],
    ])
    func usage(_ args: [String]) async {
        let r = await runCLI(args)
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("tapemu: --interactive reads the APDUs at its prompt") || r.err.contains("cannot be used together"), "\(r.err)")
    }
}
