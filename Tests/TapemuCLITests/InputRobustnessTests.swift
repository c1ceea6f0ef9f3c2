import Foundation
import Synchronization
import PaymentFlow
import Testing
@testable import tapemu
import TestSupport

@Suite("tapemu: stdin that cannot be read", .temporaryDirectories)
struct StdinRobustnessTests {
    @Test("an unreadable descriptor throws instead of trapping")
    func unreadableDescriptorThrows() throws {
        // A directory opens for reading but read(2) fails (EISDIR), as a closed stdin fails (EBADF).
        let dir = try temporaryDirectory()
        let handle = try #require(FileHandle(forReadingAtPath: dir))
        defer { try? handle.close() }
        #expect(throws: (any Error).self) { try Console.readAll(handle) }
    }

    @Test("a readable descriptor gives every byte")
    func readableDescriptor() throws {
        let dir = try temporaryDirectory()
        let path = dir + "/in.txt"
        try Data("9000\n".utf8).write(to: URL(fileURLWithPath: path))
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        #expect(try Console.readAll(handle) == Array("9000\n".utf8))
    }

    @Test("decoding from a stdin that fails is one line on stderr and exit 74",
          arguments: [["tlv", "decode", "-"], ["apdu", "decode", "-"], ["apdu", "decode", "--response", "-"]])
    func failingStdin(args: [String]) async {
        struct Closed: Error {}
        let err = Mutex("")
        let console = Console(out: { _ in }, err: { s in err.withLock { $0 += s } }, stdin: { throw Closed() })
        let status = await TapemuCLI.main(["tapemu"] + args, console: console)
        let text = err.withLock { $0 }
        #expect(status == ExitCode.ioError)
        #expect(text.hasPrefix("tapemu: cannot read stdin"))
        #expect(text.split(separator: "\n").count == 1)
    }
}

@Suite("tapemu: online PIN without a terminal", .temporaryDirectories)
struct PINWithoutTerminalTests {
    @Test("the PIN entry is cancelled with one line saying to use --pin")
    func noTerminalSaysUsePin() async throws {
        let captured = CapturedConsole()
        let provider = TerminalPINProvider(console: captured.console, hasTerminal: { false })
        let pin = try await provider.requestPIN(PINRequest(amount: 6000, currency: "EUR", maskedPAN: "411111******1111"))
        #expect(pin == nil)
        #expect(captured.stderr.hasPrefix("tapemu: "))
        #expect(captured.stderr.contains("--pin"))
        #expect(captured.stderr.split(separator: "\n").count == 1)
    }

    /// A PIN entry error once the card was read is seed 000's unclear outcome (exit 4; it was
    /// `cancelled`, exit 3): the SDK cannot tell it from one after the request left.
    @Test("tapemu pay with an online-PIN card and no terminal says why the PIN entry failed")
    func payWithoutTerminal() async throws {
        guard isatty(STDIN_FILENO) == 0 else { return }   // only meaningful without a terminal
        let dir = try temporaryDirectory()
        let r = await runCLI(["pay", "--amount", "6000", "--order-id", "pin-none", "--card", "visa-online-pin",
                              "--data-dir", dir])
        #expect(r.status == 4)
        #expect(r.err.contains("outcomeUnknown"))
        #expect(r.err.contains("give it with --pin"))
    }
}

@Suite("tapemu: stdout or stderr that cannot be written", .temporaryDirectories)
struct OutputRobustnessTests {
    @Test("a failed write is reported, not a trap")
    func failedWrites() throws {
        let dir = try temporaryDirectory()
        let path = dir + "/read-only.txt"
        try Data().write(to: URL(fileURLWithPath: path))
        // Opened for reading only: write(2) fails with EBADF, as on a closed or full stdout.
        let readOnly = try #require(FileHandle(forReadingAtPath: path))
        defer { try? readOnly.close() }
        let failures = Mutex<[String]>([])
        let console = Console.fileHandles(out: readOnly, err: readOnly, input: readOnly,
                                          onOutputFailure: { e in failures.withLock { $0.append("\(e)") } })
        console.print("approved")
        console.printError("tapemu: progress")
        #expect(failures.withLock { $0.count } == 1)
    }
}

@Suite("tapemu tlv decode: values that fit no integer", .temporaryDirectories)
struct HostileTLVValueTests {
    /// Issue 18: this input trapped (exit 132) converting the 20-digit currency code to an Int.
    @Test("a 20-digit currency code beside an amount decodes, both called malformed")
    func hugeCurrencyCode() async throws {
        let r = await runCLI(["tlv", "decode", "8101ff5f2a0a10000000000000000000"])
        #expect(r.status == ExitCode.success)
        #expect(r.out.contains("81 Amount, Authorised (Binary) [1] FF = malformed"))
        #expect(r.out.contains("5F2A Transaction Currency Code [10] 10000000000000000000 = malformed (expected a 3-digit BCD code)"))

        let four = await runCLI(["tlv", "decode", "--json", "81040000 00FF 5F2A0A10000000000000000000"])
        #expect(four.status == ExitCode.success)
        let nodes = try jsonRows(four.out)
        let decoded = try #require(nodes.first?["decoded"] as? [String: Any])
        #expect(decoded["text"] as? String == "2.55 (currency code 5F2A malformed; 2 decimals assumed)")
        #expect((decoded["fields"] as? [String: Any])?["currencyMalformed"] as? Bool == true)
    }
}
