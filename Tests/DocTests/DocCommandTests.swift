import Foundation
import Testing
import TestSupport

/// README.md and the Markdown pages under docs/.
enum DocPages {
    /// The package's root (this file is Tests/DocTests/DocCommandTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// README.md and every Markdown page under docs/, as paths relative to the package root.
    static var all: [String] {
        var pages = ["README.md"]
        let docs = root.appendingPathComponent("docs")
        if let walker = FileManager.default.enumerator(atPath: docs.path) {
            for case let p as String in walker where p.hasSuffix(".md") { pages.append("docs/" + p) }
        }
        return pages.sorted()
    }
}

/// Every shell command shown in README.md and docs/ runs here, as written, against the built
/// `tapemu` (first on PATH), and exits as its comment says (``DocBlocks`` has the rules). An
/// example that cannot run on this machine says why in a marker, and the test prints it.
@Suite("Documentation that runs", .temporaryDirectories)
struct DocCommandTests {
    /// The most one block may take (then it is killed with its children, and fails).
    static let blockTimeoutSeconds = 120

    @Test("each page's shell commands exit as their comments say", arguments: DocPages.all)
    func page(_ page: String) async throws {
        let text = try String(contentsOf: DocPages.root.appendingPathComponent(page), encoding: .utf8)
        let blocks = try DocBlocks.parse(text, file: page)
        if text.contains(".build/monei-venv") {
            try #require(FileManager.default.fileExists(atPath: DocPages.root.path + "/.build/monei-venv/bin/python"),
                         "\(page) runs MONEI's SDK from .build/monei-venv, which is missing: `scripts/dev setup` (or `scripts/dev test`) makes it")
        }
        let bin = try tapemuExecutable().deletingLastPathComponent().path
        let home = try temporaryDirectory()
        let work = try Self.checkoutLikeDirectory(in: home)
        let started = ContinuousClock.now
        var ran = 0, commands = 0
        for block in blocks {
            if let reason = block.skipReason {
                print("doc test: \(page):\(block.line) not run: \(reason)")
                continue
            }
            let result = try run(block, bin: bin, home: home, work: work)
            ran += 1
            commands += block.commands.count
            for (index, command) in block.commands.enumerated() {
                let status = result.statuses[index]
                #expect(status == command.expectedStatus,
                        """
                        \(page):\(command.line): `\(command.text)` exited \(status.map(String.init) ?? "never (the block timed out or stopped before it)"), \
                        its comment says \(command.expectedStatus)
                        --- output of the block (last 40 lines)
                        \(result.output.split(separator: "\n", omittingEmptySubsequences: false).suffix(40).joined(separator: "\n"))
                        """)
            }
        }
        print("doc test: \(page): \(ran) block(s) run (\(commands) commands), \(blocks.count - ran) not run, in \(ContinuousClock.now - started)")
    }

    /// A working directory that looks like the checkout to the examples (`apdu-traces/…`,
    /// `examples/…`, `scripts/dev postgres`, `.build/monei-venv`): a link to each of the checkout's
    /// entries, so what a command writes lands here, not in the checkout.
    static func checkoutLikeDirectory(in home: String) throws -> String {
        let work = home + "/work"
        let files = FileManager.default
        try files.createDirectory(atPath: work + "/.build", withIntermediateDirectories: true)
        for entry in try files.contentsOfDirectory(atPath: DocPages.root.path) where ![".build", ".git"].contains(entry) {
            try files.createSymbolicLink(atPath: work + "/" + entry, withDestinationPath: DocPages.root.path + "/" + entry)
        }
        let venv = DocPages.root.path + "/.build/monei-venv"
        if files.fileExists(atPath: venv) {
            try files.createSymbolicLink(atPath: work + "/.build/monei-venv", withDestinationPath: venv)
        }
        return work
    }

    struct BlockResult {
        var statuses: [Int32?]
        var output: String
    }

    /// Runs `block` in one bash session, bounded by ``blockTimeoutSeconds``.
    func run(_ block: DocBlock, bin: String, home: String, work: String) throws -> BlockResult {
        let statusFile = home + "/.doc-test-status"
        let outputFile = home + "/.doc-test-output"
        try? FileManager.default.removeItem(atPath: statusFile)
        var script = """
            set -u
            trap 'exit 143' TERM
            trap 'for j in $(jobs -p); do kill "$j" 2>/dev/null; done; wait' EXIT
            cd \(shellQuoted(work))

            """
        for (index, command) in block.commands.enumerated() {
            script += "{ \(command.text)\n}\necho \"\(index) $?\" >> \(shellQuoted(statusFile))\n"
        }
        let scriptFile = home + "/.doc-test.sh"
        try script.write(toFile: scriptFile, atomically: true, encoding: .utf8)
        FileManager.default.createFile(atPath: outputFile, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputFile))
        defer { try? output.close() }

        let process = Process()
        // The block starts with every signal unblocked and at its default action: a child inherits
        // the blocked and ignored signals of the test process through exec (SIGTERM blocked there
        // leaves a backend the page stops with `kill` running), and bash cannot undo either.
        // perl-base is Essential on Debian.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/perl")
        process.arguments = ["-MPOSIX", "-e",
                             "sigprocmask(SIG_SETMASK, POSIX::SigSet->new); $SIG{$_} = 'DEFAULT' for qw(HUP INT QUIT PIPE TERM CHLD); exec @ARGV or die",
                             "/usr/bin/timeout", "-k", "5", String(Self.blockTimeoutSeconds), "/bin/bash", scriptFile]
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = bin + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["HOME"] = home
        environment["XDG_DATA_HOME"] = home + "/.local/share"
        for key in environment.keys where key.hasPrefix("TAPEMU_") && key != "TAPEMU_TEST_POSTGRES" {
            environment[key] = nil
        }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        try process.run()
        process.waitUntilExit()

        var statuses = [Int32?](repeating: nil, count: block.commands.count)
        let recorded = (try? String(contentsOfFile: statusFile, encoding: .utf8)) ?? ""
        for line in recorded.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let i = Int(parts[0]), let s = Int32(parts[1]), statuses.indices.contains(i) {
                statuses[i] = s
            }
        }
        let text = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
        return BlockResult(statuses: statuses, output: text)
    }

    func shellQuoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
}

@Suite("Doc blocks: how a page's examples are read")
struct DocBlocksTests {
    @Test("sh and bash blocks run; other fences do not; comments and blank lines are no commands")
    func fences() throws {
        let page = """
            ```sh
            # a comment
            tapemu pay --amount 1250 --order-id a      # approved (exit 0)

            tapemu pay --amount 1251 --order-id b      # declined (exit 2)
            ```
            ```swift
            let x = 1
            ```
            ```bash
            echo '# not a comment' # (exit 3)
            ```
            ```
            plain
            ```
            """
        let blocks = try DocBlocks.parse(page, file: "p.md")
        #expect(blocks.count == 2)
        #expect(blocks[0].commands.map(\.expectedStatus) == [0, 2])
        #expect(blocks[0].commands.map(\.line) == [3, 5])
        #expect(blocks[1].commands.map(\.text) == ["echo '# not a comment' # (exit 3)"])
        #expect(blocks[1].commands.map(\.expectedStatus) == [3])
    }

    @Test("a backslash at the end of a line goes on; the status is read from the last line's comment")
    func continuation() throws {
        let page = "```sh\ncurl -X POST http://h/graphql \\\n  -d '{\"a\":1}'   # refused (exit 22)\nnext\n```"
        let blocks = try DocBlocks.parse(page, file: "p.md")
        #expect(blocks[0].commands.map(\.text) == ["curl -X POST http://h/graphql \\\n  -d '{\"a\":1}'   # refused (exit 22)", "next"])
        #expect(blocks[0].commands.map(\.expectedStatus) == [22, 0])
    }

    @Test("a skip marker needs a reason and a sh block right after it")
    func markers() throws {
        let skipped = try DocBlocks.parse("<!-- doc-test: skip needs a USB reader -->\n```sh\ntapemu read --reader 0\n```", file: "p.md")
        #expect(skipped[0].skipReason == "needs a USB reader")
        #expect(throws: DocBlockError.skipWithoutReason(file: "p.md", line: 1)) {
            try DocBlocks.parse("<!-- doc-test: skip -->\n```sh\nx\n```", file: "p.md")
        }
        #expect(throws: DocBlockError.markerWithoutBlock(file: "p.md", line: 1)) {
            try DocBlocks.parse("<!-- doc-test: skip why -->\nSome prose.\n```sh\nx\n```", file: "p.md")
        }
        #expect(throws: DocBlockError.markerWithoutBlock(file: "p.md", line: 1)) {
            try DocBlocks.parse("<!-- doc-test: skip why -->\n```swift\nx\n```", file: "p.md")
        }
        #expect(throws: DocBlockError.unclosedFence(file: "p.md", line: 2)) {
            try DocBlocks.parse("text\n```sh\nx\n", file: "p.md")
        }
    }

    @Test("a # inside quotes or a word is no comment; (exit N) only counts in the comment")
    func comments() {
        #expect(DocBlocks.commentSplit("curl 'a#b' \"c # d\" e#f # real").comment == "# real")
        #expect(DocBlocks.expectedStatus("echo '(exit 5)'") == 0)
        #expect(DocBlocks.expectedStatus("tapemu x   # no payment (exit 4)") == 4)
    }
}
