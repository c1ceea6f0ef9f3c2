import CardChannel
import Foundation
import ISO7816
import PCSC
import VPCD
import Testing
import VirtualCard

/// `tapemu transmit` (scriptor's job) as a child process against the real pcscd, with our virtual
/// cards in vpcd slot 0 — side by side with pcsc-tools' `scriptor` on the same script.
extension PCSCIntegrationTests {
    static let reader0 = VPCDEndpoint.readerName(slot: 0)

    @Test("`tapemu transmit --reader`: a virtual card through pcscd, answers decoded, the PAN masked")
    func transmitThroughReader() async throws {
        guard let context = await RealPCSC.context(), let tapemu = tapemuExecutable() else { return }
        let card = EmulatedCard(profile: CardProfiles.named("visa-qvsdc")!)
        let result = try await RealPCSC.serving(card, context: context) { reader in
            try await runProgram(tapemu, ["transmit", "--reader", reader, "--json",
                                          "00A404000E325041592E5359532E444446303100", "00A4040007A000000003101000",
                                          Self.gpo, "00B2011C00", "00B2051C00"])
        }
        #expect(result.status == 0, "\(result.stderr)")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(doc["source"] as? String == Self.reader0)
        #expect(doc["atr"] as? String == "3B80800101")
        let steps = try #require(doc["steps"] as? [[String: Any]])
        #expect(steps.map { $0["sw"] as? String } == ["9000", "9000", "9000", "9000", "6A83"])
        // An expectation, not a trap, when fewer steps came back (a card cut short).
        #expect((steps.dropFirst(3).first?["response"] as? String)?.contains("476173******0010") == true)
        #expect(!result.stdout.contains(CardProfiles.named("visa-qvsdc")!.applications[0].pan.digits))
    }

    @Test("`tapemu transmit --reader`: no such reader is exit 69; a card torn mid-script is exit 75")
    func transmitReaderFailures() async throws {
        guard let context = await RealPCSC.context(), let tapemu = tapemuExecutable() else { return }
        let none = try await runProgram(tapemu, ["transmit", "--reader", "No Such Reader", "00A4040000"])
        #expect(none.status == 69, "\(none)")
        #expect(none.stderr.contains("no reader matches 'No Such Reader'"))

        let card = EmulatedCard(profile: CardProfiles.named("visa-qvsdc")!)
        let torn = try await RealPCSC.serving(card, removeAfter: 1, context: context) { reader in
            try await runProgram(tapemu, ["transmit", "--reader", reader,
                                          "00A404000E325041592E5359532E444446303100", "00A4040007A000000003101000"])
        }
        #expect(torn.status == 75, "\(torn)")
        #expect(torn.stdout.contains("! cardRemoved"))
        #expect(torn.stderr.hasPrefix("tapemu: line 2: "))
    }

    /// The GPO the kernel sent to visa-qvsdc when `apdu-traces/visa-qvsdc.apdu` was recorded.
    static let gpo = "80A80000238321248040000000000010000000000000000724800000800009782611300085BD3D9100"

    /// scriptor with `script` on `reader`, once the card is there (scriptor does not wait for one).
    static func scriptor(_ reader: String, _ script: String, context: PCSCContext) async throws -> (status: Int32, stdout: String, stderr: String) {
        _ = try await context.waitForCard(in: reader, timeout: RealPCSC.patience)
        return try await runProgram("/usr/bin/scriptor", ["-r", reader, script])
    }

    /// The script both tools run: scriptor's syntax, every kind of answer.
    static let comparisonScript = """
        # tapemu transmit and scriptor, same script
        00A404000E325041592E5359532E444446303100
        00 A4 04 00 07 A0 00 00 00 03 10 10 00
        80 A8 00 00 23 \\
        83 21 24 80 40 00 00 00 00 00 10 00 00 00 00 00 00 00 07 24 80 00 00 80 00 09 78 26 11 30 00 85 BD 3D 91 00
        00B2011C00
        80CA9F3600
        00B2051C00
        00FF000000
        reset
        00A404000E325041592E5359532E444446303100
        """

    /// What scriptor printed after each `<`: the answer's bytes (or the ATR after a reset).
    static func scriptorAnswers(_ output: String) -> [String] {
        var answers: [String] = []
        var current: String?
        for line in output.split(separator: "\n").map(String.init) {
            if current == nil {
                if line.hasPrefix("< OK: ") { answers.append(line.dropFirst(6).filter { !$0.isWhitespace }); continue }
                guard line.hasPrefix("< ") else { continue }
                current = ""
            }
            let text = line.hasPrefix("< ") ? String(line.dropFirst(2)) : line
            if let end = text.range(of: " : ") {
                answers.append((current! + text[..<end.lowerBound]).filter { !$0.isWhitespace })
                current = nil
            } else {
                current! += text
            }
        }
        return answers
    }

    /// Whether tapemu's masked hex is scriptor's hex with some digits masked (`*`).
    static func sameAnswer(masked: String, full: String) -> Bool {
        masked.count == full.count && zip(masked, full).allSatisfy { m, f in m == f || (m == "*" && f.isNumber) }
    }

    @Test("`tapemu transmit --no-auto-response` answers as scriptor does, line for line, on the same script",
          arguments: ["visa-qvsdc", "chained"])
    func transmitMatchesScriptor(profile: String) async throws {
        guard let context = await RealPCSC.context(), let tapemu = tapemuExecutable() else { return }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tapemu-scriptor-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let script = dir + "/compare.script"
        try Self.comparisonScript.write(toFile: script, atomically: true, encoding: .utf8)
        // A fresh card for each tool: the GPO moves the card's ATC on.
        let scriptor = try await RealPCSC.serving(EmulatedCard(profile: CardProfiles.named(profile)!), context: context) { reader in
            try await Self.scriptor(reader, script, context: context)
        }
        #expect(scriptor.status == 0, "\(scriptor)")
        let theirs = Self.scriptorAnswers(scriptor.stdout)
        #expect(theirs.count == 9, "\(scriptor.stdout)")
        let ours = try await RealPCSC.serving(EmulatedCard(profile: CardProfiles.named(profile)!), context: context) { reader in
            try await runProgram(tapemu, ["transmit", "--reader", reader, "--raw", "--no-auto-response", "-f", script])
        }
        #expect(ours.status == 0, "\(ours.stderr)")
        let mine = ours.stdout.split(separator: "\n").map(String.init)
        #expect(mine.count == theirs.count)
        for (m, t) in zip(mine, theirs) {
            #expect(Self.sameAnswer(masked: m, full: t), "tapemu \(m)\nscriptor \(t)")
        }
        if profile == "visa-qvsdc" { #expect(mine.contains { $0.contains("*") }, "the record with the PAN is masked") }
        for line in mine { #expect(!line.contains(CardProfiles.named(profile)!.applications[0].pan.digits)) }
    }

    @Test("on a T=0-style card, tapemu's own GET RESPONSE gives what scriptor gets by sending it itself")
    func autoResponseMatchesScriptor() async throws {
        guard let context = await RealPCSC.context(), let tapemu = tapemuExecutable() else { return }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tapemu-scriptor-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let byHand = dir + "/by-hand.script", auto = dir + "/auto.script"
        try "00A404000E325041592E5359532E444446303100\n00C0000036\n".write(toFile: byHand, atomically: true, encoding: .utf8)
        try "00A404000E325041592E5359532E444446303100\n".write(toFile: auto, atomically: true, encoding: .utf8)
        let chained = CardProfiles.named("chained")!
        let scriptor = try await RealPCSC.serving(EmulatedCard(profile: chained), context: context) { reader in
            try await Self.scriptor(reader, byHand, context: context)
        }
        let theirs = Self.scriptorAnswers(scriptor.stdout)
        #expect(theirs.first == "6136", "\(scriptor.stdout)")
        let ours = try await RealPCSC.serving(EmulatedCard(profile: chained), context: context) { reader in
            try await runProgram(tapemu, ["transmit", "--reader", reader, "--raw", "-f", auto])
        }
        #expect(ours.status == 0, "\(ours.stderr)")
        #expect(ours.stdout.split(separator: "\n").map(String.init) == [theirs.last ?? ""])
    }
}
