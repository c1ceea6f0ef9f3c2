import Foundation
import Testing
@testable import tapemu
import TestSupport

@Suite("tapemu --json: one JSON document on stdout, also when the command fails", .temporaryDirectories)
struct JSONOnFailureTests {
    @Test("a failure before any output is {error: {exitCode, message}} on stdout and one line on stderr",
          arguments: [
              (["tlv", "decode", "ZZ", "--json"], ExitCode.dataError),
              (["apdu", "decode", "00", "--json"], ExitCode.dataError),
              (["read", "--trace", "/nonexistent/x.apdu", "--json"], ExitCode.noInput),
              (["replay", "/nonexistent/x.apdu", "--json"], ExitCode.noInput),
              (["charges", "--order-id", "j-1", "--data-dir", "FILE", "--json"], ExitCode.ioError),
              (["pay", "--amount", "1000", "--order-id", "j-1", "--data-dir", "FILE", "--json"], ExitCode.ioError),
              (["pending", "--data-dir", "FILE", "--json"], ExitCode.ioError),
          ])
    func failureDocument(args: [String], status: Int32) async throws {
        let dir = try temporaryDirectory()
        let file = dir + "/not-a-directory"
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: file))
        let r = await runCLI(args.map { $0 == "FILE" ? file : $0 })
        #expect(r.status == status)
        let error = try #require(try jsonObject(r.out)["error"] as? [String: Any])
        #expect(error["exitCode"] as? Int == Int(status))
        let message = try #require(error["message"] as? String)
        #expect(r.err == "tapemu: \(message)\n")
    }

    @Test("a command that printed its own document on failure gets no second one")
    func ownDocumentOnly() async throws {
        let r = await runCLI(["read", "--card", "torn", "--json"])
        #expect(r.status == ExitCode.temporaryFailure)
        let doc = try jsonObject(r.out)   // throws if two documents were printed
        #expect(doc["error"] is [String: Any])
        #expect(doc["application"] != nil)
    }

    @Test("without --json a failure prints nothing on stdout")
    func textFailure() async {
        let r = await runCLI(["tlv", "decode", "ZZ"])
        #expect(r.status == ExitCode.dataError)
        #expect(r.out.isEmpty)
    }
}
