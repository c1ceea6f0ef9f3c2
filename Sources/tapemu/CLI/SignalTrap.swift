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
            source.resume()
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
