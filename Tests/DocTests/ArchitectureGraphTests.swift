import Foundation
import Testing
import TestSupport

enum GraphPageError: Error, Equatable {
    case noGraph
    case notAGraphLine(String)
    case listedTwice(String)
}

/// A package's module graph: each target (test targets aside) and the targets and products it
/// depends on.
struct ModuleGraph: Equatable {
    var dependencies: [String: Set<String>]

    /// The first ```` ```text ```` block of `page`: one `Name → A, B` line a target (`—`: none).
    static func documented(in page: String) throws(GraphPageError) -> ModuleGraph {
        guard let block = page.components(separatedBy: "```text\n").dropFirst().first?
            .components(separatedBy: "```").first
        else { throw .noGraph }
        var graph: [String: Set<String>] = [:]
        for line in block.split(separator: "\n") {
            let parts = line.components(separatedBy: "→")
            guard parts.count == 2 else { throw .notAGraphLine(String(line)) }
            let name = parts[0].trimmingCharacters(in: .whitespaces)
            let deps = parts[1].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, !deps.isEmpty else { throw .notAGraphLine(String(line)) }
            guard graph[name] == nil else { throw .listedTwice(name) }
            graph[name] = deps == "—"
                ? [] : Set(deps.components(separatedBy: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
        guard !graph.isEmpty else { throw .noGraph }
        return ModuleGraph(dependencies: graph)
    }

    /// The graph of `swift package dump-package`'s JSON.
    static func fromDumpedPackage(_ json: Data) throws -> ModuleGraph {
        let package = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let targets = try #require(package["targets"] as? [[String: Any]])
        var graph: [String: Set<String>] = [:]
        for target in targets where target["type"] as? String != "test" {
            let name = try #require(target["name"] as? String)
            var deps = Set<String>()
            for dependency in target["dependencies"] as? [[String: Any]] ?? [] {
                // {"byName": ["X", null]}, {"target": ["X", null]} or {"product": ["X", "pkg", …]}
                if let value = dependency.values.first as? [Any], let dep = value.first as? String { deps.insert(dep) }
            }
            graph[name] = deps
        }
        return ModuleGraph(dependencies: graph)
    }

    /// How high a target stands: 0 for one with no dependencies, else one above its highest.
    func layer(of name: String) -> Int {
        var memo: [String: Int] = [:]
        func visit(_ n: String, _ path: Set<String>) -> Int {
            if let known = memo[n] { return known }
            guard !path.contains(n) else { return 0 }  // a cycle: SwiftPM refuses it before we get here
            let deps = dependencies[n] ?? []
            let value = deps.isEmpty ? 0 : 1 + deps.map { visit($0, path.union([n])) }.max()!
            memo[n] = value
            return value
        }
        return visit(name, [])
    }

    /// The block as the page shows it: top (highest layer) to bottom, names in a column.
    var text: String {
        let names = dependencies.keys.sorted { (layer(of: $0), $1) > (layer(of: $1), $0) }
        let width = names.map(\.count).max() ?? 0
        return names.map { name in
            let deps = dependencies[name]!.sorted()
            return name.padding(toLength: width, withPad: " ", startingAt: 0) + " → "
                + (deps.isEmpty ? "—" : deps.joined(separator: ", "))
        }.joined(separator: "\n")
    }
}

/// docs/ARCHITECTURE.md's module graph is Package.swift's, line for line, and every module has its
/// line saying what it holds: the graph a newcomer reads cannot drift from the one the compiler builds.
@Suite("docs/ARCHITECTURE.md: the module graph", .temporaryDirectories)
struct ArchitectureGraphTests {
    static var page: String {
        get throws { try String(contentsOf: DocPages.root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8) }
    }

    /// Package.swift's graph, from SwiftPM itself.
    static func packageGraph(scratch: String) throws -> ModuleGraph {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // A scratch path of its own: the running build's .build stays locked by `swift test`.
        process.arguments = ["swift", "package", "--scratch-path", scratch, "dump-package"]
        process.currentDirectoryURL = DocPages.root
        let out = scratch + ".json", err = scratch + ".err"
        FileManager.default.createFile(atPath: out, contents: nil)
        FileManager.default.createFile(atPath: err, contents: nil)
        let stdout = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try stdout.close()
        try stderr.close()
        let errors = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        try #require(process.terminationStatus == 0, "swift package dump-package exited \(process.terminationStatus): \(errors)")
        return try ModuleGraph.fromDumpedPackage(Data(contentsOf: URL(fileURLWithPath: out)))
    }

    @Test("the page's graph is Package.swift's: every target, exactly its dependencies")
    func graphMatchesPackage() throws {
        let documented = try ModuleGraph.documented(in: Self.page)
        let actual = try Self.packageGraph(scratch: try temporaryDirectory() + "/scratch")
        var differences: [String] = []
        for name in Set(actual.dependencies.keys).union(documented.dependencies.keys).sorted() {
            switch (actual.dependencies[name], documented.dependencies[name]) {
            case let (real?, drawn?) where real != drawn:
                differences.append("\(name): Package.swift adds \(real.subtracting(drawn).sorted()), drops \(drawn.subtracting(real).sorted())")
            case (_?, nil): differences.append("\(name): a target of Package.swift, not on the page")
            case (nil, _?): differences.append("\(name): on the page, not a target of Package.swift")
            default: break
            }
        }
        #expect(differences.isEmpty, """
            docs/ARCHITECTURE.md's graph differs from Package.swift:
            \(differences.joined(separator: "\n"))
            Paste this block over the page's ```text block (and give each new module its line under "What each module holds"):
            ```text
            \(actual.text)
            ```
            """)
    }

    @Test("every module of the graph has its line saying what it holds, and no other module does")
    func everyModuleSaysWhatItHolds() throws {
        let page = try Self.page
        let graph = try ModuleGraph.documented(in: page)
        let described = Self.describedModules(page)
        let missing = Set(graph.dependencies.keys).subtracting(described).sorted()
        let extra = Set(described).subtracting(graph.dependencies.keys).sorted()
        #expect(missing.isEmpty && extra.isEmpty && described.count == Set(described).count,
                "\"What each module holds\" needs a row for \(missing) and none for \(extra) (each module once)")
    }

    /// The modules of the table under "## What each module holds": the first cell's `` `Name` ``.
    static func describedModules(_ page: String) -> [String] {
        guard let section = page.components(separatedBy: "## What each module holds").dropFirst().first else { return [] }
        let body = section.components(separatedBy: "\n## ").first ?? section
        return body.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            let cell = line.dropFirst(3)
            guard let end = cell.firstIndex(of: "`") else { return nil }
            return String(cell[..<end])
        }
    }

    @Test("the graph's lines are read strictly: a line without one arrow, or a target twice, is refused")
    func strictLines() throws {
        #expect(try ModuleGraph.documented(in: "# A\n\n```text\nA → B, C\nB → —\n```\n").dependencies == ["A": ["B", "C"], "B": []])
        #expect(throws: GraphPageError.notAGraphLine("A depends on B")) {
            try ModuleGraph.documented(in: "```text\nA depends on B\n```\n")
        }
        #expect(throws: GraphPageError.notAGraphLine("A →")) { try ModuleGraph.documented(in: "```text\nA →\n```\n") }
        #expect(throws: GraphPageError.listedTwice("A")) { try ModuleGraph.documented(in: "```text\nA → B\nA → C\n```\n") }
        #expect(throws: GraphPageError.noGraph) { try ModuleGraph.documented(in: "# Architecture\n") }
    }

    @Test("the block to paste lists dependents above what they depend on, and reads back as the same graph")
    func generatedBlock() throws {
        let graph = ModuleGraph(dependencies: ["App": ["Core", "CLib"], "Core": ["CLib"], "CLib": [], "Bench": ["Core"]])
        #expect(graph.text == """
            App   → CLib, Core
            Bench → Core
            Core  → CLib
            CLib  → —
            """)
        #expect(try ModuleGraph.documented(in: "```text\n\(graph.text)\n```\n") == graph)
    }

    @Test("the rows of the module table are read from their first cell")
    func describedRows() {
        let page = "## What each module holds\n\n| module | holds |\n|---|---|\n| `A` | a |\n| `B` (`Tests/B`) | b |\n\n## Errors\n| `C` | not here |\n"
        #expect(Self.describedModules(page) == ["A", "B"])
    }
}
