import Foundation
import Synchronization
import Testing
@testable import tapemu

@Suite("tapemu: stdin that cannot be read")
struct StdinRobustnessTests {
    @Test("an unreadable descriptor throws instead of trapping")
    func unreadableDescriptorThrows() throws {
        // A directory opens for reading but read(2) fails (EISDIR), as a closed stdin fails (EBADF).
        let dir = try temporaryDirectory()
        let handle = try #require(FileHandle(forReadingAtPath: dir))
        defer { try? handle.close() }
        #expect(throws: (any Error).self) { try Console.readAll(handle) }
    }

    @Test("a readable descriptor gives every byte")
    func readableDescriptor() throws {
        let dir = try temporaryDirectory()
        let path = dir + "/in.txt"
        try Data("9000\n".utf8).write(to: URL(fileURLWithPath: path))
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        #expect(try Console.readAll(handle) == Array("9000\n".utf8))
    }

    @Test("decoding from a stdin that fails is one line on stderr and exit 74",
          arguments: [["tlv", "decode", "-"], ["apdu", "decode", "-"], ["apdu", "decode", "--response", "-"]])
    func failingStdin(args: [String]) async {
        struct Closed: Error {}
        let err = Mutex("")
        let console = Console(out: { _ in }, err: { s in err.withLock { $0 += s } }, stdin: { throw Closed() })
        let status = await TapemuCLI.main(["tapemu"] + args, console: console)
        let text = err.withLock { $0 }
        #expect(status == ExitCode.ioError)
        #expect(text.hasPrefix("tapemu: cannot read stdin"))
        #expect(text.split(separator: "\n").count == 1)
    }
}
