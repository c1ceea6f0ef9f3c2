import CardChannel
import Foundation
import ISO7816
import PCSC
import VPCD
import Testing
import TestSupport
import VirtualCard

/// `tapemu readers` and `tapemu emulate` as child processes, against the real pcscd.
/// In the serialized PC/SC suite's family: these use vpcd slot 0 too.
extension PCSCIntegrationTests {
    @Test("pcscd not running: `tapemu readers` says noService, how to start pcscd, exit 69")
    func readersWithoutService() async throws {
        guard let tapemu = tapemuExecutable() else { return }
        // libpcsclite finds pcscd through this socket name: point it at one nothing listens on.
        let result = try await runProgram(tapemu, ["readers"],
                                          environment: ["PCSCLITE_CSOCK_NAME": "/nonexistent/tapemu-test/pcscd.comm"])
        #expect(result.status == 69, "\(result)")
        #expect(result.stderr.contains("SCARD_E_NO_SERVICE"))
        #expect(result.stderr.contains("pcscd"))
    }

    @Test("`tapemu readers --json` lists the virtual readers")
    func readersJSON() async throws {
        guard await RealPCSC.context() != nil, let tapemu = tapemuExecutable() else { return }
        let result = try await runProgram(tapemu, ["readers", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let readers = try #require(json?["readers"] as? [[String: Any]])
        #expect(readers.contains { $0["name"] as? String == VPCDEndpoint.readerName(slot: 0) })
    }

    @Test("`tapemu emulate` serves a card that reads like in process, and stops on SIGTERM")
    func emulateChild() async throws {
        guard let context = await RealPCSC.context(), let tapemu = tapemuExecutable() else { return }
        let reader = VPCDEndpoint.readerName(slot: 0)
        _ = try await context.waitForEmpty(reader, timeout: RealPCSC.patience)
        let profile = try #require(CardProfiles.named("mastercard-mchip"))
        let child = try ChildProcess(tapemu, ["emulate", "--card", profile.name, "--slot", "0", "--json"])
        let summary: ReadSummary
        do {
            let channel = try await PCSC.openChannel(reader: reader, wait: RealPCSC.patience)
            summary = await ReadSummary.read(channel)
            channel.close()
        } catch {
            child.signal(SIGTERM)
            // What the emulator said (did it reach vpcd?): a card that never showed is otherwise
            // a bare timeout (seen once in a whole-suite run, not reproduced since).
            let child = await child.finish()
            Issue.record("tapemu emulate (exit \(child.status)) said: \(child.stderr)")
            throw error
        }
        child.signal(SIGTERM)
        let result = await child.finish()
        _ = try await context.waitForEmpty(reader, timeout: RealPCSC.patience)
        let inProcess = await ReadSummary.read(VirtualCardChannel(card: EmulatedCard(profile: profile), simulatesCardTime: false))
        #expect(summary == inProcess)
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(json?["outcome"] as? String == "stopped")
        #expect(json?["exchanges"] as? Int == summary.steps.count)
        #expect(result.stderr.contains("Connected to vpcd"))
    }

    @Test("`tapemu emulate --remove-after 1`: the reader sees the card removed, emulate exits")
    func emulateRemoveAfter() async throws {
        guard let context = await RealPCSC.context(), let tapemu = tapemuExecutable() else { return }
        let reader = VPCDEndpoint.readerName(slot: 0)
        _ = try await context.waitForEmpty(reader, timeout: RealPCSC.patience)
        let child = try ChildProcess(tapemu, ["emulate", "--card", "visa-qvsdc", "--remove-after", "1", "--json"])
        do {
            let channel = try await PCSC.openChannel(reader: reader, wait: RealPCSC.patience)
            defer { channel.close() }
            #expect(try await channel.transmit(.selectPPSE).statusWord == StatusWord(sw1: 0x90, sw2: 0x00))
            await expectThrows(CardChannelError.self, .cardRemoved) { _ = try await channel.transmit(.selectPPSE) }
        } catch {
            child.signal(SIGTERM)
            _ = await child.finish()
            throw error
        }
        let result = await child.finish()
        _ = try await context.waitForEmpty(reader, timeout: RealPCSC.patience)
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(json?["outcome"] as? String == "cardRemoved")
        #expect(json?["exchanges"] as? Int == 1)
    }
}
