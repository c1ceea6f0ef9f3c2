import CardChannel
import Foundation
import ISO7816
import PCSC
import Synchronization

/// `tapemu readers --watch`: pcsc_scan's job, one line per reader event.
extension ReadersCommand {
    func runWatch(_ console: Console) async throws -> Int32 {
        if !output.json { console.printError("tapemu: \(Self.namesSource(Self.atrNames))") }
        let stop = WatchStop()
        // The trap goes in before anything is printed: a Ctrl-C right after the first line ends
        // the watch cleanly, never the default way (killed by the signal).
        return try await SignalTrap.whileRunning(onSignal: { stop.cancel() }) { () async throws -> Int32 in
            let (output, query, limit) = (self.output, reader, events)
            let task = Task { () async throws -> Void in
                try await Self.watch(console: console, json: output.json, query: query, limit: limit)
            }
            stop.set(task)
            let result = await withTaskCancellationHandler { await task.result } onCancel: { stop.cancel() }
            switch result {
            case .success:
                return ExitCode.success
            case .failure(let error as CardChannelError) where error.code == .cancelled:
                return ExitCode.success
            case .failure(let error):
                // With --json the failure is a line of the stream too, not a document after it.
                if output.json {
                    let (code, message) = (error as? CommandFailure).map { ($0.exitCode, $0.message) } ?? (ExitCode.failure, "\(error)")
                    console.print(try JSONOutput.line(JSONValue.object([
                        "event": .string("error"),
                        "time": .string(Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))),
                        "error": .object(["exitCode": .int(Int(code)), "message": .string(message)]),
                    ])))
                }
                throw error
            }
        }
    }

    private static func watch(console: Console, json: Bool, query: String?, limit: Int?) async throws {
        var watch: ReaderWatch
        do {
            watch = try await ReaderWatch.start()
        } catch where error.code == .cancelled {
            throw error
        } catch {
            throw failure(error)
        }
        var only: String?
        if let query {
            do {
                only = try ReaderSelection.resolve(query, among: watch.readers.map(\.name))
            } catch {
                throw CommandFailure.unavailable("\(error)")
            }
        }
        let shown = watch.readers.filter { only == nil || $0.name == only }
        if !json {
            console.printError(shown.isEmpty
                ? "tapemu: no PC/SC reader yet; waiting for reader events (Ctrl-C to stop)"
                : "tapemu: watching \(only ?? "\(shown.count) reader\(shown.count == 1 ? "" : "s")") (Ctrl-C to stop)")
        }
        let now = Date()
        for r in shown { try show(event: "initial", r, at: now, console: console, json: json) }
        var count = 0
        while true {
            let batch: [ReaderEvent]
            do {
                batch = try await watch.next()
            } catch where error.code == .cancelled {
                throw error
            } catch {
                throw failure(error)
            }
            let at = Date()
            for e in batch where only == nil || e.report.name == only {
                try show(event: e.kind.rawValue, e.report, at: at, console: console, json: json)
                count += 1
                if let limit, count >= limit { return }
            }
        }
    }

    private static func failure(_ error: CardChannelError) -> CommandFailure {
        CommandFailure(error, "\(error)")
    }

    /// One line: `2026-11-30T10:00:00.123Z  Virtual PCD 00 00: card inserted — ATR 3B… — ISO 14443-4 card`,
    /// or one JSON object.
    private static func show(event: String, _ r: ReaderReport, at time: Date, console: Console, json: Bool) throws {
        let stamp = time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        if json {
            guard case .object(var fields) = Self.json(r) else { return }
            fields["event"] = .string(event)
            fields["time"] = .string(stamp)
            console.print(try JSONOutput.line(JSONValue.object(fields)))
            return
        }
        var line = "\(stamp)  \(r.name): "
        switch ReaderEvent.Kind(rawValue: event) {
        case .readerAdded?: line += "reader added, " + stateLine(r)
        case .readerRemoved?: line += "reader removed"
        case .cardInserted?: line += "card inserted"
        case .cardRemoved?: line += "card removed"
        case .cardMute?: line += "card present but mute (no answer to reset)"
        case nil: line += stateLine(r)
        }
        if event != ReaderEvent.Kind.cardRemoved.rawValue, event != ReaderEvent.Kind.readerRemoved.rawValue,
           let atr = r.readerATR {
            line += " — ATR \(Hex.encode(atr.bytes)) — \(atr)"
            if let known = knownAs(atr.bytes, atrNames) { line += " — \(known)" }
        }
        console.print(line)
    }
}

/// Ends the watch from a signal handler or the caller's cancellation, even one that comes
/// before the watching task exists.
/// Cancels a watch's task from a signal handler, also when the signal came before the task existed.
final class WatchStop: Sendable {
    private let state = Mutex<(task: Task<Void, any Error>?, cancelled: Bool)>((nil, false))

    func set(_ task: Task<Void, any Error>) {
        let cancelled = state.withLock { s -> Bool in s.task = task; return s.cancelled }
        if cancelled { task.cancel() }
    }

    func cancel() {
        let task = state.withLock { s -> Task<Void, any Error>? in s.cancelled = true; return s.task }
        task?.cancel()
    }
}
