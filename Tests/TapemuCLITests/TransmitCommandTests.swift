import CardChannel
import Foundation
import Testing
@testable import tapemu
import Timing
import APDUTrace
import TestSupport

/// `tapemu` with `stdin` on its standard input.
func runCLI(_ args: [String], stdin: String) async -> (status: Int32, out: String, err: String) {
    let captured = CapturedConsole(stdin: Array(stdin.utf8))
    let status = await TapemuCLI.main(["tapemu"] + args, console: captured.console)
    return (status, captured.stdout, captured.stderr)
}

/// A file with `text` in a fresh temporary directory; its path.
func temporaryFile(_ name: String, _ text: String) throws -> String {
    let path = try temporaryDirectory() + "/" + name
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// `tapemu transmit` through the command line, in process: virtual cards and traces (the PC/SC
/// path, and the comparison with scriptor, are in PCSCTests).
@Suite("tapemu transmit", .temporaryDirectories)
struct TransmitCommandTests {
    static let selectPPSE = "00A404000E325041592E5359532E444446303100"
    static let selectVisa = "00A4040007A000000003101000"
    /// The GPO the kernel sent to visa-qvsdc when `apdu-traces/visa-qvsdc.apdu` was recorded.
    static let gpo = "80A80000238321248040000000000010000000000000000724800000800009782611300085BD3D9100"
    static let readRecord = "00B2011C00"

    static func steps(_ out: String) throws -> [[String: Any]] {
        try #require(try jsonObject(out)["steps"] as? [[String: Any]])
    }

    @Test("APDUs as arguments: each answer with its status word named and its TLV decoded, the PAN masked")
    func arguments() async throws {
        let r = await runCLI(["transmit", Self.selectPPSE, Self.selectVisa, Self.gpo, Self.readRecord])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.hasPrefix("Card: visa-qvsdc  ATR 3B80800101 — ISO 14443-4 card\n"))
        #expect(r.out.contains("> \(Self.selectPPSE)  SELECT 2PAY.SYS.DDF01\n"))
        #expect(r.out.contains("  9000 success"))
        #expect(r.out.contains("50 Application Label [11] 5649534120435245444954 = \"VISA CREDIT\""))
        #expect(r.out.contains("> \(Self.readRecord)  READ RECORD SFI 3 record 1\n"))
        #expect(r.out.contains("476173******0010"))
        for pan in fullPANs { #expect(!r.out.contains(pan) && !r.err.contains(pan)) }
    }

    @Test("--json: one document, a step per APDU with its instruction, status, TLV and masked bytes")
    func json() async throws {
        let r = await runCLI(["transmit", "--json", Self.selectPPSE, Self.selectVisa, Self.gpo, Self.readRecord, "00B2021C00"])
        #expect(r.status == 0, "\(r.err)")
        let doc = try jsonObject(r.out)
        #expect(doc["source"] as? String == "visa-qvsdc")
        #expect(doc["completed"] as? Bool == true)
        let steps = try Self.steps(r.out)
        #expect(steps.map { $0["line"] as? Int } == [1, 2, 3, 4, 5])
        #expect(steps.map { $0["sw"] as? String } == ["9000", "9000", "9000", "9000", "6A83"])
        #expect(steps[4]["status"] as? String == "record not found")
        #expect(steps[0]["instruction"] as? String == "SELECT 2PAY.SYS.DDF01")
        #expect(steps[0]["tlv"] != nil && steps[0]["data"] != nil)
        // The record holds the PAN: marked redacted, its bytes masked by the one policy.
        #expect(steps[3]["redacted"] as? Bool == true)
        #expect((steps[3]["data"] as? String).map { !$0.contains("4761739001010010") } ?? true)
        #expect((steps[3]["response"] as? String)?.contains("476173******0010") == true)
        for pan in fullPANs { #expect(!r.out.contains(pan)) }
    }

    @Test("--raw: each answer's bytes, one line each, PANs masked")
    func raw() async throws {
        let r = await runCLI(["transmit", "--raw", Self.selectPPSE, Self.selectVisa, "80CA9F3600", Self.gpo, Self.readRecord])
        #expect(r.status == 0, "\(r.err)")
        let lines = r.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        #expect(lines[0].hasPrefix("6F34840E325041592E5359532E4444463031") && lines[0].hasSuffix("9000"))
        #expect(lines[2] == "9F360200299000")   // GET DATA: the ATC before the first transaction (41)
        #expect(lines[3].contains("5711476173******0010D") && lines[3].hasSuffix("9000"))
        #expect(lines[4].contains("5A08476173******0010") && lines[4].hasSuffix("9000"))
        #expect(r.err.contains("visa-qvsdc, ATR 3B80800101"))
    }

    @Test("61xx is fetched with GET RESPONSE and 6Cxx resent with the card's Le, both shown; --no-auto-response shows them as sent")
    func autoResponse() async throws {
        // The commands of apdu-traces/chained-61xx-6cxx.apdu.
        let gpo = "80A80000238321248040000000000010000000000000000724800000800009782611300036D0D4FD00"
        let r = await runCLI(["transmit", "--card", "chained", "--json", Self.selectPPSE, Self.selectVisa, gpo, Self.readRecord])
        #expect(r.status == 0, "\(r.err)")
        let steps = try Self.steps(r.out)
        #expect(steps.map { $0["sw"] as? String } == ["9000", "9000", "9000", "9000"])
        let ppseWire = try #require(steps[0]["wire"] as? [[String: Any]])
        #expect(ppseWire.map { $0["command"] as? String } == [Self.selectPPSE, "00C0000036"])
        #expect((ppseWire[0]["response"] as? String) == "6136")
        let recordWire = try #require(steps[3]["wire"] as? [[String: Any]])
        #expect(recordWire.map { $0["response"] as? String }.first == "6C3D")
        #expect(recordWire.map { $0["command"] as? String }.last == "00B2011C3D")

        let text = await runCLI(["transmit", "--card", "chained", Self.selectPPSE])
        #expect(text.out.contains("  < 6136  54 more byte(s) available (GET RESPONSE)\n  > 00C0000036  GET RESPONSE\n< 6F34"))

        let asSent = await runCLI(["transmit", "--card", "chained", "--raw", "--no-auto-response",
                                   Self.selectPPSE, "00C0000036", Self.selectVisa, gpo, Self.readRecord])
        #expect(asSent.status == 0)
        let lines = asSent.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        #expect(lines[0] == "6136")
        #expect(lines[1].hasPrefix("6F34") && lines[1].hasSuffix("9000"))
        // The GPO answer holds the card's fDDA signature (9F4B) since the built-in cards carry ODA keys: 217 bytes.
        #expect(lines[2] == "615A" && lines[3] == "61D9")
        #expect(lines[4] == "6C3D")
    }

    @Test("a script file in scriptor's syntax: comments, spaced hex, a continued line, reset, exit")
    func scriptFile() async throws {
        let script = try temporaryFile("visa.script", """
            # scriptor's syntax\r
            00 A4 04 00 0E 32 50 41 59 2E 53 59 53 2E 44 44 46 30 31 00\r

            00A4040007 \\
              A000000003101000   # the Visa AID
            reset
            00B2011C00
            exit
            this line is never read
            """)
        let r = await runCLI(["transmit", "-f", script, "--json"])
        #expect(r.status == 0, "\(r.err)")
        let steps = try Self.steps(r.out)
        #expect(steps.map { $0["line"] as? Int } == [2, 4, 6, 7])
        #expect(steps[1]["instruction"] as? String == "SELECT A0000000031010")
        #expect(steps[2]["reset"] as? Bool == true && steps[2]["atr"] as? String == "3B80800101")
        // After the reset the card has no selected application: READ RECORD is refused.
        #expect(steps[3]["sw"] as? String == "6985")
    }

    @Test("the script on stdin, with '-' or without arguments")
    func standardInput() async throws {
        for args in [["transmit", "--raw", "-"], ["transmit", "--raw"], ["transmit", "--raw", "-f", "-"]] {
            let r = await runCLI(args, stdin: "# PPSE\n\(Self.selectPPSE)\n80CA9F3600\n")
            #expect(r.status == 0, "\(args): \(r.err)")
            #expect(r.out.split(separator: "\n").count == 2, "\(args)")
        }
    }

    @Test("a trace's card side answers the trace's commands; another command is a mismatch (exit 65)")
    func trace() async throws {
        let file = ReadCommandTests.traces + "/visa-qvsdc.apdu"
        let shown = await runCLI(["trace", "show", "--json", file])
        let exchanges = try #require(try jsonObject(shown.out)["exchanges"] as? [[String: Any]])
        let commands = exchanges.compactMap { $0["command"] as? String }
        let responses = exchanges.compactMap { $0["response"] as? String }
        #expect(commands.count == 4)
        let r = await runCLI(["transmit", "--trace", file, "--raw"] + commands)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.split(separator: "\n").map(String.init) == responses)

        // reset starts the trace again.
        let again = await runCLI(["transmit", "--trace", file, "--raw", commands[0], "reset", commands[0]])
        #expect(again.status == 0, "\(again.err)")
        #expect(again.out.split(separator: "\n").map(String.init) == [responses[0], "3B80800101", responses[0]])

        let other = await runCLI(["transmit", "--trace", file, Self.selectVisa])
        #expect(other.status == 65)
        #expect(other.err.hasPrefix("tapemu: line 1: "))
        #expect(other.out.contains("! traceMismatch"))
    }

    @Test("a card torn mid-script: what was answered is shown, then the removal, exit 75; --json says so too")
    func cardRemoved() async throws {
        let args = ["transmit", "--card", "torn", Self.selectPPSE, Self.selectVisa, Self.gpo, Self.readRecord]
        let r = await runCLI(args)
        #expect(r.status == 75)
        #expect(r.out.contains("! cardRemoved: the card was removed from the field"))
        #expect(r.err.hasPrefix("tapemu: line 4: the card was removed"))
        #expect(r.err.split(separator: "\n").count == 1)

        let json = await runCLI(args + ["--json"])
        #expect(json.status == 75)
        let doc = try jsonObject(json.out)
        #expect(doc["completed"] as? Bool == false)
        let error = try #require(doc["error"] as? [String: Any])
        #expect(error["code"] as? String == "cardRemoved" && error["line"] as? Int == 4)
        #expect(try Self.steps(json.out).count == 4)
    }

    @Test("a card that does not answer within --apdu-timeout: exit 75 (on a manual clock, nothing sleeps)")
    func timeout() async throws {
        var arguments = Arguments(["--card", "mute", "--apdu-timeout", "2s", Self.selectPPSE, Self.selectVisa, Self.gpo])
        var command = try TransmitCommand(arguments: &arguments)
        let manual = ManualClock()
        command.clock = MonotonicClock(manual)
        let captured = CapturedConsole()
        let run = Task { [command] in try await command.run(captured.console) }
        // The mute card's endless wait and the APDU deadline.
        await manual.waitForSleepers(2)
        manual.advance(by: .seconds(2))
        do {
            _ = try await run.value
            Issue.record("a mute card answered")
        } catch let failure as CommandFailure {
            #expect(failure.exitCode == 75)
            #expect(failure.message.contains("line 3") && failure.message.contains("2 s"))
        }
        #expect(captured.stdout.contains("! timeout"))
    }

    static let badInputs: [(args: [String], status: Int32, message: String)] = [
        (["transmit", "00A4040", "00B2"], 65, "argument 1: not an APDU in hex (odd number of hex digits)"),
        (["transmit", Self.selectPPSE, "00ZZ0000"], 65, "argument 2: not an APDU in hex"),
        (["transmit", "00A4"], 65, "argument 1: not a command APDU"),
        (["transmit", "# nothing"], 65, "the script holds no APDU to send"),
        (["transmit", "--raw", "--json", Self.selectPPSE], 64, "--raw and --json cannot be used together"),
        (["transmit", "-f", "x.script", Self.selectPPSE], 64, "give the APDUs as arguments or with -f, not both"),
        (["transmit", "--apdu-timeout", "0s", Self.selectPPSE], 64, "--apdu-timeout must be more than 0"),
        (["transmit"], 64, "no APDU to send"),
        (["transmit", "--card", "nope", Self.selectPPSE], 64, "unknown card profile 'nope'"),
        (["transmit", "--card", "/nonexistent/card.json", Self.selectPPSE], 66, "cannot read the profile file"),
        (["transmit", "--trace", "/nonexistent/x.apdu", Self.selectPPSE], 66, "x.apdu"),
        (["transmit", "-f", "/nonexistent/x.script"], 66, "/nonexistent/x.script: cannot read the script (no such file or directory)"),
        (["transmit", "-f", "/dev/zero"], 66, "/dev/zero: cannot read the script (it holds more than 64 MiB (a device such as /dev/zero never ends))"),
    ]

    @Test("bad input: one clear line on stderr, the documented exit status, nothing sent", arguments: badInputs.indices)
    func badInput(index: Int) async throws {
        let (args, status, message) = Self.badInputs[index]
        let r = await runCLI(args)
        #expect(r.status == status, "\(args): \(r.err)")
        #expect(r.err.hasPrefix("tapemu: ") && r.err.contains(message), "\(args): \(r.err)")
        // Nothing on stdout but, with --json, the error document.
        #expect(r.out.isEmpty || (args.contains("--json") && r.out.contains("\"exitCode\" : \(status)")), "\(args): \(r.out)")
        let help = TapemuCLI.commandHelp(TransmitCommand.configuration)
        #expect(help.contains("\n  \(status) "), "tapemu help transmit does not document \(status)")
    }

    @Test("a bad line in a script file is named by its line; a directory is not a script")
    func badScriptLine() async throws {
        let script = try temporaryFile("bad.script", "# first\n\(Self.selectPPSE)\n00A4 04 0G\n")
        let r = await runCLI(["transmit", "-f", script])
        #expect(r.status == 65)
        #expect(r.err.contains("bad.script line 3: not an APDU in hex"))
        #expect(r.out.isEmpty)
        let unfinished = try temporaryFile("open.script", "00A40400 \\\n")
        #expect(await runCLI(["transmit", "-f", unfinished]).err.contains("open.script line 1: the script ends inside a line continued"))
        let dir = try temporaryDirectory()
        let d = await runCLI(["transmit", "-f", dir])
        #expect(d.status == 66, "\(d.err)")
        #expect(d.err == "tapemu: \(dir): cannot read the script (it is a directory)\n", "\(d.err)")
    }

    /// `-f <(command)` names a pipe: Foundation's file reading refused it ("You don't have
    /// permission", its error dump on stderr).
    @Test("a script from a pipe (-f <(command), /dev/fd/N) is read like a file")
    func scriptFromAPipe() async throws {
        let dir = try temporaryDirectory()
        let fifo = dir + "/script.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let writer = Thread {
            let fd = open(fifo, O_WRONLY)
            let line = Array("\(Self.selectPPSE)\n".utf8)
            _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        writer.start()
        let r = await runCLI(["transmit", "-f", fifo])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("90 00") || r.out.contains("9000"), "\(r.out)")
    }

    @Test("a line that is not hex is echoed with any PAN in it masked, however it is spaced or encoded")
    func badLineEchoMasksPAN() async throws {
        let visa = "4761739001010010"
        let r = await runCLI(["transmit", "\(visa)zz"])
        #expect(r.status == 65)
        #expect(r.err.contains("argument 1: not an APDU in hex (not a hex digit at character 17): '476173******0010zz'"), "\(r.err)")
        let spaced = await runCLI(["transmit", "47 61 73 90 01 01 00 10 zz"])
        #expect(spaced.status == 65)
        #expect(!spaced.err.contains(visa) && spaced.err.contains("476173******0010zz"), "\(spaced.err)")
        let asciiHex = visa.utf8.map { String(format: "%02X", $0) }.joined()
        let ascii = await runCLI(["transmit", asciiHex + "zz"])
        #expect(ascii.status == 65)
        #expect(!ascii.err.contains(asciiHex) && ascii.err.contains("argument 1: not an APDU in hex"), "\(ascii.err)")
        // Without a PAN the line is shown as typed.
        #expect(await runCLI(["transmit", "00 A4 zz"]).err.contains(": '00 A4 zz'"))
    }

    @Test("a PIN block is never shown")
    func pinHidden() async throws {
        let r = await runCLI(["transmit", "--json", "0020008008241234FFFFFFFFFF"])
        #expect(r.status == 0, "\(r.err)")
        #expect(!r.out.contains("241234"))
        #expect(try Self.steps(r.out)[0]["command"] as? String == "00200080 (PIN block hidden)")
    }

    @Test("APDU scripts parse as scriptor reads them")
    func scriptSyntax() throws {
        let s = try APDUScript.parse(text: "#c\n\n00a4 0400 00\nRESET\n 00 B2 \\\n 01 0C 00\nExit\n00", name: "s")
        #expect(s.steps.count == 3)
        guard case .send(let c, let line) = s.steps[2] else { Issue.record("\(s.steps)"); return }
        #expect(c.bytes == [0x00, 0xB2, 0x01, 0x0C, 0x00] && line == 5)
        #expect(s.steps[1] == .reset(line: 4))
        #expect(throws: APDUScript.Problem.self) { try APDUScript.parse(text: "00A40400\nresetx\n", name: "s") }
    }
}
