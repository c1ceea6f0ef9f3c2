import Testing
import BERTLV
import EMVKernel
import FoundationEssentials
import ISO7816
@testable import CardChannel
@testable import APDUTrace

/// Every trace of `apdu-traces/`: it parses, it is redacted, and the EMV kernel run against it
/// follows it to the end with the outcome it records (`@outcome`), as `tapemu replay` does.
@Suite("The apdu-traces corpus")
struct TraceCorpusTests {
    static let files: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: TraceSamples.corpus)) ?? []
        return names.filter { $0.hasSuffix(".apdu") }.sorted()
    }()

    @Test func theCorpusHasAtLeastTwelveTracesAndAnIndex() throws {
        #expect(Self.files.count >= 12)
        let readme = try TraceSamples.text(TraceSamples.corpus + "/README.md")
        for f in Self.files { #expect(readme.contains(f), "README.md does not list \(f)") }
    }

    @Test(arguments: files)
    func replaysWithTheRecordedOutcome(_ name: String) async throws {
        let trace = try APDUTrace(contentsOfFile: TraceSamples.corpus + "/" + name)
        #expect(trace.isRedacted, "\(name) is not redacted")
        #expect(try APDUTrace(parsing: trace.text) == trace)
        let expected = try #require(trace[header: "outcome"], "\(name) has no @outcome")

        let recorded = trace.terminalData
        var configuration = TerminalConfiguration.default
        if let c = recorded[.transactionCurrencyCode].flatMap(BCD.value) { configuration.currencyCode = UInt16(c) }
        if let c = recorded[.terminalCountryCode].flatMap(BCD.value) { configuration.countryCode = UInt16(c) }
        let amount = recorded[.amountAuthorised].flatMap(BCD.value) ?? 1000
        let channel = TraceReplayChannel(trace: trace)   // masked, or the trace's @match

        let outcome: String
        do throws(KernelError) {
            let read = try await EMVReader(configuration: configuration)
                .read(channel: channel, transaction: Transaction(amount: amount))
            outcome = "read \(read.application.brand.rawValue) \(read.cryptogram.kind.rawValue) atc \(read.cryptogram.atc) "
                + "ac \(Hex.encode(read.cryptogram.ac)) cvm \(read.cvm.rawValue)"
            #expect(channel.progress.played == channel.progress.total, "\(name): the kernel stopped early")
            // The redacted card data is a Luhn-valid test PAN.
            #expect(read.card.pan.isLuhnValid)
        } catch {
            #expect(error.channelError?.code != .traceMismatch, "\(name): \(error.channelError?.reason ?? "")")
            #expect(error.channelError?.code != .traceEnded, "\(name): \(error.channelError?.reason ?? "")")
            var s = "error \(error.code.name)"
            if let c = error.channelError { s += "(\(c.code.name))" }
            if let sw = error.statusWord { s += " sw \(sw.hex)" }
            outcome = s + " at \(error.step)"
        }
        #expect(outcome == expected, "\(name)")
    }
}
