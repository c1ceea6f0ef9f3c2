// The baseline for the PC/SC benchmark: the plainest possible SCardTransmit loop, written in C
// (target CPCSCBaseline) with a fixed buffer and nothing else, run on a thread of its own.
// tapemu's own PC/SC code lives in the PCSC module, the only Swift module that imports libpcsclite.
import CPCSCBaseline
import Dispatch
import Foundation
import PCSC
import Synchronization

/// Where the C loop's calls run.
protocol LoopRunner: Sendable {
    func perform<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T
    func stop()
}

/// The thread that owns a PC/SC channel's context (the C loop then shares it with the channel).
struct ChannelThreadRunner: LoopRunner {
    let channel: PCSCCardChannel
    func perform<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T { await channel.onContextThread(body) }
    func stop() {}
}

/// A thread that runs submitted jobs in order (blocking PC/SC calls stay off Swift's pool).
final class DedicatedThread: LoopRunner {
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let wake = DispatchSemaphore(value: 0)

    init(name: String) {
        // The thread holds this object until ``stop()`` ends its loop.
        let thread = Thread { [self] in
            while true {
                wake.wait()
                guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return }
                job()
            }
        }
        thread.name = name
        thread.start()
    }

    /// Runs `body` on the thread and returns its result.
    func perform<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
            jobs.withLock { $0.append { c.resume(returning: body()) } }
            wake.signal()
        }
    }

    /// Ends the thread after the jobs queued so far (an empty wake-up stops it).
    func stop() { wake.signal() }
}

/// The plain C `SCardTransmit` loop of the CPCSCBaseline target, on a thread of its own (one
/// PC/SC context per thread; its blocking calls stay off Swift's pool).
final class CTransmitLoop: @unchecked Sendable {
    // The C loop is used from its own thread only (every call goes through `thread.perform`).
    private let loop: OpaquePointer
    private let thread: any LoopRunner

    private init(loop: OpaquePointer, thread: any LoopRunner) {
        self.loop = loop
        self.thread = thread
    }

    /// Connects to the card in `reader` (a PC/SC context of its own), on a thread of its own or
    /// on `runner`; throws the PC/SC return code in hex on failure.
    static func connect(reader: String, on runner: (any LoopRunner)? = nil) async throws -> CTransmitLoop {
        let thread: any LoopRunner = runner ?? DedicatedThread(name: "tapemu-bench C loop")
        let result = await thread.perform { () -> Result<LoopHandle, BenchFailure> in
            var rv = 0
            guard let loop = tapemu_c_loop_connect(reader, &rv) else {
                return .failure(BenchFailure("SCardConnect: 0x\(String(UInt32(truncatingIfNeeded: rv), radix: 16))"))
            }
            return .success(LoopHandle(pointer: loop))
        }
        switch result {
        case .success(let h): return CTransmitLoop(loop: h.pointer, thread: thread)
        case .failure(let e):
            thread.stop()
            throw e
        }
    }

    /// The loop on `channel`'s own connection (the same pcscd context, the same thread of pcscd
    /// serving it), run on its context's thread — the same caller thread as the channel — or on
    /// `runner`. Only one path runs at a time: the connection is never used from two threads at
    /// once.
    static func attach(to channel: PCSCCardChannel, on runner: (any LoopRunner)? = nil) async throws -> CTransmitLoop {
        let runner = runner ?? ChannelThreadRunner(channel: channel)
        let (handle, proto) = channel.rawConnection
        let loop = await runner.perform { tapemu_c_loop_attach(handle, proto).map(LoopHandle.init(pointer:)) }
        guard let loop else { throw BenchFailure("out of memory") }
        return CTransmitLoop(loop: loop.pointer, thread: runner)
    }

    /// Sends `count` commands, cycling through `commands`, each timed on its own (by the C loop,
    /// with CLOCK_MONOTONIC). Nil when a transmit fails.
    ///
    /// Everything but the C loop — copying the commands out, the array of times and turning it
    /// into durations — is done here, off the loop's thread: on the channel's thread, whose CPU
    /// time per batch is compared path by path, the baseline is charged for the C loop alone,
    /// not for Swift allocations that would make what tapemu adds look smaller.
    func run(_ commands: [[UInt8]], count: Int) async -> [Duration]? {
        let batch = CBatch(commands, count: count)
        defer { batch.deallocate() }
        let handle = LoopHandle(pointer: loop)
        let rv = await thread.perform { batch.run(on: handle.pointer) }
        guard rv == 0 else { return nil }
        return batch.durations
    }

    func close() async {
        let handle = LoopHandle(pointer: loop)
        await thread.perform { tapemu_c_loop_close(handle.pointer) }
        thread.stop()
    }
}

/// The C loop's pointer, handed to the loop's own thread.
private struct LoopHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// One batch for the C loop, laid out in C memory before the loop's thread runs it: the
/// commands, their lengths, and room for the time of each transmit. Used by one thread at a time
/// (made and read on the caller's, run on the loop's, with the hand-over between).
private final class CBatch: @unchecked Sendable {
    private let commands: UnsafeMutableBufferPointer<UnsafePointer<UInt8>?>
    private let lengths: UnsafeMutableBufferPointer<Int>
    private let nanos: UnsafeMutableBufferPointer<UInt64>

    init(_ source: [[UInt8]], count: Int) {
        commands = .allocate(capacity: source.count)
        lengths = .allocate(capacity: source.count)
        nanos = .allocate(capacity: count)
        nanos.initialize(repeating: 0)
        for (i, c) in source.enumerated() {
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: max(c.count, 1))
            p.initialize(from: c, count: c.count)
            commands.initializeElement(at: i, to: UnsafePointer(p))
            lengths.initializeElement(at: i, to: c.count)
        }
    }

    /// The C loop over the whole batch: 0, or the PC/SC return code of the transmit that failed.
    func run(on loop: OpaquePointer) -> Int {
        tapemu_c_loop_run(loop, commands.baseAddress, lengths.baseAddress, commands.count, nanos.count, nanos.baseAddress)
    }

    var durations: [Duration] { nanos.map { Duration.nanoseconds(Int64($0)) } }

    func deallocate() {
        for p in commands { p.map { UnsafeMutablePointer(mutating: $0).deallocate() } }
        commands.deallocate()
        lengths.deallocate()
        nanos.deallocate()
    }
}
