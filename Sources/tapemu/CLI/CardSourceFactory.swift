import CardChannel
import PCSC
import VirtualCard
import Timing
import APDUTrace

extension CardSourceOptions {
    /// The default virtual card when no source is given.
    static let defaultProfile = "visa-qvsdc"

    /// The card source these options name. A `--card` value is a built-in profile name or the
    /// path of a JSON profile file; an unknown one is a usage error listing the profiles.
    func makeSource(paced: Bool = false) throws -> any CardSource {
        switch source {
        case .virtualCard(let name):
            return VirtualCardSource(profile: try Self.profile(named: name ?? Self.defaultProfile))
        case .reader(let query):
            return PCSCCardSource(reader: query)
        case .trace(let path):
            do {
                return TraceCardSource(trace: try APDUTrace(contentsOfFile: path), name: path, paced: paced)
            } catch {
                throw error.code == .unreadable ? CommandFailure.unreadable(path, "\(error)") : CommandFailure.dataError("\(error)")
            }
        }
    }

    /// A built-in profile by name, or a profile file by path.
    static func profile(named name: String) throws -> CardProfile {
        if let p = CardProfiles.named(name) { return p }
        if name.contains("/") || name.hasSuffix(".json") {
            do {
                return try CardProfile.load(contentsOf: name)
            } catch {
                throw error.code == .unreadableFile ? CommandFailure.unreadable(name, "\(error)") : CommandFailure.dataError("\(error)")
            }
        }
        let names = CardProfiles.all.map(\.name).joined(separator: ", ")
        throw UsageError("unknown card profile '\(name)' (profiles: \(names); or a path to a .json profile)")
    }
}

/// The card side of a trace as a card source: each connection replays the trace from its start.
struct TraceCardSource: CardSource {
    let trace: APDUTrace
    let name: String
    let paced: Bool

    func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        if Task.isCancelled { throw CardChannelError(.cancelled, "cancelled while waiting for a card") }
        return TraceReplayChannel(trace: trace, paced: paced, clock: clock)
    }
}
