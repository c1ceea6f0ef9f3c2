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
