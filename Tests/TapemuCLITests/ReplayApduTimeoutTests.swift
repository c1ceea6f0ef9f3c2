import CardChannel
import Testing
import TestSupport
@testable import tapemu
import Timing
import APDUTrace

@Suite("tapemu replay --apdu-timeout", .temporaryDirectories)
struct ReplayApduTimeoutTests {
    /// A paced replay of `Tests/Fixtures/slow-gpo-2500ms.apdu` (visa-qvsdc taking 2.5 s over GPO,
    /// recorded through pcscd) on a manual clock: each exchange's card time is let pass.
    static func pacedReplay(_ extra: [String]) async throws -> (status: Int32?, out: String) {
        let file = fixtures + "/slow-gpo-2500ms.apdu"
        var arguments = Arguments(["--paced"] + extra + [file])
        var command = try ReplayCommand(arguments: &arguments)
        let manual = ManualClock()
        command.clock = MonotonicClock(manual)
        let captured = CapturedConsole()
        let run = Task { [command] in try await command.run(captured.console) }
        for cardTime in try APDUTrace(contentsOfFile: file).exchanges.compactMap(\.cardTime) {
            // The card's time and the APDU deadline sleep on the clock; the deadline comes first
            // when the card is slower.
            await manual.waitForSleepers(2)
            manual.advance(by: min(cardTime, command.apduTimeout))
            if cardTime >= command.apduTimeout { break }
        }
        let result = await run.result
        return (try? result.get(), captured.stdout)
    }

    @Test("replay --paced of a card slower than 2 s fails with a hint; --apdu-timeout 5s passes")
    func replayApduTimeout() async throws {
        let slow = try await Self.pacedReplay([])
        #expect(slow.status == 1)
        #expect(slow.out.contains("error channelFailed(timeout) at GPO"))
        #expect(slow.out.contains("over the APDU deadline of 2.0 seconds: give --apdu-timeout"))
        let patient = try await Self.pacedReplay(["--apdu-timeout", "5s"])
        #expect(patient.status == 0, "\(patient.out)")
        #expect(patient.out.contains("1 passed, 0 failed"))
        #expect(await runCLI(["replay", "--apdu-timeout", "0s", fixtures + "/slow-gpo-2500ms.apdu"]).status == 64)
        // Unpaced, the card time is not spent: the default deadline is enough.
        #expect(await runCLI(["replay", fixtures + "/slow-gpo-2500ms.apdu"]).status == 0)
    }
}
