import Foundation
import Synchronization
import Testing
@testable import tapemu
import CardChannel
import ISO7816
import Timing
import TestSupport

@Suite("tapemu bench", .temporaryDirectories)
struct BenchCommandTests {
    /// Answers 9000; notes which transmit was used, and whether the deadline transmit ran isolated
    /// to the main actor (it inherits its caller's isolation: nonisolated(nonsending)).
    final class ProbeChannel: CardChannel, Sendable {
        let plain = Mutex(0)
        let onMainActor = Mutex<[Bool]>([])
        var atr: [UInt8] { [0x3B, 0x00] }
        var mayHoldRealCard: Bool { false }
        func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
            plain.withLock { $0 += 1 }
            return ResponseAPDU(data: [], statusWord: .success)
        }
        nonisolated(nonsending) func transmit(_ command: CommandAPDU, deadline: Duration, on clock: MonotonicClock,
                                              onTimeout: @escaping @Sendable () -> CardChannelError) async throws(CardChannelError) -> ResponseAPDU {
            let isolation = #isolation
            onMainActor.withLock { $0.append(isolation === MainActor.shared) }
            return ResponseAPDU(data: [], statusWord: .success)
        }
    }

    struct ProbeSource: CardSource {
        let channel: ProbeChannel
        var name: String { "probe" }
        func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel { channel }
    }

    @Test("the timing channel passes a session's deadline to the card's own deadline transmit, where the session's send runs (no executor switch per exchange), and times it")
    @MainActor func timingChannelForwardsTheDeadline() async throws {
        let probe = ProbeChannel()
        let source = BenchCardSource(base: ProbeSource(channel: probe))
        let channel = try await source.waitForCard(timeout: .seconds(1), clock: .continuous)
        _ = try await CardSession(channel: channel).send(CommandAPDU(cla: 0x00, ins: 0xB2, p1: 0x01, p2: 0x0C))
        #expect(probe.plain.withLock { $0 } == 0)
        #expect(probe.onMainActor.withLock { $0 } == [true])
        #expect(source.observed.exchanges.map(\.command.instructionCode) == [0xB2])
    }

    @Test("N reads give the figures tooling reads from --json, and the split adds up")
    func readsAsJSON() async throws {
        let r = await runCLI(["bench", "-n", "7", "--warmup", "1", "--json"])
        #expect(r.status == 0)
        let doc = try jsonObject(r.out)
        #expect(doc["reads"] as? Int == 7)
        let total = try #require(doc["total"] as? [String: Any])
        for key in ["p50Micros", "p90Micros", "p99Micros", "maxMicros"] {
            #expect((total[key] as? Double).map { $0 > 0 } == true, "total.\(key)")
        }
        let p50 = try #require(total["p50Micros"] as? Double)
        let max = try #require(total["maxMicros"] as? Double)
        #expect(p50 <= max)
        let median = try #require(doc["median"] as? [String: Any])
        let host = try #require(median["hostMicros"] as? Double)
        let card = try #require(median["cardMicros"] as? Double)
        let whole = try #require(median["totalMicros"] as? Double)
        #expect(abs(host + card - whole) < 0.01)
        // The on-air floor of the visa-qvsdc read: 4 exchanges take tens of milliseconds on air.
        #expect((median["airFloorMicros"] as? Double).map { $0 > 10_000 } == true)
    }

    @Test("--plot writes an SVG histogram with the percentiles marked")
    func plot() async throws {
        let path = try temporaryDirectory() + "/reads.svg"
        let r = await runCLI(["bench", "-n", "20", "--warmup", "0", "--plot", path])
        #expect(r.status == 0)
        let svg = try String(contentsOfFile: path, encoding: .utf8)
        #expect(svg.hasPrefix("<?xml") || svg.hasPrefix("<svg"))
        #expect(svg.contains("p50") && svg.contains("p90") && svg.contains("p99"))
    }

    @Test("bad counts are usage errors", arguments: [["-n", "0"], ["-n", "x"], ["--warmup", "-1"]])
    func usage(args: [String]) async {
        let r = await runCLI(["bench"] + args)
        #expect(r.status == 64)
    }
}
