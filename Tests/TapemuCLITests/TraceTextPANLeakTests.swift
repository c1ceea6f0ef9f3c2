import Foundation
import Testing
@testable import tapemu
import TestSupport

/// A trace's text — comments, header keys and values, event details — is written by people and
/// tools, and can hold a card number as easily as its bytes can. Every output that shows it
/// goes through the one policy too.
@Suite("No full PAN from a trace's text", .temporaryDirectories)
struct TraceTextPANLeakTests {
    static let pans = ["4012888888881881", "5413330089010434"]

    static func leaks(_ text: String) -> [String] { pans.filter { text.contains($0) } }

    /// A well-formed trace whose comment, headers and event carry test card numbers.
    static let annotated = """
        # card 4012888888881881 from the lab
        @format tapemu-apdu-trace/1
        @title Visa 4012888888881881
        @reader 5413330089010434
        @note4012888888881881 kept
        0.000000 > 00A404000E325041592E5359532E444446303100
        0.001000 < 6A82
        0.002000 ! transmit-error 5413330089010434

        """

    @Test(arguments: [["trace", "show"], ["trace", "show", "--json"], ["trace", "show", "--hex"]])
    func traceShowMasksCommentsHeadersAndEvents(_ command: [String]) async throws {
        let file = try temporaryDirectory() + "/annotated.apdu"
        try Self.annotated.write(toFile: file, atomically: true, encoding: .utf8)
        let r = await runCLI(command + [file])
        #expect(r.status == 0, "\(r.err)")
        #expect(Self.leaks(r.out + r.err).isEmpty, "\(r.out)")
        // Masked, not dropped: the text is still there, first 6 and last 4.
        #expect(r.out.contains("401288******1881"), "\(r.out)")
        #expect(r.out.contains("541333******0434"), "\(r.out)")
    }
}

/// An error that quotes what it could not read — a trace line, a header, a profile's value —
/// quotes a card number typed there too: every failure tapemu prints goes through the policy,
/// on stderr and in the `--json` error document, as usage errors already do.
@Suite("No full PAN in a failure's message", .temporaryDirectories)
struct FailureMessagePANTests {
    static let broken: [(String, String)] = [
        ("a card number where the timestamp goes",
         "@format tapemu-apdu-trace/1\n4012888888881881 > 00A404000E325041592E5359532E444446303100\n"),
        ("a card number in a line that is no entry",
         "@format tapemu-apdu-trace/1\ncard 4012888888881881\n"),
        ("a card number as the format",
         "@format 4012888888881881\n"),
    ]

    @Test(arguments: broken.map(\.0))
    func aMalformedTraceIsReportedMasked(_ name: String) async throws {
        let text = try #require(Self.broken.first { $0.0 == name }).1
        let file = try temporaryDirectory() + "/broken.apdu"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        for args in [["trace", "show", file], ["trace", "show", "--json", file], ["read", "--trace", file, "--json"]] {
            let r = await runCLI(args)
            #expect(r.status == 65, "\(args): \(r.err)")
            #expect(TraceTextPANLeakTests.leaks(r.out + r.err).isEmpty, "\(args): \(r.err) \(r.out)")
            #expect(r.err.contains("401288******1881"), "\(args): \(r.err)")
            if args.contains("--json") {
                let doc = try jsonObject(r.out)
                let error = try #require(doc["error"] as? [String: Any])
                #expect(error["exitCode"] as? Int == 65)
                #expect((error["message"] as? String)?.contains("401288******1881") == true, "\(r.out)")
            }
        }
    }
}

/// A recorded event's detail is replayed into the channel error the kernel and the payment flow
/// report: `read`, `pay` and `sale` show it masked, on stderr and in their own JSON documents.
@Suite("No full PAN from a replayed event's detail", .temporaryDirectories)
struct ReplayedEventPANTests {
    static let trace = """
        @format tapemu-apdu-trace/1
        0.000000 > 00A404000E325041592E5359532E444446303100
        0.001000 ! transmit-error 4012888888881881

        """

    @Test(arguments: [["read", "--json"], ["read"], ["pay", "--amount", "1250", "--order-id", "ev-1", "--json"],
                      ["sale", "--amount", "1250", "--order-id", "ev-2", "--json"]])
    func theDetailIsMasked(_ command: [String]) async throws {
        let dir = try temporaryDirectory()
        let file = dir + "/event.apdu"
        try Self.trace.write(toFile: file, atomically: true, encoding: .utf8)
        var args = command + ["--trace", file]
        if command[0] != "read" { args += ["--data-dir", dir + "/data"] }
        let r = await runCLI(args)
        #expect(r.status != 0 && r.status != 70, "\(args): \(r.err)")
        #expect(TraceTextPANLeakTests.leaks(r.out + r.err).isEmpty, "\(args): \(r.err) \(r.out)")
        #expect((r.out + r.err).contains("401288******1881"), "\(args): \(r.err) \(r.out)")
    }
}
