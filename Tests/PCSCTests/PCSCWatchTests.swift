import CardChannel
import Foundation
import ISO7816
import PCSC
import Testing
import VirtualCard

/// `tapemu readers --watch` (pcsc_scan's job) as a child process against the real pcscd, with our
/// virtual cards in vpcd slot 0.
extension PCSCIntegrationTests {
    static func jsonLine(_ line: String?) throws -> [String: Any] {
        let text = try #require(line, "the watch ended early")
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    @Test("`tapemu readers --watch --json --events 2`: the first view, then card inserted (ATR explained) and removed, exit 0")
    func watchEvents() async throws {
        guard let context = await RealPCSC.context(), let tapemu = tapemuExecutable() else { return }
        _ = try await context.waitForEmpty(Self.reader0, timeout: RealPCSC.patience)
        let child = try ChildProcess(tapemu, ["readers", "--watch", "--json", "--reader", Self.reader0, "--events", "2"],
                                     streamingLines: true)
        let initial = try Self.jsonLine(await child.nextLine())
        #expect(initial["event"] as? String == "initial")
        #expect(initial["name"] as? String == Self.reader0)
        #expect(initial["cardPresent"] as? Bool == false)
        // The first view is out: the watch waits on pcscd now. Present a card, then take it away.
        let insertedLine = try await RealPCSC.serving(EmulatedCard(profile: CardProfiles.named("visa-qvsdc")!),
                                                      context: context) { _ in
            await child.nextLine()
        }
        let inserted = try Self.jsonLine(insertedLine)
        #expect(inserted["event"] as? String == "cardInserted")
        #expect(inserted["atr"] as? String == "3B80800101")
        #expect(inserted["card"] as? String == "ISO 14443-4 card")
        #expect(inserted["paymentCapable"] as? Bool == true)
        #expect((inserted["time"] as? String)?.hasSuffix("Z") == true)
        let result = await child.finish()
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        let removed = try Self.jsonLine(lines.last)
        #expect(removed["event"] as? String == "cardRemoved")
        #expect(removed["cardPresent"] as? Bool == false)
    }

    @Test("`tapemu readers --watch` ends cleanly on Ctrl-C or SIGTERM: exit 0", arguments: [SIGINT, SIGTERM])
    func watchSignal(_ sig: Int32) async throws {
        guard await RealPCSC.context() != nil, let tapemu = tapemuExecutable() else { return }
        let child = try ChildProcess(tapemu, ["readers", "--watch"], streamingLines: true)
        let first = try #require(await child.nextLine())
        #expect(first.contains("Virtual PCD 00 0"))
        child.signal(sig)
        let result = await child.finish()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("Ctrl-C to stop"))
    }

    @Test("pcscd not running: `readers --watch` and `transmit --reader` exit 69 and say how to start it")
    func workbenchWithoutService() async throws {
        guard let tapemu = tapemuExecutable() else { return }
        let env = ["PCSCLITE_CSOCK_NAME": "/nonexistent/tapemu-test/pcscd.comm"]
        for args in [["readers", "--watch"], ["transmit", "--reader", "0", "00A4040000"]] {
            let r = try await runProgram(tapemu, args, environment: env)
            #expect(r.status == 69, "\(args): \(r)")
            #expect(r.stderr.contains("SCARD_E_NO_SERVICE") && r.stderr.contains("pcscd"), "\(args)")
        }
        // --json: the failure is one more line of the stream.
        let json = try await runProgram(tapemu, ["readers", "--watch", "--json"], environment: env)
        #expect(json.status == 69)
        let lines = json.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        let line = try Self.jsonLine(lines.first.map(String.init))
        #expect(line["event"] as? String == "error")
        #expect((line["error"] as? [String: Any])?["exitCode"] as? Int == 69)
    }

}
