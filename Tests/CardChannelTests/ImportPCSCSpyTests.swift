import Testing
import BERTLV
import ISO7816
@testable import CardChannel
@testable import APDUTrace

/// The logs in `apdu-traces/captures/` are real: `scriptor` (pcsc-tools) talking through pcscd
/// and vpcd to a scripted card, with pcsc-lite's spy library in between (`scriptor-*.spylog`,
/// the raw log) and `pcsc-spy -n` run over it (`scriptor-*.spyout`, the printed form).
@Suite("Import: pcsc-spy logs")
struct ImportPCSCSpyTests {
    static let testPAN = "4111111111111111"

    /// pcsc-spy's log of one SCardTransmit (READ RECORD 1 of SFI 1, answered 9000) with `status`
    /// on its result line, the call taking `seconds`.
    static func transmitCall(status: String, seconds: String) -> String {
        """
            SCardTransmit
             i bSendBuffer
             i  0000 00 B2 01 0C 00                                   .....
             o bRecvBuffer
             o  0000 90 00                                            ..
             => Command\(status)  [\(seconds)]

            """
    }

    static func load(_ name: String, redact: Bool = true) throws -> APDUTrace {
        try PCSCSpyImporter.importLog(try TraceSamples.text(TraceSamples.capture(name)), name: name, redact: redact)
    }

    static let expectedCommands = [
        "00A404000E325041592E5359532E444446303100", "00A4040007A000000003101000",
        "80A800001583133600000000000000010012345678097826113000", "00B2010C00", "00B2020C00",
    ]

    @Test(arguments: ["scriptor-visa.spylog", "scriptor-visa.spyout"])
    func aScriptorSessionImports(_ name: String) throws {
        let raw = try Self.load(name, redact: false)
        let x = raw.exchanges
        #expect(x.map { Hex.encode($0.command) } == Self.expectedCommands)
        #expect(x.map { r -> String in
            guard case .response(let r)? = r.reply else { return "event" }
            return r.statusWord.hex
        } == ["9000", "9000", "9000", "9000", "6A83"])
        #expect(raw.reader == "Virtual PCD 00 00")
        #expect(raw.atr == (try Hex.decode("3B8F8001804F0CA0000003060300030000000068")))
        // Each exchange took ~44 ms (vpcd's delayed ACK with this Python card).
        for e in x { #expect(try #require(e.cardTime) > .milliseconds(30) && e.cardTime! < .milliseconds(100)) }
        if name.hasSuffix(".spylog") {
            // The raw log has wall-clock times: the first command comes after connect and reconnect.
            #expect(x[0].commandTime > .milliseconds(100))
        } else {
            #expect(raw.comments.contains { $0.contains("printed output") })
        }
        // Redacted by default: the card's PAN (in track 2 and 5A) and name are gone.
        let red = try Self.load(name)
        #expect(red.isRedacted)
        #expect(!red.text.contains(Self.testPAN))
        #expect(!red.text.contains(Hex.encode(Array("SMITH/JOHN".utf8))))
        #expect(try APDUTrace(parsing: red.text) == red)
    }

    @Test func bothFormsGiveTheSameExchanges() throws {
        let a = try Self.load("scriptor-visa.spylog")
        let b = try Self.load("scriptor-visa.spyout")
        #expect(a.exchanges.map(\.command) == b.exchanges.map(\.command))
        #expect(a.exchanges.map(\.reply) == b.exchanges.map(\.reply))
        for (x, y) in zip(a.exchanges, b.exchanges) {
            #expect(x.cardTime == y.cardTime)
        }
    }

    @Test(arguments: ["scriptor-tear.spylog", "scriptor-tear.spyout"])
    func aTornCardImportsAsEvents(_ name: String) throws {
        let t = try Self.load(name)
        // The card reset its socket on GPO: vpcd answered an empty "success", then the next
        // SCardTransmit failed with SCARD_E_NOT_TRANSACTED.
        #expect(t.exchanges.map(\.reply).suffix(2) == [
            .event(.transmitError("malformedResponse")),
            .event(.transmitError("SCARD_E_NOT_TRANSACTED")),
        ])
    }

    @Test func theImportedSessionReplaysAgainstTheSameCommands() async throws {
        let t = try APDUTrace(parsing: try Self.load("scriptor-visa.spylog").text)
        let channel = TraceReplayChannel(trace: t, matching: TraceMatching(mode: .strict))
        for hex in Self.expectedCommands {
            _ = try await channel.transmit(try CommandAPDU(bytes: Hex.decode(hex)))
        }
        // Masked: scriptor's GPO carried UN 12345678 and date 261130; a new run may differ there.
        let masked = TraceReplayChannel(trace: t)
        for (i, hex) in Self.expectedCommands.enumerated() {
            var b = try Hex.decode(hex)
            if i == 2 { b[17] ^= 0xFF; b[24] ^= 0x01 }
            _ = try await masked.transmit(try CommandAPDU(bytes: b))
        }
    }

    @Test(arguments: [
        ("", TraceError.Code.noExchanges),
        ("hello world\n", .badCapture),
        ("7F0@>|1|2|SCardTransmit\n7F0@0x1\n7F0@<|1|3|SCardTransmit|ok|0x00000000\n", .badCapture),
        ("7F0@>|x|2|SCardTransmit\n", .badCapture),
        ("7F0@>|1|2|SCardEstablishContext\n7F0@<|1|3|SCardEstablishContext|ok|0x00000000\n", .noExchanges),
    ])
    func badLogsAreTypedErrors(_ text: String, _ code: TraceError.Code) {
        do {
            _ = try PCSCSpyImporter.parse(text, path: "x.log")
            Issue.record("parsed")
        } catch {
            #expect(error.code == code, "\(error)")
        }
    }

    @Test func everyPrefixOfARealLogImportsOrFailsCleanly() throws {
        let text = Array(try TraceSamples.text(TraceSamples.capture("scriptor-visa.spylog")).utf8)
        for n in stride(from: 0, through: text.count, by: 7) {
            do {
                _ = try PCSCSpyImporter.parse(String(decoding: text[..<n], as: UTF8.self))
            } catch {
                #expect(!error.reason.isEmpty)
            }
        }
    }

    @Test(arguments: [
        ("SCARD_W_REMOVED_CARD", TraceEvent(.cardRemoved, detail: "SCARD_W_REMOVED_CARD")),
        ("SCARD_E_READER_UNAVAILABLE", TraceEvent(.readerRemoved, detail: "SCARD_E_READER_UNAVAILABLE")),
        ("SCARD_E_TIMEOUT", TraceEvent(.timeout, detail: "SCARD_E_TIMEOUT")),
        ("SCARD_E_NOT_TRANSACTED", .transmitError("SCARD_E_NOT_TRANSACTED")),
    ])
    func returnCodesBecomeEvents(_ rv: String, _ event: TraceEvent) {
        #expect(PCSCSpyImporter.event(for: rv) == event)
    }

    /// Found by fuzzing: a status line whose name was unreadable (`([CARD_S_SUCCESS [0x00000000])`)
    /// became a `transmit-error` without a name, which a trace file cannot hold. The code in
    /// brackets decides; a transmit-error nobody named is `UNKNOWN`.
    @Test(arguments: [
        ("([CARD_S_SUCCESS [0x00000000])", nil),
        ("( [0x80100016])", "SCARD_E_NOT_TRANSACTED"),
        ("(SCARD_E_NOT_TRANSACTED [0x80100016])", "SCARD_E_NOT_TRANSACTED"),
        ("(SCARD_E_NOT_TRANSACTED [0x8010001])", "SCARD_E_NOT_TRANSACTED"),
    ] as [(String, String?)])
    func theStatusCodeDecides(_ status: String, _ error: String?) throws {
        let t = try PCSCSpyImporter.parse(Self.transmitCall(status: ". \(status)", seconds: "0.001000"))
        let reply = try #require(t.exchanges.first?.reply)
        #expect(reply == (error.map { .event(.transmitError($0)) } ?? .response(ResponseAPDU(statusWord: .success))))
        #expect(try APDUTrace(parsing: t.text) == t)
        #expect(TraceEvent(.transmitError, detail: " ").detail == "UNKNOWN")
    }

    /// Call durations add up to the trace's times: each is read within what a trace holds (10
    /// digits of seconds), so no sum overflows, and times past the format's range are kept at
    /// its end instead of making a trace that cannot be written.
    @Test func hugeDurationsStayWithinWhatATraceHolds() throws {
        let call = Self.transmitCall(status: " successful. (SCARD_S_SUCCESS [0x00000000])", seconds: "9999999999.999999")
        let t = try PCSCSpyImporter.parse(String(repeating: call, count: 3))
        #expect(t.entries.last?.time == APDUTrace.timeRange.upperBound)
        #expect(try APDUTrace(parsing: t.text) == t)
        let tooLong = Self.transmitCall(status: " successful. (SCARD_S_SUCCESS [0x00000000])", seconds: "9223372036854775807.000000")
        let u = try PCSCSpyImporter.parse(String(repeating: tooLong, count: 20))
        #expect(u.entries.allSatisfy { $0.time == .zero })
        #expect(APDUTrace.formatTime(.seconds(Int64.max) + .seconds(Int64.max)) == "9999999999.999999999")
    }

    @Test func aScriptorSessionAgainstOurEmulatedCardImportsAndReplays() async throws {
        // scriptor sent the kernel's commands to the emulated visa-qvsdc behind vpcd.
        let t = try Self.load("scriptor-emulated-visa.spylog")
        #expect(t.exchanges.count == 4)
        #expect(t.reader == "Virtual PCD 00 01")
        #expect(t.isRedacted)
        #expect(!t.text.contains("4761739001010010"))   // the card's PAN
        let channel = TraceReplayChannel(trace: t, matching: TraceMatching(mode: .strict))
        for x in t.exchanges { _ = try await channel.transmit(try #require(x.commandAPDU)) }
        #expect(channel.progress == (4, 4))
    }
}
