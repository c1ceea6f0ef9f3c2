import CardChannel
import EMVKernel
import Foundation
import ISO7816
import PCSC
import VPCD
import Testing
import VirtualCard
import Timing
import TestSupport

/// The real PC/SC stack these tests need: pcscd running with vsmartcard-vpcd's readers.
/// `scripts/dev test` (and CI) installs `pcscd`, `vsmartcard-vpcd` and `pcsc-tools` and starts
/// pcscd; without it the PC/SC tests fail with this message.
enum RealPCSC {
    static let setupHint = "the PC/SC tests need pcscd with vsmartcard-vpcd's readers: run `scripts/dev setup` "
        + "(installs pcscd, vsmartcard-vpcd, pcsc-tools and starts `pcscd`)"

    /// A context to the running pcscd, or a recorded failure saying how to start it.
    static func context(sourceLocation: SourceLocation = #_sourceLocation) async -> PCSCContext? {
        do {
            let context = try await PCSCContext.establish()
            var readers = try await context.readers()
            if !readers.contains(VPCDEndpoint.readerName(slot: 0)) {
                // pcscd may be starting: wait (on its reader-list notification) for the readers.
                // One clock for the deadline and every wait: an offset means nothing on another
                // clock value (`.continuous` makes a new one, with a new origin, each time).
                let clock = MonotonicClock.continuous
                let deadline = clock.now + patience
                var known = try await context.states(of: readers)
                while !readers.contains(VPCDEndpoint.readerName(slot: 0)) {
                    do {
                        known = try await context.waitForChange(from: known, watchReaderList: true, deadline: deadline,
                                                                clock: clock)
                    } catch where error.code == .timeout {
                        break
                    }
                    readers = try await context.readers()
                }
            }
            guard readers.contains(VPCDEndpoint.readerName(slot: 0)) else {
                Issue.record("no reader '\(VPCDEndpoint.readerName(slot: 0))' (readers: \(readers)); \(setupHint)",
                             sourceLocation: sourceLocation)
                return nil
            }
            return context
        } catch {
            Issue.record("\(error); \(setupHint)", sourceLocation: sourceLocation)
            return nil
        }
    }

    /// How long any wait on pcscd may take before a test gives up (a safety net, never reached
    /// when things work: pcscd polls vpcd every ~400 ms).
    static let patience = Duration.seconds(20)

    /// Serves `card` in vpcd slot `slot` for the duration of `body`, which gets the reader name.
    /// The slot is empty before (pcscd saw it empty: a card presented sooner would be taken for
    /// the previous one) and is left empty after.
    static func serving<T: Sendable>(
        _ card: any CardResponder, slot: Int = 0, removeAfter: Int? = nil, context: PCSCContext,
        _ body: (String) async throws -> T
    ) async throws -> T {
        let reader = VPCDEndpoint.readerName(slot: slot)
        _ = try await context.waitForEmpty(reader, timeout: patience)
        let server = VPCDCardServer(card: card, endpoint: VPCDEndpoint(slot: slot), removeAfter: removeAfter)
        let run = Task { await server.run() }
        let result: Result<T, any Error>
        do {
            result = .success(try await body(reader))
        } catch {
            result = .failure(error)
        }
        run.cancel()
        _ = await run.value
        _ = try await context.waitForEmpty(reader, timeout: patience)
        return try result.get()
    }

    /// ``serving(_:slot:removeAfter:context:_:)`` with a PC/SC channel to the card opened for
    /// `body` and closed after it.
    static func servingChannel<T: Sendable>(
        _ card: any CardResponder, removeAfter: Int? = nil, context: PCSCContext,
        _ body: (PCSCCardChannel) async throws -> T
    ) async throws -> T {
        try await serving(card, removeAfter: removeAfter, context: context) { reader in
            let channel = try await PCSC.openChannel(reader: reader, wait: patience)
            defer { channel.close() }
            return try await body(channel)
        }
    }

    /// As ``servingChannel(_:removeAfter:context:_:)``, `body` given a card session over the
    /// channel whose APDU deadline is `apduTimeout`.
    static func servingSession<T: Sendable>(
        _ card: any CardResponder, removeAfter: Int? = nil, context: PCSCContext, apduTimeout: Duration,
        _ body: (CardSession) async throws -> T
    ) async throws -> T {
        try await servingChannel(card, removeAfter: removeAfter, context: context) { channel in
            try await body(CardSession(channel: channel, apduTimeout: apduTimeout))
        }
    }
}


/// What a kernel read did, without timings: every command, response and failure on the wire,
/// and how it ended. Two reads of the same card with the same terminal data compare equal.
struct ReadSummary: Equatable, CustomStringConvertible {
    struct Step: Equatable {
        var command: [UInt8]
        var response: [UInt8]?
        var failure: CardChannelError.Code?
    }
    var steps: [Step]
    var read: CardRead?
    var error: KernelError.Code?
    var channelError: CardChannelError.Code?

    init(_ result: Result<CardRead, KernelError>) {
        func steps(_ exchanges: [Exchange]) -> [Step] {
            exchanges.map { Step(command: $0.command.bytes, response: $0.response?.bytes, failure: $0.failure) }
        }
        switch result {
        case .success(var read):
            self.steps = steps(read.exchanges)
            read.exchanges = []
            self.read = read
        case .failure(let e):
            self.steps = steps(e.partial?.exchanges ?? [])
            self.error = e.code
            self.channelError = e.channelError?.code
        }
    }

    var description: String {
        let end = read.map { "read \($0)" } ?? "error \(error?.name ?? "?") / \(channelError?.name ?? "-")"
        return "\(steps.count) exchange(s), \(end)"
    }

    /// The kernel over `channel` with fixed terminal data.
    static func read(_ channel: any CardChannel, apduTimeout: Duration = .seconds(5)) async -> ReadSummary {
        await read(session: CardSession(channel: channel, apduTimeout: apduTimeout))
    }

    /// The kernel over `session` (one of several reads on it) with fixed terminal data.
    static func read(session: CardSession) async -> ReadSummary {
        let reader = EMVReader(environment: .fixed(TransactionDateTime(year: 2026, month: 11, day: 30, hour: 10),
                                                   using: SplitMix64(seed: 42)))
        do throws(KernelError) {
            return ReadSummary(.success(try await reader.read(session: session, transaction: Transaction(amount: 1234))))
        } catch {
            return ReadSummary(.failure(error))
        }
    }
}

/// Runs a program to its end (TestSupport's ``runToEnd``) on a thread of its own; its exit status
/// and output.
func runProgram(_ path: String, _ arguments: [String], stdin: String = "",
                environment: [String: String] = [:]) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await onThread { Result { try runToEnd(path, arguments, stdin: stdin, environment: environment) } }.get()
}

/// The `tapemu` executable built beside this test bundle (`swift build --build-tests` builds it).
func tapemuExecutable(sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    var dirs: [URL] = [Bundle.main.bundleURL.deletingLastPathComponent(), Bundle.main.bundleURL]
    if let first = CommandLine.arguments.first {
        dirs.append(URL(fileURLWithPath: first).deletingLastPathComponent())
    }
    for dir in dirs {
        let path = dir.appendingPathComponent("tapemu").path
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    Issue.record("no tapemu executable next to the tests (looked in \(dirs.map(\.path))); build it with `swift build --build-tests`",
                 sourceLocation: sourceLocation)
    return nil
}

/// A child process with its stdout and stderr collected, stopped by a signal.
final class ChildProcess: @unchecked Sendable {
    // Process is not Sendable; this wrapper only touches it from one task at a time.
    private let process = Process()
    private let output = Pipe(), errors = Pipe()
    /// With `streamingLines`: stdout line by line as the child writes it, and all of it.
    let lines: AsyncStream<String>
    private let linesContinuation: AsyncStream<String>.Continuation
    private let streamed: (done: Task<String, Never>, streaming: Bool)

    /// Starts `path` with `arguments`. With `streamingLines`, ``lines`` yields each line of
    /// stdout as soon as it is written (for a child that reports events while it runs).
    init(_ path: String, _ arguments: [String], streamingLines: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        (lines, linesContinuation) = AsyncStream.makeStream(of: String.self)
        try process.run()
        let reader = output.fileHandleForReading, continuation = linesContinuation
        streamed = (Task {
            guard streamingLines else { return "" }
            return await onThread {
                var all = [UInt8](), pending = [UInt8]()
                while true {
                    let chunk = reader.availableData   // blocks until data or end of file
                    if chunk.isEmpty { break }
                    all += chunk
                    pending += chunk
                    while let nl = pending.firstIndex(of: 0x0A) {
                        continuation.yield(String(decoding: pending[..<nl], as: UTF8.self))
                        pending.removeSubrange(...nl)
                    }
                }
                continuation.finish()
                return String(decoding: all, as: UTF8.self)
            }
        }, streamingLines)
    }

    func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    /// The next line of stdout (with `streamingLines`), or nil when stdout ended.
    func nextLine() async -> String? {
        var iterator = lines.makeAsyncIterator()
        return await iterator.next()
    }

    /// Waits for the process to end; its status and output.
    func finish() async -> (status: Int32, stdout: String, stderr: String) {
        let streaming = streamed.streaming
        let streamedOut = await streamed.done.value
        return await onThread { [self] in
            let out = streaming ? Data(streamedOut.utf8) : output.fileHandleForReading.readDataToEndOfFile()
            let err = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
        }
    }

    deinit { if process.isRunning { process.terminate() } }
}
