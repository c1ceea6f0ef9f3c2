import Foundation
import Testing

/// `gateway serve --ledger postgres://…` waits for a database that is not there yet, with
/// bounded, logged retries, then exits 69 (issue 33, item 5). Port 1 on loopback: nothing listens.
@Suite("gateway serve waits for its PostgreSQL ledger, then exits 69")
struct LedgerWaitTests {
    static let absent = "postgres://tapemu@127.0.0.1:1/tapemu_absent"

    @Test("--ledger-wait 0s: one try, exit 69 (not 74), naming the database without its password")
    func oneTry() async {
        let r = await runCLI(["gateway", "serve", "--ledger", "postgres://tapemu:s3cret@127.0.0.1:1/tapemu_absent",
                              "--ledger-wait", "0s", "--listen", "127.0.0.1:0"])
        #expect(r.status == 69, "\(r.err)")
        #expect(r.err.contains("did not answer within"), "\(r.err)")
        #expect(r.err.contains("(1 attempt)"), "\(r.err)")
        #expect(!r.err.contains("s3cret"))
    }

    @Test("a short --ledger-wait: each retry is one logged line, then exit 69")
    func retriesLogged() async {
        let r = await runCLI(["gateway", "serve", "--ledger", Self.absent, "--ledger-wait", "1s", "--listen", "127.0.0.1:0"])
        #expect(r.status == 69, "\(r.err)")
        // 0.25 s + 0.5 s fit in 1 s: attempts 2 and 3 announced, the third the last.
        #expect(r.err.contains("attempt 2 in"), "\(r.err)")
        #expect(r.err.contains("attempt 3 in"), "\(r.err)")
        #expect(r.err.contains("(3 attempts)"), "\(r.err)")
    }
}
