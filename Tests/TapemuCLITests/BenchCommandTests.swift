import Foundation
import Testing
@testable import tapemu
import TestSupport

@Suite("tapemu bench", .temporaryDirectories)
struct BenchCommandTests {
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
