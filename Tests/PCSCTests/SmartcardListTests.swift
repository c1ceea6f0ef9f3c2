import Foundation
import PCSC
import Testing
import VirtualCard

/// Issue 36, item 5: naming a card from its ATR with pcsc-tools' list, as pcsc_scan does.
@Suite("pcsc-tools' list of known ATRs")
struct SmartcardListTests {
    static let sample = """
        # comment 3B 80 80 01 01
        3B 80 80 01 01
        \tISO 14443 Type B without historical bytes
        \tElectronic Passport

        3B 8F 80 01 80 4F 0C A0 00 00 03 06 03 .. .. 00 00 00 00 ..
        \tRFID - ISO 14443 Type A Part 3 (as per PCSC std part3)
        3B 3B .. 00 80 6. A[FE] 03 0[CD] .. .. 83 .. 90 00
        \tclasses and nibbles
        3B 75 94 00 00 62 02 02 0[1-3] 01
        \ta range
        3B 39 19 00 53 4F 4D 41 44 53 33 30 3[1,3]
        \ta class with a comma
        3B EF 00 FF 81 31 42 45 .* 38
        \tany rest, then 38
        3b 02 14 50
        \tlower case
        """

    static func bytes(_ hex: String) -> [UInt8] {
        let h = Array(hex.filter { !$0.isWhitespace })
        return stride(from: 0, to: h.count, by: 2).map { UInt8(String(h[$0...$0 + 1]), radix: 16)! }
    }

    @Test("each pattern matches the whole ATR as pcsc_scan reads it", arguments: [
        ("3B80800101", ["ISO 14443 Type B without historical bytes", "Electronic Passport"]),
        ("3B8080010100", []),                      // a longer ATR: the whole ATR must match
        ("3B8F8001804F0CA0000003060300010000000068", ["RFID - ISO 14443 Type A Part 3 (as per PCSC std part3)"]),
        ("3B3B11008069AF030C016F830090", []),      // truncated: the last byte missing
        ("3B3B11008069AF030C016F83009000", ["classes and nibbles"]),
        ("3B3B11008069AB030C016F83009000", []),    // A[FE] refuses AB
        ("3B7594000062020203 01", ["a range"]),
        ("3B7594000062020204 01", []),
        ("3B391900534F4D414453333033", ["a class with a comma"]),
        ("3B391900534F4D414453333032", []),
        ("3BEF00FF8131424501020338", ["any rest, then 38"]),
        ("3BEF00FF813142450102", []),
        ("3B021450", ["lower case"]),
    ])
    func matches(_ atr: String, _ names: [String]) {
        let list = SmartcardList(parsing: Self.sample, path: "sample")
        #expect(list.entries.count == 7)
        #expect(list.names(for: Self.bytes(atr)) == names)
    }

    @Test("no list to be read: nil (the ATR alone is shown); the first readable one wins")
    func load() throws {
        #expect(SmartcardList.load(from: ["/nonexistent/smartcard_list.txt"]) == nil)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tapemu-atr-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("smartcard_list.txt").path
        try Self.sample.write(toFile: path, atomically: true, encoding: .utf8)
        let list = try #require(SmartcardList.load(from: ["/nonexistent/x", path]))
        #expect(list.path == path)
        #expect(SmartcardList.defaultPaths(home: "/home/u") == ["/home/u/.cache/smartcard_list.txt", "/usr/share/pcsc/smartcard_list.txt"])
    }

    @Test("Debian's list, where installed, names a MIFARE Classic 1K and vpcd's virtual card")
    func debianList() throws {
        guard let list = SmartcardList.load(from: ["/usr/share/pcsc/smartcard_list.txt"]) else { return }
        #expect(list.entries.count > 1000)
        #expect(list.names(for: Self.bytes("3B8F8001804F0CA000000306030001000000006A"))
            .contains("NXP/Philips MIFARE Classic 1K (as per PCSC std part3)"))
        #expect(list.names(for: Self.bytes("3B80800101")).first == "ISO 14443 Type B without historical bytes")
    }
}

extension PCSCIntegrationTests {
    @Test("`tapemu readers` names the served card from pcsc-tools' list and says where the list is")
    func readersNameTheCard() async throws {
        guard let context = await RealPCSC.context(), let tapemu = tapemuExecutable() else { return }
        guard let list = SmartcardList.load() else { return }
        let card = EmulatedCard(profile: try #require(CardProfiles.named("visa-qvsdc")))
        let names = list.names(for: card.atr)
        try await RealPCSC.serving(card, context: context) { reader in
            _ = try await context.waitForCard(in: reader, timeout: RealPCSC.patience)
            let text = try await runProgram(tapemu, ["readers"])
            #expect(text.status == 0, "\(text.stderr)")
            if !names.isEmpty { #expect(text.stdout.contains("   Known as: \(names.joined(separator: "; "))\n"), "\(text.stdout)") }
            #expect(text.stdout.hasSuffix("ATR names from \(list.path) (pcsc-tools' list, as pcsc_scan)\n"), "\(text.stdout)")
            let json = try await runProgram(tapemu, ["readers", "--json"])
            let doc = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(doc["atrNamesFrom"] as? String == list.path)
            let entry = try #require((doc["readers"] as? [[String: Any]])?.first { $0["name"] as? String == reader })
            #expect(entry["knownAs"] as? [String] == names)
        }
    }
}
