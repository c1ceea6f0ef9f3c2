import CLibEdit
import Foundation

/// A prompt with line editing and history, over libedit's readline interface (the only file
/// that imports libedit): Emacs keys, the arrows, Ctrl-R; each line given is kept in the
/// session's history and, when `historyFile` is set, in that file for the next session.
final class LineEditor: @unchecked Sendable {
    // libedit keeps one global state: one editor at a time, used from one task.
    private let historyFile: String?

    init(historyFile: String?) {
        self.historyFile = historyFile
        using_history()
        if let historyFile { _ = read_history(historyFile) }
    }

    /// The next line without its newline, or nil at the end of input (Ctrl-D).
    func readLine(prompt: String) -> String? {
        guard let raw = readline(prompt) else { return nil }
        defer { free(raw) }
        return String(cString: raw)
    }

    /// Keeps `line` in the history (not an empty one, nor the same as the last).
    func remember(_ line: String) {
        guard !line.trimmingCharacters(in: .whitespaces).isEmpty else { return }
        add_history(line)
        if let historyFile { _ = write_history(historyFile) }
    }
}
