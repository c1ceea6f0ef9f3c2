import Foundation
import Testing
import TestSupport

@Suite("tapemu trace show", .temporaryDirectories)
struct TraceCommandTests {
    @Test("a trace with headers only says it holds no exchange, instead of printing a blank line")
    func headersOnly() async throws {
        let dir = try temporaryDirectory()
        let path = dir + "/empty.apdu"
        try Data("@format tapemu-apdu-trace/1\n".utf8).write(to: URL(fileURLWithPath: path))
        let r = await runCLI(["trace", "show", path])
        #expect(r.status == 0)
        #expect(r.out.contains("no exchange"))
    }
}
