import APDUTrace
import Timing
import BERTLV
import CardChannel
import EMVKernel
import Foundation
import ISO7816

/// What `read` (and `pay`) call to record a session: wrap the channel before the kernel runs,
/// write the trace after.
///
/// ```swift
/// let recorder = TraceRecording.wrap(channel, source: source, redact: noRedact ? false : nil)
/// … run the kernel on `recorder` …
/// try TraceRecording.write(recorder, to: path, outcome: ReplayOutcome.summary(read))
/// ```
enum TraceRecording {
    /// A recorder over `channel`. `redact` nil: on for a PC/SC reader and for a replayed trace that
    /// was redacted (a recording of it stays `@redacted yes`), off for a virtual card or a replayed
    /// trace that was not.
    static func wrap(_ channel: any CardChannel, source: CardSourceOptions, sourceName: String,
                     redact: Bool? = nil, clock: MonotonicClock = .continuous) -> RecordingChannel {
        var headers: [APDUTrace.Header] = [.init("title", "tapemu read of \(sourceName)")]
        switch source.source {
        case .reader: headers.append(.init("reader", sourceName))
        case .virtualCard: headers.append(.init("card", sourceName))
        case .trace(let path): headers.append(.init("replayed", path))
        }
        let redactByDefault: Bool
        switch source.source {
        case .reader: redactByDefault = true
        case .trace(let path): redactByDefault = (try? APDUTrace(contentsOfFile: path))?[header: "redacted"] == "yes"
        case .virtualCard: redactByDefault = false
        }
        return RecordingChannel(wrapping: channel, headers: headers, redact: redact ?? redactByDefault, clock: clock)
    }

    /// Writes the recording with its `@outcome` (see ``ReplayOutcome``), which `tapemu replay`
    /// checks. Failures are exit 74.
    static func write(_ recorder: RecordingChannel, to path: String, outcome: String?) throws {
        var trace = recorder.trace
        if let outcome { trace[header: "outcome"] = outcome }
        do {
            try trace.write(toFile: path)
        } catch {
            throw CommandFailure.ioError("\(error)")
        }
    }
}
