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
    func run(_ commands: [[UInt8]], count: Int) async -> [Duration]? {
        let handle = LoopHandle(pointer: loop)
        return await thread.perform { () -> [Duration]? in
            var nanos = [UInt64](repeating: 0, count: count)
            let lengths = commands.map(\.count)
            // Keep every command's bytes alive and addressable for the whole loop.
            let storage = commands.map { c -> UnsafeMutablePointer<UInt8> in
                let p = UnsafeMutablePointer<UInt8>.allocate(capacity: max(c.count, 1))
                p.initialize(from: c, count: c.count)
                return p
            }
            defer { for p in storage { p.deallocate() } }
            let pointers: [UnsafePointer<UInt8>?] = storage.map { UnsafePointer($0) }
            let rv = pointers.withUnsafeBufferPointer { cmds in
                lengths.withUnsafeBufferPointer { lens in
                    nanos.withUnsafeMutableBufferPointer { out in
                        tapemu_c_loop_run(handle.pointer, cmds.baseAddress, lens.baseAddress, commands.count, count,
                                          out.baseAddress)
                    }
                }
            }
            guard rv == 0 else { return nil }
            return nanos.map { Duration.nanoseconds(Int64($0)) }
        }
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
