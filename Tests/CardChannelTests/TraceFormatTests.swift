import Testing
import TestSupport
import ISO7816
@testable import CardChannel
@testable import APDUTrace

@Suite("Trace format: parse, write, errors")
struct TraceFormatTests {
    @Test func parsesTheSample() throws {
        let t = TraceSamples.visa
        #expect(t.comments == ["A hand-made Visa session for the trace tests."])
        #expect(t.headers.map(\.key) == ["title", "reader", "atr", "x-custom"])
        #expect(t[header: "x-custom"] == "kept as is")
        #expect(t.title == "Visa sample")
        #expect(t.atr == (try Hex.decode("3B8F8001804F0CA0000003060300030000000068")))
        #expect(t.entries.count == 13)
        #expect(t.entries[1].time == .microseconds(4100))
        #expect(t.entries[0].sourceLine == 7)
        let x = t.exchanges
        #expect(x.count == 6)
        #expect(x[0].commandAPDU == CommandAPDU.selectPPSE)
        #expect(x[2].cardTime == .milliseconds(31))
        guard case .event(let e) = t.entries.last?.kind else { Issue.record("last entry is not an event"); return }
        #expect(e == .cardRemoved)
    }

    @Test func writerAndParserRoundTrip() throws {
        let t = TraceSamples.visa
        let again = try APDUTrace(parsing: t.text)
        #expect(again == t)
        #expect(again.text == t.text)
        // And a trace built in code, with every event, odd times and an empty header.
        var built = APDUTrace(comments: ["built"], headers: [.init("title", "x"), .init("empty", "")])
        built.entries = [
            .event(.cardRemoved, at: .zero),
            .command(.selectPPSE, at: .nanoseconds(1)),
            .event(.timeout, at: .milliseconds(2)),
            .command(.selectPPSE, at: .seconds(3)),
            .event(.transmitError("SCARD_E_NOT_TRANSACTED"), at: .seconds(3)),
            .command(.readRecord(1, sfi: 1), at: .seconds(4)),
            .response(ResponseAPDU(data: [1, 2], statusWord: .success), at: .seconds(4) + .microseconds(7)),
            .event(.readerRemoved, at: .seconds(12345)),
        ]
        #expect(try APDUTrace(parsing: built.text) == built)
    }

    /// Found by fuzzing: a lone CR inside a header value was kept by the parser but written as a
    /// space, so the trace did not read back as it was. A lone CR now ends a line, like LF and CRLF.
    @Test func aLoneCREndsALine() throws {
        let t = try APDUTrace(parsing: "@format tapemu-apdu-trace/1\r@title a\r0 > 00A4040000\r0.5 < 9000\r")
        #expect(t.title == "a")
        #expect(t.exchanges.count == 1)
        #expect(throws: TraceError.self) { try APDUTrace(parsing: "@format tapemu-apdu-trace/1\n@title a\rb\n") }
    }

    /// Header values and event details are kept as a file holds them, so any trace a program
    /// builds (an importer, a recorder) is written and read back equal.
    @Test func valuesAreKeptOnOneLine() throws {
        var t = APDUTrace(headers: [.init("reader", " Virtual\nPCD\r\n00\r00\t")])
        t[header: "title"] = "two\nlines "
        t.entries = [.command(CommandAPDU(cla: 0, ins: 0xB2, p1: 1, p2: 0x0C, le: 0), at: .zero),
                     .event(TraceEvent(.transmitError, detail: " SCARD\r\nE "), at: .zero)]
        #expect(t.reader == "Virtual PCD 00 00")
        #expect(t.title == "two lines")
        #expect(t.entries[1].kind == .event(.transmitError("SCARD E")))
        #expect(TraceEvent(.timeout, detail: " \n ").detail == nil)
        #expect(try APDUTrace(parsing: t.text) == t)
    }

    @Test func acceptsLowerCaseHexSpacesAndCRLF() throws {
        let text = "@format tapemu-apdu-trace/1\r\n0 > 00 a4 04 00 00\r\n0.5 < 90 00\r\n"
        let t = try APDUTrace(parsing: text)
        #expect(t.exchanges.first?.command == [0x00, 0xA4, 0x04, 0x00, 0x00])
        #expect(t.entries[1].time == .milliseconds(500))
    }

    @Test(arguments: [
        (Duration.zero, "0.000000"),
        (.microseconds(7731), "0.007731"),
        (.seconds(12) + .nanoseconds(5), "12.000000005"),
        (.seconds(-1), "0.000000"),
    ])
    func formatsTimes(_ d: Duration, _ s: String) {
        #expect(APDUTrace.formatTime(d) == s)
        if d >= .zero { #expect(APDUTrace.parseTime(s) == d) }
    }

    /// Broken traces, the error code and the line it names.
    static let broken: [(name: String, text: String, code: TraceError.Code, line: Int?)] = [
        ("empty", "", .missingFormat, 1),
        ("no format", "# c\n0.0 > 00A40400\n", .missingFormat, 2),
        ("header before format", "@title x\n@format tapemu-apdu-trace/1\n", .missingFormat, 1),
        ("future version", "@format tapemu-apdu-trace/2\n", .unknownFormatVersion, 1),
        ("other format", "# x\n@format pcsc-spy\n", .notATrace, 2),
        ("second format", "@format tapemu-apdu-trace/1\n@format tapemu-apdu-trace/1\n", .badHeader, 2),
        ("bad key", "@format tapemu-apdu-trace/1\n@ti/tle x\n", .badHeader, 2),
        ("bad hex", "@format tapemu-apdu-trace/1\n0.0 > 00A4G400\n", .badHex, 2),
        ("odd hex", "@format tapemu-apdu-trace/1\n0.0 > 00A404000\n", .badHex, 2),
        ("empty command", "@format tapemu-apdu-trace/1\n0.0 >\n", .badHex, 2),
        ("not an APDU", "@format tapemu-apdu-trace/1\n0.0 > 00A4\n", .badCommand, 2),
        ("Lc lies", "@format tapemu-apdu-trace/1\n0.0 > 00A4040005A000\n", .badCommand, 2),
        ("short response", "@format tapemu-apdu-trace/1\n0.0 > 00A40400\n0.1 < 90\n", .badResponse, 3),
        ("response first", "@format tapemu-apdu-trace/1\n@title t\n\n0.0 < 9000\n", .responseWithoutCommand, 4),
        ("two responses", "@format tapemu-apdu-trace/1\n0 > 00A40400\n0 < 9000\n0 < 9000\n", .responseWithoutCommand, 4),
        ("two commands", "@format tapemu-apdu-trace/1\n0 > 00A40400\n0 > 00A40400\n", .commandWithoutResponse, 3),
        ("unanswered at end", "@format tapemu-apdu-trace/1\n0 > 00A40400\n0 < 9000\n1 > 00B2010C00\n", .commandWithoutResponse, 4),
        ("bad timestamp", "@format tapemu-apdu-trace/1\n0,5 > 00A40400\n", .badTimestamp, 2),
        ("too many decimals", "@format tapemu-apdu-trace/1\n0.1234567890 > 00A40400\n", .badTimestamp, 2),
        ("negative", "@format tapemu-apdu-trace/1\n-1 > 00A40400\n", .badLine, 2),
        ("backwards", "@format tapemu-apdu-trace/1\n1.5 > 00A40400\n1.4 < 9000\n", .timeGoesBackwards, 3),
        ("unknown event", "@format tapemu-apdu-trace/1\n0 ! card-exploded\n", .unknownEvent, 2),
        ("transmit-error without name", "@format tapemu-apdu-trace/1\n0 ! transmit-error\n", .unknownEvent, 2),
        ("header after exchange", "@format tapemu-apdu-trace/1\n0 > 00A40400\n0 < 9000\n@title late\n", .headerAfterExchange, 4),
        ("unknown marker", "@format tapemu-apdu-trace/1\n0 ? 00A40400\n", .badLine, 2),
        ("no marker", "@format tapemu-apdu-trace/1\n0\n", .badLine, 2),
        ("marker glued to hex", "@format tapemu-apdu-trace/1\n0 >00A40400\n", .badLine, 2),
        ("garbage line", "@format tapemu-apdu-trace/1\nhello\n", .badLine, 2),
    ]

    @Test(arguments: broken.indices)
    func brokenTracesNameTheLine(_ i: Int) {
        let c = Self.broken[i]
        do {
            _ = try APDUTrace(parsing: c.text, path: "broken.apdu")
            Issue.record("\(c.name): parsed")
        } catch {
            #expect(error.code == c.code, "\(c.name): \(error)")
            #expect(error.lineNumber == c.line, "\(c.name): \(error)")
            #expect(error.path == "broken.apdu")
            if let l = c.line { #expect(error.description.hasPrefix("broken.apdu:\(l): "), "\(error)") }
        }
    }

    @Test func invalidUTF8IsAnError() async {
        await expectThrows(TraceError.self, .notUTF8) { _ = try APDUTrace(parsing: [0x40, 0xFF, 0xFE], path: "x") }
    }

    @Test func missingFileIsAnError() async {
        let error = await expectThrows(TraceError.self, .unreadable, "read a missing file") {
            _ = try APDUTrace(contentsOfFile: "/nonexistent/trace.apdu")
        }
        #expect(error?.description.hasPrefix("/nonexistent/trace.apdu: ") == true)
    }

    @Test func aDirectoryIsUnreadableWithTheSystemsReasonOnOneLine() async {
        let error = await expectThrows(TraceError.self, .unreadable, "read a directory as a trace") {
            _ = try APDUTrace(contentsOfFile: "/")
        }
        #expect(error?.description == "/: cannot read the file (Is a directory)")
    }

    /// Every prefix of a valid trace either parses or fails with a typed error, never a crash.
    @Test func everyPrefixParsesOrFailsCleanly() {
        let text = Array(TraceSamples.visaText.utf8)
        for n in 0...text.count {
            do {
                _ = try APDUTrace(parsing: Array(text[..<n]))
            } catch {
                #expect(!error.reason.isEmpty)
            }
        }
    }

    @Test func headerAccessors() {
        var t = APDUTrace()
        t.atr = [0x3B, 0x00]
        t.isRedacted = true
        t.title = "x"
        #expect(t.headers == [.init("atr", "3B00"), .init("redacted", "yes"), .init("title", "x")])
        t.isRedacted = false
        t.title = nil
        #expect(t.headers == [.init("atr", "3B00")])
    }
}
