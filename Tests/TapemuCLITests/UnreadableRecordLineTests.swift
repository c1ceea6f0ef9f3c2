import DeviceStore
import Foundation
import PaymentGateway
import Testing
@testable import tapemu
import TestSupport
import Storage

@Suite("An unreadable record's line shows no made-up amount", .temporaryDirectories)
struct UnreadableRecordLineTests {
    /// A record whose body no longer reads back has no amount, currency or card: `resolve` and
    /// `charges --pending` named it "(0 , card unknown)", as if a sale of 0 had been attempted.
    @Test(arguments: [["resolve"], ["charges", "--pending"]])
    func anUnreadableRecordSaysItsAmountAndCardAreUnreadable(_ command: [String]) async throws {
        let dir = try temporaryDirectory()
        let paid = await runCLI(["pay", "--amount", "1000", "--order-id", "fine-1", "--data-dir", dir])
        #expect(paid.status == 0, "\(paid.err)")
        let store = try PendingPaymentStore(dataDirectory: dir, access: .existing)
        do {
            let c = try SQLiteConnection(path: store.path, busyTimeout: .seconds(1))
            try c.run("INSERT INTO attempts (attempt_id, order_id, state, body, created_at) VALUES ('00000000-0000-0000-0000-0000000000AA', 'bad-1', 'pending', '{not json', 0)")
        }
        let r = await runCLI(command + ["--data-dir", dir])
        #expect(r.status == 74, "\(r.out)\n\(r.err)")
        #expect(r.out.contains("order bad-1 (amount and card unreadable)"), "\(r.out)")
        #expect(!r.out.contains("(0 ,"), "\(r.out)")
    }
}
