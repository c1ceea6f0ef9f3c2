import Dispatch
import Foundation
import Synchronization
import TapToPay
#if canImport(Glibc)
import Glibc
#endif

/// Runs an operation that SIGINT / SIGTERM cancel (task cancellation), so Ctrl-C during a
/// payment is the user's cancel: `cancelled` before the submission point, `outcomeUnknown` after.
final class SignalCancellation: Sendable {
    /// A dispatch source is thread-safe to cancel; it is not marked Sendable.
    private struct Source: @unchecked Sendable { let source: any DispatchSourceSignal }
    private let sources = Mutex<[Source]>([])

    func run<T: Sendable>(_ operation: @escaping @Sendable () async throws(TapToPayError) -> T)
        async throws(TapToPayError) -> T
    {
        let task = Task { () async throws -> T in try await operation() }
        install { task.cancel() }
        defer { uninstall() }
        let result = await task.result
        switch result {
        case .success(let v): return v
        case .failure(let e as TapToPayError): throw e
        case .failure: throw .outcomeUnknown(orderId: "")   // unreachable: operation throws TapToPayError only
        }
    }

    private func install(_ handler: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "tapemu.signals")
        var made: [Source] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler(handler: handler)
            source.resume()
            made.append(Source(source: source))
        }
        let all = made
        sources.withLock { $0 = all }
    }

    private func uninstall() {
        let made = sources.withLock { s -> [Source] in defer { s = [] }; return s }
        for s in made { s.source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}

/// Asks for the online PIN on the controlling terminal, without echo. Without a terminal it
/// answers "cancelled" (use `--pin`).
struct TerminalPINProvider: PINProvider {
    /// Where to say why the PIN entry is cancelled when there is no terminal.
    var console: Console?
    /// Whether stdin is a terminal (injectable for tests).
    var hasTerminal: @Sendable () -> Bool = { isatty(STDIN_FILENO) == 1 }

    func requestPIN(_ request: PINRequest) async throws -> PIN? {
        guard hasTerminal() else {
            console?.printError("tapemu: the card asks for its online PIN and there is no terminal to ask on: give it with --pin")
            return nil
        }
        return await withCheckedContinuation { (c: CheckedContinuation<PIN?, Never>) in
            Thread.detachNewThread {
                let prompt = "PIN for \(request.maskedPAN), \(request.amount) \(request.currency): "
                guard let raw = getpass(prompt) else { c.resume(returning: nil); return }
                let text = String(cString: raw)
                // getpass returns a static buffer: wipe it.
                memset(raw, 0, strlen(raw))
                c.resume(returning: PIN(text))
            }
        }
    }
}
