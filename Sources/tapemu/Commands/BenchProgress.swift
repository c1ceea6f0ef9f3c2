import CardChannel
import EMVKernel
import Foundation
import PCSC
#if canImport(Glibc)
import Glibc
#endif

/// A progress bar on stderr, drawn only when stderr is a terminal, at most every 100 ms.
final class BenchProgress: @unchecked Sendable {
    private let total: Int
    private let label: String
    private let enabled: Bool
    private var done = 0
    private var lastDraw = ContinuousClock.now
    private let started = ContinuousClock.now

    init(total: Int, label: String) {
        self.total = total
        self.label = label
        enabled = isatty(STDERR_FILENO) == 1 && total > 1
    }

    /// One more read done (called from one task at a time).
    func advance() {
        done += 1
        guard enabled else { return }
        let now = ContinuousClock.now
        guard done == total || lastDraw.duration(to: now) >= .milliseconds(100) else { return }
        lastDraw = now
        // Only draw once the run looks long enough to be worth watching.
        guard started.duration(to: now) >= .milliseconds(300) else { return }
        let width = 30
        let filled = width * done / total
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        FileHandle.standardError.write(Data("\r\(bar) \(done)/\(total) \(label)".utf8))
    }

    func finish() {
        guard enabled, started.duration(to: .now) >= .milliseconds(300) else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
