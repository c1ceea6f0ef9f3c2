import Foundation
import PaymentFlow
import Timing
#if canImport(Glibc)
import Glibc
#endif

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
        // getpass blocks its thread until the line is typed: Timing's one bridge runs it.
        return await withBlockingCall { () -> PIN? in
            let prompt = "PIN for \(request.maskedPAN), \(request.amount) \(request.currency): "
            guard let raw = getpass(prompt) else { return nil }
            let text = String(cString: raw)
            // getpass returns a static buffer: wipe it.
            memset(raw, 0, strlen(raw))
            return PIN(text)
        }
    }
}
