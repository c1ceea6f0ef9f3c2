import APDUTrace
import BERTLV
@testable import BenchTiming
import CardChannel
@testable import EMVKernel
import Foundation
import ISO7816
import Testing
import TestSupport

/// A real card authenticated with a scheme's live CA key: the Mastercard of emv-tools' test
/// vectors (apdu-traces/real/mastercard-mchip-dda-emv-tools.apdu, provenance in its comments),
/// replayed through the kernel as `tapemu replay` does.
@Suite struct RealCardODATests {
    static let path: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)   // Tests/EMVKernelTests/<file>
        return parts.joined(separator: "/") + "/apdu-traces/real/mastercard-mchip-dda-emv-tools.apdu"
    }()

    func text() throws -> String { String(decoding: try Data(contentsOf: URL(fileURLWithPath: Self.path)), as: UTF8.self) }

    /// The kernel on the trace's card, with the trace's own date and unpredictable number; the
    /// read ends where the recorded session does (the card leaves at GENERATE AC).
    func replay(_ text: String, configuration: (inout TerminalConfiguration) -> Void = { _ in })
        async throws -> (oda: ODAResult?, error: KernelError?, exchanges: [Exchange]) {
        let trace = try APDUTrace(parsing: text)
        let setup = TraceReplaySetup(trace: trace)
        var c = setup.configuration
        configuration(&c)
        let environment = try #require(setup.environment)
        let reader = EMVReader(configuration: c, environment: environment)
        let channel = TraceReplayChannel(trace: trace, matching: setup.matching)
        do throws(KernelError) {
            let read = try await reader.read(channel: channel, transaction: setup.transaction)
            return (read.oda, nil, read.exchanges)
        } catch {
            return (error.partial?.oda, error, error.partial?.exchanges ?? [])
        }
    }

    @Test("the live CA key A000000004/05 opens the issuer certificate, the issuer key the ICC certificate over the static data, the card's key its DDA signature")
    func authenticatesWithTheLiveKey() async throws {
        let live = try #require(CAPublicKeyList.builtIn.key(rid: bytes("A000000004"), index: 0x05))
        #expect(live.modulus.count == 176)   // Mastercard's published 1408-bit key, its SHA-1 checked as the list loads
        let r = try await replay(try text())
        let oda = try #require(r.oda)
        #expect(oda.method == .dda)
        #expect(oda.caKey == "A000000004/05")
        #expect(oda.issuerCertificate == .passed)
        #expect(oda.iccCertificate == .passed)
        #expect(oda.signature == .passed)
        #expect(oda.tvrByte1 == 0)
        #expect(oda.description == "ODA DDA with CA A000000004/05: verified")
        // The recorded session ends at GENERATE AC (the vectors hold no answer to it).
        #expect(r.error?.code == .channelFailed)
        #expect(r.error?.step == .generateAC)
        // INTERNAL AUTHENTICATE carried the recorded unpredictable number, 00000000.
        let ia = try #require(r.exchanges.first { $0.command.instructionCode == 0x88 })
        #expect(ia.command.data == [0, 0, 0, 0])
    }

    @Test("one bit changed in the card's signature fails it (DDA failed); today's date finds the issuer certificate expired and sends no INTERNAL AUTHENTICATE")
    func failsWhenItShould() async throws {
        let text = try text()
        let tampered = text.replacingOccurrences(of: "< 80703D87F31056", with: "< 80703D86F31056")
        #expect(tampered != text)
        let bad = try #require(try await replay(tampered).oda)
        #expect(bad.tvrByte1 == TVR1.ddaFailed)
        #expect(bad.issuerCertificate == .passed && bad.iccCertificate == .passed)
        #expect(bad.signature.failure != nil)

        let today = text.replacingOccurrences(of: "@transaction-date 140925\n", with: "")
        #expect(today != text)
        let trace = try APDUTrace(parsing: today)
        let setup = TraceReplaySetup(trace: trace)
        var environment = try #require(setup.environment)
        environment.now = { TransactionDateTime(year: 2026, month: 12, day: 3, hour: 12, minute: 0, second: 0) }
        let reader = EMVReader(configuration: setup.configuration, environment: environment)
        let channel = TraceReplayChannel(trace: trace, matching: setup.matching)
        let error = await #expect(throws: KernelError.self) {
            try await reader.read(channel: channel, transaction: setup.transaction)
        }
        let oda = try #require(error?.partial?.oda)
        #expect(oda.issuerCertificate.failure == "the issuer certificate expired at the end of 12/21")
        #expect(oda.tvrByte1 == TVR1.ddaFailed)
        // The kernel went to GENERATE AC where the card had been asked for its signature: a divergence.
        #expect(error?.channelError?.code == .traceMismatch)
    }
}
