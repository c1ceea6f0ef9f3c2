import Foundation
import Testing
import VirtualCard
@testable import tapemu
import TestSupport

/// Runs `tapemu` in-process with a captured console.
func runCLI(_ args: [String]) async -> (status: Int32, out: String, err: String) {
    let captured = CapturedConsole()
    let status = await TapemuCLI.main(["tapemu"] + args, console: captured.console)
    return (status, captured.stdout, captured.stderr)
}


func jsonObject(_ text: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
    return try #require(object as? [String: Any])
}

/// `text` as a JSON array of objects (what `--json` prints for a list of rows).
func jsonRows(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]] {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
    return try #require(object as? [[String: Any]], sourceLocation: sourceLocation)
}

/// Every full PAN of the built-in virtual cards: none may ever be printed.
let fullPANs: [String] = CardProfiles.all.flatMap { p in p.applications.map { $0.pan.digits } }

@Suite("tapemu pay and charges", .temporaryDirectories)
struct PayCommandTests {
    @Test("an approved payment exits 0 and prints the seed's fields as JSON")
    func approved() async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["pay", "--amount", "1250", "--order-id", "cli-ok", "--data-dir", dir, "--json"])
        #expect(r.status == 0)
        let doc = try jsonObject(r.out)
        #expect(doc["status"] as? String == "approved")
        #expect(doc["orderId"] as? String == "cli-ok")
        #expect(doc["cardBrand"] as? String == "visa")
        #expect(doc["last4"] as? String == "0010")
        #expect((doc["paymentId"] as? String)?.isEmpty == false)

        let charges = await runCLI(["charges", "--order-id", "cli-ok", "--data-dir", dir, "--json"])
        #expect(charges.status == 0)
        let items = try #require(try jsonObject(charges.out)["items"] as? [[String: Any]])
        #expect(items.count == 1)
        #expect(items.first?["id"] as? String == doc["paymentId"] as? String)
    }

    @Test("a decline is a result with exit 2, not an error")
    func declined() async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["pay", "--amount", "1051", "--order-id", "cli-decline", "--data-dir", dir, "--json"])
        #expect(r.status == 2)
        let doc = try jsonObject(r.out)
        #expect(doc["status"] as? String == "declined")
        #expect((doc["statusMessage"] as? String)?.isEmpty == false)
    }

    @Test("a gateway that never answers is outcome unknown, exit 4")
    func outcomeUnknown() async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["pay", "--amount", "1000", "--order-id", "cli-unknown", "--data-dir", dir,
                              "--gateway-fault", "server-error", "--json"])
        #expect(r.status == 4)
        let doc = try jsonObject(r.out)
        #expect(doc["error"] as? String == "outcomeUnknown")
        #expect(doc["orderId"] as? String == "cli-unknown")
        // The cause the seed's error cannot carry is on stderr, and in the JSON.
        #expect(r.err.contains("tapemu: failed: serverError"))
        #expect((doc["reason"] as? String)?.hasPrefix("serverError") == true)
    }

    @Test("a failure with no payment exits 3 with its code", arguments: [
        (["--amount", "0"], "invalidArgument"),
        (["--amount", "9999999999999"], "invalidArgument"),
        (["--amount", "1000", "--card", "offline-decline"], "paymentFailed.cardDeclined"),
        (["--amount", "1000", "--location", "denied"], "locationDenied"),
        (["--amount", "1000", "--terms", "decline"], "termsDeclined"),
        (["--amount", "1000", "--token", "garbage"], "invalidToken"),
    ])
    func failedNoPayment(extra: [String], code: String) async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["pay", "--order-id", "cli-fail", "--data-dir", dir, "--json"] + extra)
        #expect(r.status == 3)
        #expect(try jsonObject(r.out)["code"] as? String == code)
        let charges = await runCLI(["charges", "--order-id", "cli-fail", "--data-dir", dir, "--json"])
        #expect((try jsonObject(charges.out)["items"] as? [Any])?.isEmpty == true)
    }

    @Test("an order id the gateway would refuse fails before the card, not as outcome unknown",
          arguments: ["two\nlines", String(repeating: "y", count: 129)])
    func invalidOrderId(orderId: String) async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(["pay", "--amount", "1000", "--order-id", orderId, "--data-dir", dir, "--json"])
        #expect(r.status == 3)
        #expect(try jsonObject(r.out)["code"] as? String == "invalidArgument")
        let badUrl = await runCLI(["pay", "--amount", "1000", "--order-id", "cli-url", "--callback-url", "not a url",
                                   "--data-dir", dir, "--json"])
        #expect(badUrl.status == 3)
        let pending = await runCLI(["pending", "--all", "--data-dir", dir, "--json"])
        #expect((try JSONSerialization.jsonObject(with: Data(pending.out.utf8)) as? [Any])?.isEmpty == true)
    }

    @Test("a query of a --data-dir that does not exist is exit 66, and creates nothing",
          arguments: [["charges", "--order-id", "q-1"], ["gateway", "webhooks"]])
    func queryOfAMissingDataDir(args: [String]) async throws {
        let missing = try temporaryDirectory() + "/typo"
        let r = await runCLI(args + ["--data-dir", missing, "--json"])
        #expect(r.status == 66)
        #expect(r.err.hasPrefix("tapemu: no data in \(missing)"))
        #expect(try jsonObject(r.out)["error"] != nil)
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test("usage errors exit 64 with one reason line and the usage", arguments: [
        ["pay", "--order-id", "x"],
        ["pay", "--amount", "ten", "--order-id", "x"],
        ["pay", "--amount", "10"],
        ["pay", "--amount", "10", "--order-id", "x", "--gateway-fault", "sometimes"],
        ["pay", "--amount", "10", "--order-id", "x", "--card", "no-such-card"],
        ["pay", "--amount", "10", "--order-id", "x", "--card", "visa-qvsdc", "--trace", "a.apdu"],
        ["pay", "--amount", "10", "--order-id", "x", "--wait", "soon"],
        ["pay", "--amount", "10", "--order-id", "x", "--pin", "12"],
        ["charges"],
    ])
    func usage(args: [String]) async {
        let dir = (try? temporaryDirectory()) ?? "/tmp"
        let r = await runCLI(args + ["--data-dir", dir])
        #expect(r.status == 64)
        #expect(r.err.hasPrefix("tapemu: "))
        #expect(r.err.contains("Usage: tapemu"))
    }

    @Test("no output, human or JSON, holds a full PAN")
    func neverAFullPAN() async throws {
        #expect(!fullPANs.isEmpty)
        let dir = try temporaryDirectory()
        for (i, card) in ["visa-qvsdc", "mastercard-mchip", "amex", "torn"].enumerated() {
            for json in [true, false] {
                let r = await runCLI(["pay", "--amount", "1000", "--order-id", "pan-\(i)-\(json)", "--card", card,
                                      "--data-dir", dir] + (json ? ["--json"] : []))
                for pan in fullPANs {
                    #expect(!r.out.contains(pan) && !r.err.contains(pan), "full PAN printed for \(card)")
                }
            }
        }
    }
}

@Suite("tapemu charges --pending", .temporaryDirectories)
struct ChargesPendingTests {
    @Test("a lost answer is found and leaves the device; a request that never arrived stays (exit 75)")
    func pendingLookups() async throws {
        let dir = try temporaryDirectory()
        let lost = await runCLI(["pay", "--amount", "1000", "--order-id", "cp-lost", "--gateway-fault", "lost-answer",
                                 "--data-dir", dir])
        #expect(lost.status == 4)
        let never = await runCLI(["pay", "--amount", "1000", "--order-id", "cp-never", "--gateway-fault", "server-error",
                                  "--data-dir", dir])
        #expect(never.status == 4)

        let r = await runCLI(["charges", "--pending", "--data-dir", dir, "--json"])
        #expect(r.status == 75)
        let rows = try jsonRows(r.out)
        let byOrder = Dictionary(uniqueKeysWithValues: rows.compactMap { row in (row["orderId"] as? String).map { ($0, row) } })
        #expect(byOrder["cp-lost"]?["finding"] as? String == "approved")
        #expect(byOrder["cp-lost"]?["removedFromDevice"] as? Bool == true)
        #expect(byOrder["cp-never"]?["finding"] as? String == "notFound")
        #expect(byOrder["cp-never"]?["removedFromDevice"] as? Bool == false)

        let again = await runCLI(["charges", "--pending", "--data-dir", dir, "--json"])
        let left = try jsonRows(again.out)
        #expect(left.compactMap { $0["orderId"] as? String } == ["cp-never"])
    }

    @Test("--order-id and --pending: exactly one", arguments: [[], ["--order-id", "x", "--pending"]])
    func exactlyOne(args: [String]) async throws {
        let dir = try temporaryDirectory()
        _ = await runCLI(["pay", "--amount", "1000", "--order-id", "seed", "--data-dir", dir])
        let r = await runCLI(["charges", "--data-dir", dir] + args)
        #expect(r.status == 64)
    }
}

/// `pay --trace`: the emulated issuer checks the cryptogram it has a key for. A trace of a
/// virtual card recorded with --no-redact keeps the card's PAN, so its recorded ARQC (made for
/// the recording's unpredictable number) fails verification: declined 82. A redacted trace carries
/// a replacement PAN the issuer has no key for: decided by the test triggers alone, as help says.
@Suite("tapemu pay --trace and the issuer's cryptogram check", .temporaryDirectories)
struct PayTraceCryptogramTests {
    @Test func unredactedVirtualCardTraceIsDeclined82RedactedIsNotChecked() async throws {
        let dir = try temporaryDirectory()
        let trace = dir + "/visa.apdu"
        let rec = await runCLI(["read", "--card", "visa-qvsdc", "--record", trace, "--no-redact"])
        #expect(rec.status == 0, "\(rec.err)")
        let unredacted = await runCLI(["pay", "--trace", trace, "--amount", "1000", "--order-id", "tr-1",
                                       "--data-dir", dir + "/d", "--json"])
        #expect(unredacted.status == PayCommand.declined, "\(unredacted.err)")
        #expect(unredacted.out.contains("failed verification"), "\(unredacted.out)")
        // A redacted fixture of apdu-traces/ (recorded through pcscd: redacted by default).
        let redacted = ReadCommandTests.traces + "/mastercard-mchip.apdu"
        #expect(try String(contentsOfFile: redacted, encoding: .utf8).contains("@redacted yes"))
        let checked = await runCLI(["pay", "--trace", redacted, "--amount", "1000", "--order-id", "tr-2",
                                    "--data-dir", dir + "/d", "--json"])
        #expect(checked.status == 0, "\(checked.err)")
        let help = await runCLI(["help", "pay"])
        #expect(help.out.contains("decided by the test triggers alone"))
    }
}
