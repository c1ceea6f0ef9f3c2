import BERTLV
import PaymentRules
import Foundation
import PaymentGateway
import Testing
@testable import tapemu
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 32: `tapemu pay` throws seed 000's error — a card read error, a PIN entry error and a
/// Ctrl-C once the card is being read are `outcomeUnknown` (exit 4), before the submission point
/// or after it — and prints the truth the SDK cannot know beside it (`groundTruth`). Run with the
/// built binary (stdin /dev/null: no terminal for an online PIN; a real SIGINT).
@Suite("tapemu pay: seed 000's unclear outcome and groundTruth", .temporaryDirectories)
struct PayUnclearOutcomeTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var args: [String]
        var status: Int32
        var code: String
        var submitted: Bool
        var charged: Bool
        var testDescription: String { args.joined(separator: " ") + " → \(status) \(code)" }
    }

    static let cases: [Case] = [
        // Never answers GPO: the APDU deadline (2 s) runs out while the card is read.
        Case(args: ["--card", "mute"], status: 4, code: "outcomeUnknown", submitted: false, charged: false),
        // Torn after the GPO answer: the authorisation had left early, and was approved.
        Case(args: ["--card", "torn"], status: 4, code: "outcomeUnknown", submitted: true, charged: true),
        // The card asks for its online PIN and there is no terminal to enter it on.
        Case(args: ["--card", "visa-online-pin", "--amount", "6000"], status: 4, code: "outcomeUnknown", submitted: false, charged: false),
        // The card's own offline decline.
        Case(args: ["--card", "offline-decline"], status: 3, code: "paymentFailed.cardDeclined", submitted: false, charged: false),
    ]

    @Test(arguments: cases)
    func exitAndGroundTruth(c: Case) async throws {
        let dir = try temporaryDirectory()
        let args = ["pay", "--order-id", "u-1", "--data-dir", dir, "--json"]
            + (c.args.contains("--amount") ? c.args : c.args + ["--amount", "1000"])
        let child = try TapemuChild(args)
        let r = await child.finish()
        #expect(r.status == c.status, "\(r.stderr)")
        let doc = try jsonObject(r.stdout)
        #expect(doc["code"] as? String == c.code)
        #expect(doc["exitCode"] as? Int == Int(c.status))
        let truth = try #require(doc["groundTruth"] as? [String: Any], "\(r.stdout)")
        #expect(truth["submitted"] as? Bool == c.submitted)
        #expect(truth["charged"] as? Bool == c.charged)
        if c.code == "outcomeUnknown" {
            #expect(doc["orderId"] as? String == "u-1")
            #expect((doc["message"] as? String)?.contains("Do not retry") == true)
        }
        // Every outcomeUnknown leaves a record for recovery; a typed failure leaves none.
        let pending = await runCLI(["pending", "--all", "--json", "--data-dir", dir])
        let records = try jsonRows(pending.out)
        #expect(records.map { $0["orderId"] as? String } == (c.status == 4 ? ["u-1"] : []))
        let charges = await runCLI(["charges", "--order-id", "u-1", "--json", "--data-dir", dir])
        let items = try #require(try jsonObject(charges.out)["items"] as? [[String: Any]])
        #expect(items.count == (c.charged ? 1 : 0))
    }

    /// The human output says it on a line of its own, and the recovery of an unsent attempt goes as
    /// the seed's process does: the look-up finds nothing, the record stays (exit 75), a person
    /// closes it.
    @Test func humanLineAndRecovery() async throws {
        let dir = try temporaryDirectory()
        let r = try await TapemuChild(["pay", "--amount", "1000", "--order-id", "u-2", "--card", "mute", "--data-dir", dir]).finish()
        #expect(r.status == 4)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("tapemu: outcomeUnknown: ") }, "\(r.stderr)")
        #expect(lines.contains { $0 == "tapemu: ground truth (tapemu only; the SDK cannot know it): submitted no, charged no" },
                "\(r.stderr)")

        let recovery = await runCLI(["charges", "--pending", "--json", "--data-dir", dir])
        #expect(recovery.status == 75, "\(recovery.err)")
        #expect(recovery.out.contains("u-2"))
        let close = await runCLI(["pending", "close", "u-2", "--reason", "support: not charged", "--data-dir", dir])
        #expect(close.status == 0, "\(close.err)")
        #expect(await runCLI(["charges", "--pending", "--data-dir", dir]).status == 0)

        // An approval prints its line on stdout, after the result.
        let ok = await runCLI(["pay", "--amount", "1000", "--order-id", "u-3", "--data-dir", dir])
        #expect(ok.status == 0)
        #expect(ok.out.split(separator: "\n").last == "ground truth (tapemu only; the SDK cannot know it): submitted yes, charged yes")
    }

    /// Ctrl-C once the card is being read (the mute card holds GPO): the user's cancel can no
    /// longer tell whether the request left — outcomeUnknown, exit 4 (it was `cancelled`, exit 3).
    @Test func ctrlCWhileTheCardIsRead() async throws {
        let dir = try temporaryDirectory()
        let child = try TapemuChild(["pay", "--amount", "1000", "--order-id", "u-4", "--card", "mute", "--data-dir", dir, "--json"])
        #expect(await child.waitForStderr(containing: "tapemu: reading the card"))
        child.signal(SIGINT)
        let r = await child.finish()
        #expect(r.status == 4, "\(r.stderr)")
        let doc = try jsonObject(r.stdout)
        #expect(doc["error"] as? String == "outcomeUnknown")
        #expect((doc["reason"] as? String)?.contains("the user cancelled while the card was being read") == true, "\(r.stdout)")
        let truth = try #require(doc["groundTruth"] as? [String: Any])
        #expect(truth["submitted"] as? Bool == false && truth["charged"] as? Bool == false)
        let pending = await runCLI(["pending", "--all", "--json", "--data-dir", dir])
        #expect(pending.out.contains("u-4"))
    }

    /// An order whose only payment is an authorisation the merchant's backend made (MONEI
    /// `transactionType: AUTH`, AUTHORIZED: funds held, nothing captured) for the same card and
    /// amount: a terminal's sale of it is refused (an order conflict: unclear for the MONEI face,
    /// a reply that is not a clear approval), and nothing is charged. It was answered with the
    /// authorisation as a replay: APPROVED, exit 0, groundTruth charged:true — for funds only
    /// held, which the merchant's cancel then released.
    @Test func saleOfAnOrderHeldAsAnAuthorisation() async throws {
        let dir = try temporaryDirectory()
        do {
            let gateway = try EmbeddedGateway(dataDirectory: dir)
            var auth = AuthorisationRequest(orderId: "u-5", amount: 1000, currency: "EUR",
                                            card: CardData(pan: try #require(PAN("4761739001010010")), expiry: "3012"))
            auth.capture = false
            auth.cardPresent = false
            let held = try await gateway.authorize(auth)
            #expect(try gateway.ledger.payment(paymentId: held.paymentId)?.state == .authorized)
        }
        let r = try await TapemuChild(["pay", "--amount", "1000", "--order-id", "u-5", "--card", "visa-qvsdc",
                                       "--data-dir", dir, "--json"]).finish()
        #expect(r.status == 4, "\(r.stdout) \(r.stderr)")
        let doc = try jsonObject(r.stdout)
        #expect(doc["code"] as? String == "outcomeUnknown", "\(r.stdout)")
        let truth = try #require(doc["groundTruth"] as? [String: Any], "\(r.stdout)")
        #expect(truth["submitted"] as? Bool == true && truth["charged"] as? Bool == false, "\(r.stdout)")
        // Recovery does not take the merchant's authorisation for this attempt's sale: the
        // record stays, reported as another payment (it was removed as "authorized").
        let recovery = await runCLI(["charges", "--pending", "--json", "--data-dir", dir])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(recovery.out.utf8)) as? [[String: Any]], "\(recovery.out) \(recovery.err)")
        #expect(rows.map { $0["finding"] as? String } == ["otherPayment"], "\(recovery.out)")
        let pending = await runCLI(["pending", "--all", "--json", "--data-dir", dir])
        #expect(pending.out.contains("u-5"), "\(pending.out)")
        let ledger = try Ledger(directory: dir, access: .readOnly)
        #expect(try ledger.sales(orderId: "u-5").map(\.state) == [.authorized])
    }
}
