import Foundation
import PCSC
import Testing
import VirtualCard

/// `tapemu bench --reader` against the real pcscd: besides the reads, what the channel adds per
/// exchange and what a whole read adds to its commands sent bare, both measured side by side.
/// In the serialized PC/SC suite's family: it uses vpcd slot 0 too.
extension PCSCIntegrationTests {
    @Test("`tapemu bench --reader --json`: the channel's cost per exchange and a read's cost over its bare commands, measured")
    func benchReaderOverhead() async throws {
        guard let context = await RealPCSC.context(), let tapemu = tapemuExecutable() else { return }
        let profile = try #require(CardProfiles.named("visa-qvsdc"))
        let (result, text) = try await RealPCSC.serving(EmulatedCard(profile: profile), context: context) { reader in
            (try await runProgram(tapemu, ["bench", "--reader", reader, "-n", "3", "--warmup", "1", "--json"]),
             try await runProgram(tapemu, ["bench", "--reader", reader, "-n", "3", "--warmup", "1"]))
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("The PC/SC channel's own cost: "), "\(text.stdout)")
        #expect(text.stdout.contains("A read's own cost: "), "\(text.stdout)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let overhead = try #require(json["channelOverhead"] as? [String: Any], "\(result.stdout)")
        func micros(_ key: String) throws -> Double { try #require(overhead[key] as? Double, "\(key) in \(overhead)") }
        // 25 rounds of a batch of 20 exchanges each way; 2 reads and 2 bare reads a round.
        #expect(overhead["exchanges"] as? Int == 500)
        #expect(overhead["reads"] as? Int == 50)
        for key in ["bareTransmitP50Micros", "sendP50Micros", "readP50Micros", "bareReadP50Micros"] {
            #expect(try micros(key) > 0, "\(key)")
        }
        // Each cost is the difference of the two medians it names (rounded to the nanosecond).
        #expect(abs(try micros("perExchangeMicros") - (try micros("sendP50Micros") - micros("bareTransmitP50Micros"))) < 0.002)
        #expect(abs(try micros("perReadMicros") - (try micros("readP50Micros") - micros("bareReadP50Micros"))) < 0.002)
        // A bare read is the read's four exchanges: more than one bare exchange takes.
        #expect(try micros("bareReadP50Micros") > micros("bareTransmitP50Micros"))
    }
}
