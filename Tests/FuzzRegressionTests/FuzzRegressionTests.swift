import Foundation
import FuzzTargets
import Testing

/// Replays, under a plain `swift test`, every input kept for the fuzz harnesses: the inputs that
/// once crashed one (`Fuzz/regressions/<harness>/`, each fixed at its cause) and the seeds
/// (`Fuzz/corpus/<harness>/`). Each goes through the same function the fuzzer calls; a trap
/// here fails the run, a broken property is recorded against the file.
@Suite("Fuzz regressions and seeds")
struct FuzzRegressionTests {
    /// The repository's `Fuzz/` folder, found from this file.
    static let fuzzDirectory: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)   // Tests/FuzzRegressionTests/FuzzRegressionTests.swift
        return parts.joined(separator: "/") + "/Fuzz"
    }()

    /// The files of `Fuzz/<kind>/<harness>/`, sorted (none when the folder does not exist).
    static func inputs(_ kind: String, _ harness: String) -> [String] {
        let dir = "\(fuzzDirectory)/\(kind)/\(harness)"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return names.filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") }.sorted().map { "\(dir)/\($0)" }
    }

    /// How much CPU one input may take, as the fuzz runs' `-timeout=10`: an input kept for a hang
    /// or a quadratic blow-up fails the replay again if the blow-up comes back. CPU time of the
    /// process, not wall time: on a loaded machine (CI, a shared 2-core VM) the 12,000-command
    /// proxmark3 input took 14 s of wall time in a debug build, most of it waiting for a core.
    static let timeLimit: Duration = .seconds(10)

    /// The CPU time this process has used (every thread; the suite runs its tests one at a time).
    static func cpuTime() -> Duration {
        var t = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
        return .seconds(t.tv_sec) + .nanoseconds(t.tv_nsec)
    }

    static func replay(_ files: [String], through target: FuzzTarget) async throws {
        for file in files {
            let data = try #require(FileManager.default.contents(atPath: file), "cannot read \(file)")
            let name = URL(fileURLWithPath: file).lastPathComponent
            let start = cpuTime()
            do {
                try await target.run(Array(data))
            } catch {
                Issue.record("\(target.name) \(name): \(error)")
            }
            let took = cpuTime() - start
            if took > timeLimit {
                Issue.record("\(target.name) \(name): took \(took) of CPU, more than \(timeLimit) (a timeout under fuzzing)")
            }
        }
    }

    @Test("every input that once broke a harness now passes it", arguments: FuzzTarget.all.map(\.name))
    func regressions(harness: String) async throws {
        let target = try #require(FuzzTarget.named(harness))
        try await Self.replay(Self.inputs("regressions", harness), through: target)
    }

    @Test("every seed passes its harness", arguments: FuzzTarget.all.map(\.name))
    func seeds(harness: String) async throws {
        let target = try #require(FuzzTarget.named(harness))
        let files = Self.inputs("corpus", harness)
        #expect(!files.isEmpty, "Fuzz/corpus/\(harness)/ has no seed")
        try await Self.replay(files, through: target)
    }

    @Test("every harness folder belongs to a harness")
    func noStrayFolders() {
        let names = Set(FuzzTarget.all.map(\.name))
        for kind in ["regressions", "corpus"] {
            let dirs = (try? FileManager.default.contentsOfDirectory(atPath: "\(Self.fuzzDirectory)/\(kind)")) ?? []
            for d in dirs where !d.hasPrefix(".") && !d.hasSuffix(".md") {
                #expect(names.contains(d), "Fuzz/\(kind)/\(d) is not a harness (\(names.sorted().joined(separator: ", ")))")
            }
        }
    }
}
