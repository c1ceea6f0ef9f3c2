import Foundation

/// The shell examples of a Markdown page, as the doc test runs them.
///
/// The rules a page's author follows (docs/TESTING.md says them too):
/// - Every fenced block opened with ```` ```sh ```` or ```` ```bash ```` is run, top to bottom,
///   each in one `bash` session; the blocks of one page share a working directory and a home
///   (`HOME`, `XDG_DATA_HOME`), as a reader who follows the page in one terminal would. The
///   working directory holds the checkout's files (`apdu-traces/`, `examples/`, `scripts/`, …).
/// - A command's expected exit status is `(exit N)` in its trailing comment; none means 0.
///   A line ending in `\` goes on on the next line (one command).
/// - A background job (`… &`) is stopped by the block that starts it; whatever is still running
///   when the block ends is killed.
/// - A block that cannot run here (a USB reader, a second machine) is preceded by the line
///   `<!-- doc-test: skip REASON -->`, with the reason: the test lists what it skipped and why.
/// - Another fence (```` ```swift ````, ```` ```text ````, a bare ```` ``` ````) is not run.
struct DocBlock: Equatable {
    struct Command: Equatable {
        /// The command as written (continuation lines kept, with their backslashes).
        var text: String
        /// Its 1-based line in the page.
        var line: Int
        var expectedStatus: Int32
    }
    var file: String
    /// The line of the opening fence.
    var line: Int
    var commands: [Command]
    /// Why it is not run (nil: run).
    var skipReason: String?
}

enum DocBlockError: Error, Equatable, CustomStringConvertible {
    case unclosedFence(file: String, line: Int)
    case skipWithoutReason(file: String, line: Int)
    case markerWithoutBlock(file: String, line: Int)

    var description: String {
        switch self {
        case .unclosedFence(let f, let l): "\(f):\(l): a fenced block is never closed"
        case .skipWithoutReason(let f, let l): "\(f):\(l): <!-- doc-test: skip --> needs a reason"
        case .markerWithoutBlock(let f, let l): "\(f):\(l): a doc-test marker not followed by a sh block"
        }
    }
}

enum DocBlocks {
    static let runLanguages: Set<String> = ["sh", "bash"]

    /// The blocks of `text` (the page `file`).
    static func parse(_ text: String, file: String) throws(DocBlockError) -> [DocBlock] {
        let lines = text.components(separatedBy: "\n")
        var blocks: [DocBlock] = []
        var pendingSkip: (reason: String, line: Int)?
        var i = 0
        while i < lines.count {
            let raw = lines[i]
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            if let reason = marker(trimmed) {
                guard !reason.isEmpty else { throw .skipWithoutReason(file: file, line: i + 1) }
                pendingSkip = (reason, i + 1)
                i += 1
                continue
            }
            guard trimmed.hasPrefix("```") else {
                if !trimmed.isEmpty, let p = pendingSkip { throw .markerWithoutBlock(file: file, line: p.line) }
                i += 1
                continue
            }
            let language = trimmed.dropFirst(3).trimmingCharacters(in: .whitespaces).lowercased()
            let open = i
            var body: [(String, Int)] = []
            i += 1
            while i < lines.count, !lines[i].trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                body.append((lines[i], i + 1))
                i += 1
            }
            guard i < lines.count else { throw .unclosedFence(file: file, line: open + 1) }
            i += 1
            guard runLanguages.contains(language) else {
                if let p = pendingSkip { throw .markerWithoutBlock(file: file, line: p.line) }
                continue
            }
            blocks.append(DocBlock(file: file, line: open + 1, commands: commands(body), skipReason: pendingSkip?.reason))
            pendingSkip = nil
        }
        if let p = pendingSkip { throw .markerWithoutBlock(file: file, line: p.line) }
        return blocks
    }

    /// `<!-- doc-test: skip REASON -->` → REASON (possibly empty); anything else → nil.
    static func marker(_ line: String) -> String? {
        guard line.hasPrefix("<!--"), line.hasSuffix("-->") else { return nil }
        let inner = line.dropFirst(4).dropLast(3).trimmingCharacters(in: .whitespaces)
        guard inner.hasPrefix("doc-test:") else { return nil }
        let rest = inner.dropFirst("doc-test:".count).trimmingCharacters(in: .whitespaces)
        guard rest == "skip" || rest.hasPrefix("skip ") else { return nil }
        return rest.dropFirst(4).trimmingCharacters(in: .whitespaces)
    }

    /// The commands of a block's lines: blank and comment-only lines dropped, continuations joined.
    static func commands(_ body: [(String, Int)]) -> [DocBlock.Command] {
        var out: [DocBlock.Command] = []
        var current: (text: String, line: Int)?
        for (raw, n) in body {
            if current == nil {
                let t = raw.trimmingCharacters(in: .whitespaces)
                if t.isEmpty || t.hasPrefix("#") { continue }
                current = (raw, n)
            } else {
                current!.text += "\n" + raw
            }
            if !codePart(raw).hasSuffix("\\") {
                out.append(DocBlock.Command(text: current!.text, line: current!.line,
                                            expectedStatus: expectedStatus(current!.text)))
                current = nil
            }
        }
        if let c = current {
            out.append(DocBlock.Command(text: c.text, line: c.line, expectedStatus: expectedStatus(c.text)))
        }
        return out
    }

    /// The part of a line before its comment (a `#` at a word's start outside quotes), trimmed.
    static func codePart(_ line: String) -> String {
        commentSplit(line).code.trimmingCharacters(in: .whitespaces)
    }

    static func commentSplit(_ line: String) -> (code: String, comment: String) {
        var single = false, double = false, escaped = false
        var previous: Character = " "
        for (offset, c) in line.enumerated() {
            defer { previous = c }
            if escaped { escaped = false; continue }
            if c == "\\" && !single { escaped = true; continue }
            if c == "'" && !double { single.toggle(); continue }
            if c == "\"" && !single { double.toggle(); continue }
            if c == "#" && !single && !double && (previous == " " || previous == "\t") {
                let index = line.index(line.startIndex, offsetBy: offset)
                return (String(line[..<index]), String(line[index...]))
            }
        }
        return (line, "")
    }

    /// `(exit N)` in the comment of the command's last line, else 0.
    static func expectedStatus(_ command: String) -> Int32 {
        let last = command.components(separatedBy: "\n").last ?? command
        let comment = commentSplit(last).comment
        guard let range = comment.range(of: #"\(exit (\d{1,3})\)"#, options: .regularExpression) else { return 0 }
        let digits = comment[range].dropFirst("(exit ".count).dropLast()
        return Int32(digits) ?? 0
    }
}
