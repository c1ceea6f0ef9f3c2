import Foundation
import Testing
@testable import tapemu
import TestSupport

/// DESIGN: "A full PAN … never reaches … an error message." A usage error names what was typed,
/// and a card number pasted in the wrong place was printed back whole — on stderr and in the
/// `--json` error document (found by the review: `tapemu pay … 4761739001010010` said
/// "unexpected argument '4761739001010010'"). The reason still says what is wrong, masked by the
/// one policy (first 6, last 4).
@Suite("Usage errors never echo a card number", .temporaryDirectories)
struct UsageErrorPANTests {
    static let pan = "4761739001010010"
    static let masked = "476173******0010"

    @Test(arguments: [
        ["pay", "--amount", "100", "--order-id", "o", pan],
        ["pay", "--amount", "100", "--order-id", "o", "--gateway-fault", pan],
        ["pay", "--amount", "100", "--order-id", "o", "--card", pan],
        ["sale", "--amount", "100", "--order-id", "o", "--pin", pan],
        ["resolve", "--seed", pan],
    ])
    func theReasonIsMasked(args: [String]) async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(args + ["--data-dir", dir, "--json"])
        #expect(r.status == 64, "\(r.err)")
        #expect(!r.err.contains(Self.pan), "\(r.err)")
        #expect(!r.out.contains(Self.pan), "\(r.out)")
        // Still one line that says what is wrong, and one JSON document.
        let line = try #require(r.err.split(separator: "\n").first)
        #expect(line.hasPrefix("tapemu: ") && (line.contains(Self.masked) || !line.contains("4761")), "\(line)")
        let doc = try jsonObject(r.out)
        #expect((doc["error"] as? [String: Any])?["exitCode"] as? Int == 64)
    }
}

extension UsageErrorPANTests {
    @Test(arguments: [[pan], ["cards", pan], ["help", pan]])
    func anUnknownCommandIsMasked(args: [String]) async {
        let r = await runCLI(args)
        #expect(r.status == 64, "\(r.err)")
        #expect(!r.err.contains(Self.pan) && r.err.contains(Self.masked), "\(r.err)")
    }
}
