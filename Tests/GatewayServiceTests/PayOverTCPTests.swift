import Foundation
@testable import GatewayService
import PaymentGateway
import Testing
import TestSupport
@testable import tapemu

/// Runs `tapemu` in-process with a captured console.
func runCLI(_ args: [String]) async -> (status: Int32, out: String, err: String) {
    let captured = CapturedConsole()
    let status = await TapemuCLI.main(["tapemu"] + args, console: captured.console)
    return (status, captured.stdout, captured.stderr)
}

/// `tapemu pay` / `sale` / `resolve` / `charges --gateway URL` against a live service: the
/// terminal's pending store in its own --data-dir, the ledger only in the server's.
@Suite("Payments over TCP through TapToPay and RemoteGateway", .temporaryDirectories)
struct PayOverTCPTests {
    @Test("pay approves and declines over TCP; the server's ledger holds each; the device's directory has no ledger")
    func approveDecline() async throws {
        let live = try LiveService()
        let device = try temporaryDirectory()
        let ok = await runCLI(["pay", "--amount", "1250", "--order-id", "tcp-ok", "--gateway", live.url, "--api-key", live.service.apiKey,
                               "--data-dir", device, "--json"])
        #expect(ok.status == 0, "\(ok.err)")
        let doc = try jsonObject(Array(ok.out.utf8))
        #expect(doc["status"] as? String == "approved")
        #expect(try live.service.gateway.ledger.sales(orderId: "tcp-ok").first?.status == .approved)
        let declined = await runCLI(["pay", "--amount", "1251", "--order-id", "tcp-no", "--gateway", live.url, "--api-key", live.service.apiKey,
                                     "--data-dir", device, "--json"])
        #expect(declined.status == PayCommand.declined, "\(declined.err)")
        #expect(try live.service.gateway.ledger.sales(orderId: "tcp-no").first?.status == .declined)
        #expect(!FileManager.default.fileExists(atPath: device + "/" + Ledger.fileName))
        let charges = await runCLI(["charges", "--order-id", "tcp-ok", "--gateway", live.url, "--api-key", live.service.apiKey, "--data-dir", device, "--json"])
        #expect(charges.status == 0, "\(charges.err)")
        #expect(charges.out.contains("tcp-ok") && charges.out.contains("approved"))
        await live.server.stop()
    }

    /// Each unclear outcome, produced over TCP: exit 4 (outcomeUnknown), and the ledger holds
    /// the payment exactly when the server recorded it; `charges --pending` (seed 000 step 3)
    /// then resolves what was recorded and keeps what was not.
    @Test("every unclear outcome over TCP is outcomeUnknown; seed 000 step 3 over HTTP finds what was recorded",
          arguments: [
              (name: "lost answer (trigger 92)", amount: 1292, flags: [String](), server: ServerFault?.none, recorded: true),
              (name: "server error before commit (trigger 94)", amount: 1294, flags: [], server: nil, recorded: false),
              (name: "no answer", amount: 1200, flags: ["--gateway-fault", "no-answer", "--gateway-timeout", "400ms"], server: nil, recorded: false),
              (name: "slow past the timeout", amount: 1200, flags: ["--gateway-fault", "slow", "--gateway-timeout", "400ms"], server: nil, recorded: true),
              (name: "5xx after commit", amount: 1200, flags: [], server: .errorAfterCommit, recorded: true),
              (name: "close after commit", amount: 1200, flags: [], server: .closeAfterCommit, recorded: true),
              (name: "stall mid-body", amount: 1200, flags: [], server: .stallMidBody, recorded: true),
          ])
    func unclear(_ c: (name: String, amount: Int, flags: [String], server: ServerFault?, recorded: Bool)) async throws {
        let live = try LiveService()
        let device = try temporaryDirectory()
        // Twice: the first try may go over a kept connection, and when the fault kills it libcurl
        // sends the authorisation again (KeptConnectionGatewayTests: that resend is answered with
        // the stored answer); here the resend meets the fault too.
        if let f = c.server { live.service.armFault(f, count: 2) }
        // The token up front: `--gateway-timeout` bounds every request to the gateway, and the
        // token's, before the submission point, must not be what a loaded machine times out.
        let token = try await RemoteGateway(baseURL: live.url).posAuthToken(apiKey: live.service.apiKey, pointOfSaleId: "tapemu-cli")
        let order = "tcp-unclear"
        let r = await runCLI(["pay", "--amount", String(c.amount), "--order-id", order, "--gateway", live.url, "--api-key", live.service.apiKey,
                              "--token", token, "--data-dir", device, "--json"] + c.flags)
        #expect(r.status == PayCommand.outcomeUnknown, "\(c.name): \(r.err)")
        #expect(try live.service.gateway.ledger.sales(orderId: order).count == (c.recorded ? 1 : 0), "\(c.name)")
        let step3 = await runCLI(["charges", "--pending", "--gateway", live.url, "--api-key", live.service.apiKey, "--data-dir", device, "--json"])
        if c.recorded {
            #expect(step3.status == 0, "\(c.name): \(step3.err)")
        } else {
            #expect(step3.status == ExitCode.temporaryFailure, "\(c.name): \(step3.err)")
        }
        #expect(step3.out.contains(order), "\(c.name)")
        await live.server.stop()
    }

    @Test("a gateway that cannot be reached before the submission point: no payment, not an unclear outcome")
    func unreachable() async throws {
        let (live, token) = try await LiveService.stoppedAfterIssuingAToken()
        let device = try temporaryDirectory()
        let r = await runCLI(["pay", "--amount", "1250", "--order-id", "tcp-down", "--gateway", live.url, "--api-key", live.service.apiKey,
                              "--token", token, "--data-dir", device, "--json"])
        #expect(r.status == PayCommand.failedNoPayment, "\(r.err)")
        let noToken = await runCLI(["pay", "--amount", "1250", "--order-id", "tcp-down2", "--gateway", live.url, "--api-key", live.service.apiKey,
                                    "--data-dir", device])
        #expect(noToken.status == ExitCode.unavailable, "\(noToken.err)")
        let bad = await runCLI(["pay", "--amount", "1250", "--order-id", "x", "--gateway", "ftp://nope"])
        #expect(bad.status == ExitCode.usage)
    }

    @Test("seeds 002/003 end to end over HTTP: a sale left unclear is found by the transaction list and reversed once",
          arguments: ["002", "003"])
    func coreRecovery(_ seed: String) async throws {
        let live = try LiveService()
        let device = try temporaryDirectory()
        let order = "core-\(seed)"
        let sale = await runCLI(["sale", "--amount", "1292", "--order-id", order, "--gateway", live.url, "--api-key", live.service.apiKey,
                                 "--data-dir", device, "--json"])
        #expect(sale.status == ExitCode.outcomeUnknown, "\(sale.err)")
        #expect(try live.service.gateway.ledger.sales(orderId: order).first?.transactionCode == .approved)
        let resolve = await runCLI(["resolve", "--seed", seed, "--gateway", live.url, "--api-key", live.service.apiKey, "--data-dir", device, "--json"])
        #expect(resolve.status == 0, "\(resolve.err)")
        #expect(resolve.out.contains(order))
        let stored = try #require(try live.service.gateway.ledger.sales(orderId: order).first)
        #expect(stored.reversed)
        #expect(stored.transactionCode == .cancelled)
        // Running it again reverses nothing twice: the record left the device.
        let again = await runCLI(["resolve", "--seed", seed, "--gateway", live.url, "--api-key", live.service.apiKey, "--data-dir", device, "--json"])
        #expect(again.status == 0)
        #expect(!again.out.contains(order))
        await live.server.stop()
    }
}
