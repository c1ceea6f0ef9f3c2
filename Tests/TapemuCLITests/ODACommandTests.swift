import Cryptography
import EMVKernel
import Foundation
import ISO7816
import Testing
import VirtualCard
import TestSupport

/// `read` and `replay` with offline data authentication: the ODA line, JSON "oda", --ca-keys and
/// --crl (README "Offline data authentication").
@Suite("ODA on the command line", .temporaryDirectories)
struct ODACommandTests {
    /// `tapemu read` with `readArguments`, recorded to a trace in a temporary directory, then
    /// `tapemu replay --json` of that trace: the trace's path and the ODA line replay reports.
    static func recordAndReplay(_ readArguments: [String]) async throws -> (trace: String, odaLine: String?) {
        let trace = try temporaryDirectory() + "/read.apdu"
        #expect(await runCLI(["read"] + readArguments + ["--record", trace]).status == 0)
        let replay = await runCLI(["replay", trace, "--json"])
        #expect(replay.status == 0)
        let traces = try #require(try jsonObject(replay.out)["traces"] as? [[String: Any]])
        return (trace, traces.first?["oda"] as? String)
    }

    @Test("read prints one ODA line; --json reports oda with the method, the CA key and each step")
    func readLineAndJSON() async throws {
        let text = await runCLI(["read", "--card", "visa-qvsdc"])
        #expect(text.status == 0)
        let lines = text.out.split(separator: "\n").filter { $0.hasPrefix("ODA") }
        #expect(lines.count == 1)
        #expect(lines.first?.contains("fDDA with CA A000000003/E7: verified") == true)
        let json = await runCLI(["read", "--card", "mastercard-mchip", "--json"])
        let oda = try #require(try jsonObject(json.out)["oda"] as? [String: Any])
        #expect(oda["method"] as? String == "CDA")
        #expect(oda["caKey"] as? String == "A000000004/E7")
        #expect(oda["issuerCertificate"] as? String == "recovered")
        #expect(oda["iccCertificate"] as? String == "recovered")
        #expect(oda["signature"] as? String == "verified")
    }

    @Test("a CDA mismatch is the reader's offline decline (exit 2) and its JSON error still says why")
    func cdaMismatch() async throws {
        let r = await runCLI(["read", "--card", "oda-cda-mismatch", "--json"])
        #expect(r.status == 2)
        let d = try jsonObject(r.out)
        let oda = try #require(d["oda"] as? [String: Any])
        #expect((oda["signature"] as? String)?.hasPrefix("failed: ") == true)
        #expect(oda["tvrByte1"] as? String == "04")
        #expect((d["error"] as? [String: Any])?["code"] as? String == "cardDeclinedOffline")
    }

    @Test("--crl refuses the certificate it names; a missing or malformed --ca-keys or --crl file exits 66 or 65 naming it")
    func files() async throws {
        let dir = try temporaryDirectory()
        let crl = dir + "/revoked.crl"
        try "A000000003 E7 0BAD01\n".write(toFile: crl, atomically: true, encoding: .utf8)
        let revoked = await runCLI(["read", "--card", "oda-revoked-certificate", "--crl", crl, "--json"])
        #expect(revoked.status == 0)   // online, with the bit for the issuer
        let oda = try #require(try jsonObject(revoked.out)["oda"] as? [String: Any])
        #expect((oda["issuerCertificate"] as? String)?.contains("revocation list") == true)
        #expect(oda["tvrByte1"] as? String == "08")
        #expect(await runCLI(["read", "--card", "visa-qvsdc", "--ca-keys", dir + "/none.txt"]).status == 66)
        let bad = dir + "/bad.txt"
        try "A000000003 E7 03 - 0101 00\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let r = await runCLI(["read", "--card", "visa-qvsdc", "--ca-keys", bad])
        #expect(r.status == 65)
        #expect(r.err.contains("--ca-keys") && r.err.contains("line 1"))
    }

    @Test("a user key file that replaces the test CA's key with another makes the chain fail: the kernel uses the file's keys")
    func userKeysReplace() async throws {
        let dir = try temporaryDirectory()
        // Visa's live 1984-bit key 09 listed again as index E7: the test CA's certificates no
        // longer open.
        let visa09 = try #require(CAPublicKeyList.builtIn.key(rid: [0xA0, 0, 0, 0, 0x03], index: 0x09))
        let modulus = Hex.encode(visa09.modulus)
        let check = Hex.encode(Crypto.sha1([0xA0, 0, 0, 0, 0x03, 0xE7] + visa09.modulus + [0x03]))
        let file = dir + "/keys.txt"
        try "A000000003 E7 03 - \(modulus) \(check) replaced\n".write(toFile: file, atomically: true, encoding: .utf8)
        let r = await runCLI(["read", "--card", "visa-qvsdc", "--ca-keys", file, "--json"])
        let oda = try #require(try jsonObject(r.out)["oda"] as? [String: Any])
        #expect((oda["issuerCertificate"] as? String)?.hasPrefix("failed: ") == true)
    }

    @Test("replay of a recorded ODA card authenticates it with the trace's own unpredictable number and amounts")
    func replayAuthenticates() async throws {
        let (trace, odaLine) = try await Self.recordAndReplay(["--card", "visa-qvsdc", "--amount", "777"])
        #expect(odaLine == "ODA fDDA with CA A000000003/E7: verified")
        let read = await runCLI(["read", "--trace", trace, "--json"])
        let oda = try #require(try jsonObject(read.out)["oda"] as? [String: Any])
        #expect(oda["signature"] as? String == "verified")
    }

    @Test("DDA: --oda-methods DDA,CDA runs INTERNAL AUTHENTICATE on mastercard-mchip-dda and read --json says DDA; the default reader (CDA only) does not; a bad list is exit 64; a recorded DDA read replays authenticated")
    func dda() async throws {
        let json = await runCLI(["read", "--card", "mastercard-mchip-dda", "--oda-methods", "DDA,CDA", "--json"])
        #expect(json.status == 0)
        let oda = try #require(try jsonObject(json.out)["oda"] as? [String: Any])
        #expect(oda["method"] as? String == "DDA")
        #expect(oda["signature"] as? String == "verified")
        #expect(oda["tvrByte1"] as? String == "00")
        let text = await runCLI(["read", "--card", "mastercard-mchip-dda", "--oda-methods", "DDA,CDA"])
        #expect(text.out.contains("DDA with CA A000000004/E7: verified"))
        #expect(text.out.contains("INTERNAL AUTHENTICATE") || text.out.contains("0088000004"))
        let contactless = await runCLI(["read", "--card", "mastercard-mchip-dda", "--json"])
        #expect((try jsonObject(contactless.out)["oda"] as? [String: Any])?["method"] as? String == "none")
        let tampered = await runCLI(["read", "--card", "oda-dda-tampered-sdad", "--oda-methods", "DDA", "--json"])
        #expect(tampered.status == 0)   // online, with the bit for the issuer
        #expect((try jsonObject(tampered.out)["oda"] as? [String: Any])?["tvrByte1"] as? String == "08")
        let bad = await runCLI(["read", "--card", "mastercard-mchip-dda", "--oda-methods", "DDA,XDA"])
        #expect(bad.status == 64)
        #expect(bad.err.contains("--oda-methods"))
        // The recorded reader's INTERNAL AUTHENTICATE says it did DDA: replay runs it again.
        let (_, odaLine) = try await Self.recordAndReplay(["--card", "mastercard-mchip-dda", "--oda-methods", "DDA,CDA"])
        #expect(odaLine == "ODA DDA with CA A000000004/E7: verified")
    }

    @Test("the real card of apdu-traces/real/ (not redacted: its certificates sign its PAN) authenticates with the live key, and its full PAN appears in no output: read, replay, trace show, text and JSON")
    func realCardPANStaysMasked() async throws {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        let file = parts.joined(separator: "/") + "/apdu-traces/real/mastercard-mchip-dda-emv-tools.apdu"
        let pan = "5285881254345653"
        let trace = try String(contentsOfFile: file, encoding: .utf8)
        #expect(trace.contains(pan))   // the input holds it; no output may
        let read = await runCLI(["read", "--trace", file, "--json"])
        let oda = try #require(try jsonObject(read.out)["oda"] as? [String: Any])
        #expect(oda["caKey"] as? String == "A000000004/05")
        #expect(oda["signature"] as? String == "verified")
        var seen = 0
        for args in [["read", "--trace", file], ["read", "--trace", file, "--json"], ["replay", file], ["replay", file, "--json"],
                     ["trace", "show", file], ["trace", "show", file, "--json"]] {
            let r = await runCLI(args)
            let all = r.out + r.err
            #expect(!all.contains(pan), "\(args)")
            #expect(!all.replacingOccurrences(of: " ", with: "").contains(pan), "\(args)")
            if all.contains("528588******5653") || all.contains("528588") { seen += 1 }
        }
        #expect(seen >= 4)   // the outputs do show the card, masked
    }
}
