// The baseline for the PC/SC benchmark: the plainest possible SCardTransmit loop, straight into
// libpcsclite with a fixed buffer and nothing else, on a thread of its own (one PC/SC context per
// thread). tapemu's own PC/SC code lives in the PCSC module; this file is the only other place
// that imports CPCSCLite, and only to measure against it.
import CPCSCLite
import Dispatch
import Foundation
import Synchronization

/// A thread that runs submitted jobs in order (blocking PC/SC calls stay off Swift's pool).
final class DedicatedThread: Sendable {
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

/// `SCardEstablishContext`, `SCardConnect` (shared, T=0 or T=1), then timed `SCardTransmit`s.
final class CTransmitLoop: Sendable {
    private struct Handles: Sendable {
        var context: SCARDCONTEXT
        var card: SCARDHANDLE
        var activeProtocol: DWORD
    }
    private let thread = DedicatedThread(name: "tapemu-bench C loop")
    private let handles: Handles

    private init(handles: Handles) { self.handles = handles }

    /// Connects to the card in `reader`; throws the PC/SC return code in hex on failure.
    static func connect(reader: String) async throws -> CTransmitLoop {
        let thread = DedicatedThread(name: "tapemu-bench C connect")
        defer { thread.stop() }
        let result = await thread.perform { () -> Result<Handles, BenchFailure> in
            var context: SCARDCONTEXT = 0
            var rv = SCardEstablishContext(DWORD(SCARD_SCOPE_SYSTEM), nil, nil, &context)
            guard rv == SCARD_S_SUCCESS else { return .failure(BenchFailure("SCardEstablishContext: 0x\(String(UInt32(truncatingIfNeeded: rv), radix: 16))")) }
            var card: SCARDHANDLE = 0
            var active: DWORD = 0
            rv = SCardConnect(context, reader, DWORD(SCARD_SHARE_SHARED), DWORD(SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1),
                              &card, &active)
            guard rv == SCARD_S_SUCCESS else {
                _ = SCardReleaseContext(context)
                return .failure(BenchFailure("SCardConnect: 0x\(String(UInt32(truncatingIfNeeded: rv), radix: 16))"))
            }
            return .success(Handles(context: context, card: card, activeProtocol: active))
        }
        return CTransmitLoop(handles: try result.get())
    }

    /// Sends `count` commands, cycling through `commands`, each timed on its own. Nil when a
    /// transmit fails.
    func run(_ commands: [[UInt8]], count: Int) async -> [Duration]? {
        let h = handles
        return await thread.perform { () -> [Duration]? in
            let clock = ContinuousClock()
            var pci = SCARD_IO_REQUEST(dwProtocol: h.activeProtocol, cbPciLength: UInt(MemoryLayout<SCARD_IO_REQUEST>.size))
            var buffer = [UInt8](repeating: 0, count: 4 + 3 + (1 << 16) + 3 + 2)   // MAX_BUFFER_SIZE_EXTENDED
            var samples: [Duration] = []
            samples.reserveCapacity(count)
            for i in 0..<count {
                let command = commands[i % commands.count]
                var length = DWORD(buffer.count)
                let start = clock.now
                let rv = command.withUnsafeBufferPointer { c in
                    SCardTransmit(h.card, &pci, c.baseAddress, DWORD(c.count), nil, &buffer, &length)
                }
                samples.append(start.duration(to: clock.now))
                guard rv == SCARD_S_SUCCESS, length >= 2 else { return nil }
            }
            return samples
        }
    }

    func close() async {
        let h = handles
        await thread.perform {
            _ = SCardDisconnect(h.card, DWORD(SCARD_LEAVE_CARD))
            _ = SCardReleaseContext(h.context)
        }
        thread.stop()
    }
}
