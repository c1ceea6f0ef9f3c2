import CardChannel
import Foundation
import APDUTrace

/// The `apdu-traces/` corpus: every `*.apdu` under a directory, parsed.
struct Corpus {
    struct Entry {
        var name: String
        var trace: APDUTrace
    }
    var directory: String
    var entries: [Entry]

    /// The package's `apdu-traces/`, found from this source file's place or the working directory.
    static func defaultDirectory() -> String {
        let fromSource = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("apdu-traces").path
        if FileManager.default.fileExists(atPath: fromSource) { return fromSource }
        return FileManager.default.currentDirectoryPath + "/apdu-traces"
    }

    /// Parses every `*.apdu` under `directory` (recursively, sorted). Unreadable traces are
    /// reported and left out.
    static func load(_ directory: String, onSkip: (String) -> Void) -> Corpus {
        let names = (FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String } ?? [])
            .filter { $0.hasSuffix(".apdu") }.sorted()
        var entries: [Entry] = []
        for name in names {
            do {
                entries.append(Entry(name: name, trace: try APDUTrace(contentsOfFile: directory + "/" + name)))
            } catch {
                onSkip("\(name): \(error)")
            }
        }
        return Corpus(directory: directory, entries: entries)
    }

    /// Every recorded response's data (SW1 SW2 left out) to a command with instruction `ins`.
    func responseData(instruction ins: UInt8) -> [[UInt8]] {
        entries.flatMap { e in
            e.trace.exchanges.compactMap { x -> [UInt8]? in
                guard x.command.count > 1, x.command[1] == ins, case .response(let r)? = x.reply,
                      r.sw1 == 0x90, !r.data.isEmpty else { return nil }
                return r.data
            }
        }
    }
}
