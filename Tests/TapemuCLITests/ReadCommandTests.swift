import Foundation
import Testing
import TestSupport
@testable import tapemu

@Suite("tapemu read", .temporaryDirectories)
struct ReadCommandTests {
    /// `apdu-traces/` of this package.
    static let traces: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)   // Tests/TapemuCLITests/ReadCommandTests.swift
        return parts.joined(separator: "/") + "/apdu-traces"
    }()

    @Test("a trace recorded with another amount reads as recorded: the amount defaults to the trace's")
    func traceAmount() async throws {
        let r = await runCLI(["read", "--trace", Self.traces + "/visa-online-pin.apdu", "--json"])
        #expect(r.status == 0, "\(r.err)")
        let transaction = try #require(try jsonObject(r.out)["transaction"] as? [String: Any])
        #expect(transaction["amount"] as? Int == 6000)
    }

    @Test("--amount still wins over the trace's amount (and then the trace diverges)")
    func explicitAmount() async throws {
        let r = await runCLI(["read", "--trace", Self.traces + "/visa-online-pin.apdu", "--amount", "1000", "--json"])
        #expect(r.status == 65)
        let transaction = try #require(try jsonObject(r.out)["transaction"] as? [String: Any])
        #expect(transaction["amount"] as? Int == 1000)
    }

    @Test("a virtual card still sees 1000 by default")
    func virtualCardAmount() async throws {
        let r = await runCLI(["read", "--json"])
        #expect(r.status == 0)
        let transaction = try #require(try jsonObject(r.out)["transaction"] as? [String: Any])
        #expect(transaction["amount"] as? Int == 1000)
    }
}
