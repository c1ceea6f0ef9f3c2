import BenchTiming
import APDUTrace
import Timing
import BERTLV
import CardChannel
import EMVKernel
import Foundation
import ISO7816

/// Runs the kernel on a trace's card.
struct TraceReplayer: Sendable {
    /// Nil: the trace's `@match` header, or masked.
    var mode: TraceMatchMode? = nil
    var paced = false
    var amount: UInt64?
    /// Each APDU's deadline; a paced card slower than this fails with a timeout.
    var apduTimeout: Duration = .seconds(2)
    var clock: MonotonicClock = .continuous
    /// The CA keys and revocation list the kernel authenticates with (`--ca-keys`, `--crl`).
    var caPublicKeys: CAPublicKeyList = .builtIn
    var revocationList: CertificateRevocationList = .empty
    /// `--oda-methods`: 9F33 byte 3's ODA bits, over what the trace implies.
    var odaMethodBits: UInt8? = nil

    func replay(_ file: String) async -> ReplayResult {
        let trace: APDUTrace
        do {
            trace = try APDUTrace(contentsOfFile: file)
        } catch {
            return ReplayResult(file: file, passed: false, divergence: "\(error)", played: 0, total: 0)
        }
        return await replay(trace, file: file)
    }

    func replay(_ trace: APDUTrace, file: String) async -> ReplayResult {
        // The recorded amount, currency, country and matching mode: one rule, TraceReplaySetup's.
        let setup = TraceReplaySetup(trace: trace, mode: self.mode, amount: amount)
        let mode = setup.matching.mode
        let transaction = setup.transaction
        let channel = TraceReplayChannel(trace: trace, matching: setup.matching, paced: paced, clock: clock)
        var configuration = setup.configuration
        configuration.caPublicKeys = caPublicKeys
        configuration.revocationList = revocationList
        if let bits = odaMethodBits { configuration.terminalCapabilities[2] = configuration.terminalCapabilities[2] & ~0xC8 | bits }
        // The recorded date and unpredictable number too: a card's dynamic signature (fDDA, CDA)
        // was made over them.
        let reader = EMVReader(configuration: configuration, environment: setup.environment ?? .system)
        var result = ReplayResult(file: file, passed: false, played: 0, total: 0, mode: mode)
        let endedOnRecordedEvent: Bool
        do throws(KernelError) {
            let read = try await reader.read(channel: channel, transaction: transaction, apduTimeout: apduTimeout, clock: clock)
            result.outcome = ReplayOutcome.summary(read)
            result.oda = read.oda.description
            endedOnRecordedEvent = false
        } catch {
            result.outcome = ReplayOutcome.summary(error)
            result.oda = error.partial?.oda?.description
            if let c = error.channelError, c.code == .traceMismatch || c.code == .traceEnded {
                let p = channel.progress
                result.played = p.played
                result.total = p.total
                result.divergence = c.code == .traceEnded
                    ? "the trace ended before the kernel was done (\(error.step)): \(c.reason)"
                    : c.reason
                return result
            }
            endedOnRecordedEvent = error.code == .channelFailed
        }
        let p = channel.progress
        result.played = p.played
        result.total = p.total
        if p.played < p.total && !endedOnRecordedEvent {
            result.divergence = "the kernel stopped after \(p.played) of \(p.total) recorded exchanges: \(result.outcome ?? "")"
            return result
        }
        if let expected = trace[header: "outcome"], let got = result.outcome, expected != got {
            result.divergence = "the outcome differs from the recorded one\n  recorded: \(expected)\n  replay:   \(got)"
            if paced, let slowest = trace.exchanges.compactMap(\.cardTime).max(), slowest >= apduTimeout {
                result.divergence! += "\n  the trace recorded \(slowest) of card time for one APDU, "
                    + "over the APDU deadline of \(apduTimeout): give --apdu-timeout"
            }
            return result
        }
        result.passed = true
        return result
    }
}
