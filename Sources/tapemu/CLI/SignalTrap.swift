import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// The one place tapemu traps SIGINT and SIGTERM: while `body` runs, either signal calls
/// `onSignal` (which cancels what `body` waits for) instead of killing the process; the default
/// disposition is back when it returns. `pay` and `sale` cancel the payment with it (Ctrl-C is
/// the user's cancel: `cancelled` before the submission point, an unclear outcome after it),
/// `emulate` stops serving.
enum SignalTrap {
    /// A dispatch source is thread-safe to cancel; it is not marked Sendable.
    private struct Source: @unchecked Sendable { let source: any DispatchSourceSignal }

    static func whileRunning<T, E: Error>(onSignal: @escaping @Sendable () -> Void,
                                          _ body: () async throws(E) -> T) async throws(E) -> T {
        let queue = DispatchQueue(label: "tapemu.signals")
        var sources: [Source] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler(handler: onSignal)
            // `body` starts once the source is registered: libdispatch registers it later, on
            // its own thread, and until then the signal is ignored (SIG_IGN above) — a SIGTERM
            // sent right after `gateway serve` printed its first lines was lost, and the server
            // never stopped (TLSServeTests.offLoopback hung now and then under load).
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                source.setRegistrationHandler { c.resume() }
                source.resume()
            }
            sources.append(Source(source: source))
        }
        defer {
            for s in sources { s.source.cancel() }
            signal(SIGINT, SIG_DFL)
            signal(SIGTERM, SIG_DFL)
        }
        return try await body()
    }
}
