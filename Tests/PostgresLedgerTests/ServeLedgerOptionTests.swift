import Foundation
import Testing
@testable import tapemu

/// `tapemu gateway serve --ledger`: what it accepts and how it fails.
@Suite("gateway serve --ledger")
struct ServeLedgerOptionTests {
    static func run(_ args: [String]) async -> (status: Int32, out: String, err: String) {
        let captured = CapturedConsole()
        let status = await TapemuCLI.main(["tapemu"] + args, console: captured.console)
        return (status, captured.stdout, captured.stderr)
    }

    @Test("not a postgres:// URL: a usage error naming the form")
    func notAURL() async {
        let r = await Self.run(["gateway", "serve", "--listen", "127.0.0.1:0", "--ledger", "/var/lib/ledger"])
        #expect(r.status == ExitCode.usage)
        #expect(r.err.contains("postgres://USER@HOST:PORT/DB"))
    }

    @Test("a database that cannot be reached: exit 69 once --ledger-wait is over, the password never printed")
    func unreachable() async {
        // The wait itself: LedgerWaitTests. Here one try.
        let r = await Self.run(["gateway", "serve", "--listen", "127.0.0.1:0", "--ledger-wait", "0s",
                                "--ledger", "postgres://u:hunter2@127.0.0.1:1/none?connect_timeout=2"])
        #expect(r.status == ExitCode.unavailable)
        #expect(r.err.contains("did not answer within"))
        #expect(!r.err.contains("hunter2") && !r.out.contains("hunter2"))
    }

    @Test("the help names --ledger")
    func help() async {
        let r = await Self.run(["gateway", "serve", "--help"])
        #expect((r.out + r.err).contains("--ledger <url>"))
    }
}
