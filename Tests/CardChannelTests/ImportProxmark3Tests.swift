import Testing
import BERTLV
import ISO7816
@testable import CardChannel
@testable import APDUTrace

@Suite("Import: Proxmark3 tracelogs")
struct ImportProxmark3Tests {
    typealias P = Proxmark3Importer

    static func load(_ name: String, redact: Bool = true) throws -> APDUTrace {
        try P.importTrace(try TraceSamples.bytes(TraceSamples.capture(name)), name: name, redact: redact)
    }

    @Test func theExpressTransitCaptureImportsAndEndsWithGPOAnswered6986() throws {
        let t = try Self.load("hf_visa_apple_ecp.trace")
        let x = t.exchanges
        #expect(x.count == 3)
        #expect(x.map { $0.commandAPDU?.instructionCode } == [0xA4, 0xA4, 0xA8])
        #expect(x[0].command == (try Hex.decode("00A404000E325041592E5359532E444446303100")))
        guard case .response(let ppse)? = x[0].reply, case .response(let aid)? = x[1].reply,
              case .response(let gpo)? = x[2].reply else {
            Issue.record("missing responses: \(t.text)")
            return
        }
        #expect(ppse.statusWord == .success)
        // The SELECT AID response came in two chained I-blocks; reassembled it parses whole.
        #expect(aid.statusWord == .success)
        let fci = try BERTLV.parse(aid.data)
        #expect(fci.find(.pdol) != nil)
        #expect(fci.find(.applicationSelectionRegisteredProprietaryData)?.valueBytes == [0x00, 0x01, 0x01, 0x01])
        #expect(gpo.statusWord == StatusWord(0x6986))
        // Times: carrier cycles / 13.56 MHz, since the end of the ATS (128299479 + 8192 cycles).
        #expect(x[0].commandTime == .microseconds((131_308_035 - 128_307_671) * 1_000_000 / 13_560_000 + 1))
        // The GPO waited out a WTX: the card time runs from the command to the final I-block.
        #expect(try #require(x[2].cardTime) > .milliseconds(40))
        #expect(t[header: "ats"] == "0578807002")
        #expect(t.atr == [0x3B, 0x80, 0x80, 0x01, 0x01])
        #expect(t.isRedacted)
        #expect(try APDUTrace(parsing: t.text) == t)
    }

    @Test func theNormalCaptureImportsWithItsLostResponsesMarked() throws {
        let t = try Self.load("hf_visa_apple_normal.trace")
        let x = t.exchanges
        #expect(x.map { Hex.encode($0.command.prefix(4)) } == ["00A40400", "00A40400", "80A80000", "00B2011C"])
        guard case .response(let aid)? = x[1].reply else { Issue.record("no SELECT AID response"); return }
        #expect(aid.statusWord == StatusWord.success)
        // The sniffer lost the GPO response (a 65-byte frame with a bad CRC, NAKed) and the record.
        #expect(x[2].reply == .event(.transmitError("SCARD_E_COMM_DATA_LOST")))
        #expect(x[3].reply == .event(.transmitError("SCARD_E_COMM_DATA_LOST")))
        #expect(t.comments.contains { $0.contains("exchange 3") && $0.contains("lost") })
        #expect(try APDUTrace(parsing: t.text) == t)
    }

    @Test func theImportedCapturesReplayStructurally() async throws {
        // What a kernel sends: the PDOL of the capture filled with other terminal data.
        let t = try Self.load("hf_visa_apple_ecp.trace")
        let channel = TraceReplayChannel(trace: t, matching: TraceMatching(mode: .structural))
        #expect(try await channel.transmit(.selectPPSE).statusWord == .success)
        #expect(try await channel.transmit(.select(name: try Hex.decode("A0000000031010"))).statusWord == .success)
        let gpo = CommandAPDU.getProcessingOptions(pdolData: [UInt8](repeating: 0x11, count: 0x35))
        #expect(try await channel.transmit(gpo).statusWord == StatusWord(0x6986))
        #expect(t[header: "match"] == "structural")   // what a plain replay uses
        // Masked matching refuses it: the TTQ and amount are this terminal's, not the capture's.
        let masked = TraceReplayChannel(trace: t, matching: TraceMatching(mode: .masked))
        _ = try await masked.transmit(.selectPPSE)
        _ = try await masked.transmit(.select(name: try Hex.decode("A0000000031010")))
        await #expect(throws: CardChannelError.self) { try await masked.transmit(gpo) }
    }

    @Test func theRealCapturesHoldNoPANToLeak() throws {
        for name in ["hf_visa_apple_ecp.trace", "hf_visa_apple_normal.trace"] {
            let raw = try Self.load(name, redact: false)
            let result = TraceRedactor.redact(raw)
            // Neither capture holds a readable PAN: the GPO response with track 2 and the records
            // were lost by the sniffer. Redaction is on all the same.
            #expect(result.panCount == 0, "\(name)")
            #expect(try Self.load(name).isRedacted)
        }
    }

    // MARK: Synthetic frames

    static func f(_ t: UInt32, card: Bool, _ hex: String, crc: Bool = true, duration: UInt16 = 1000) -> P.Frame {
        var d = try! Hex.decode(hex)
        if crc { let (lo, hi) = P.crcA(d); d += [lo, hi] }
        return P.Frame(timestamp: t, duration: duration, fromCard: card, data: d)
    }

    /// Polling, anticollision, SELECT, RATS/ATS: skipped.
    static let activation: [P.Frame] = [
        f(100, card: false, "52", crc: false), f(200, card: true, "0400", crc: false),
        f(300, card: false, "9320", crc: false), f(400, card: true, "08DFBFF29A", crc: false),
        f(500, card: false, "937008DFBFF29A"), f(600, card: true, "20"),
        f(700, card: false, "E050"), f(800, card: true, "0578807002"),
    ]

    @Test func chainingWTXAndCIDAreUndone() throws {
        let frames = Self.activation + [
            // Command in two chained I-blocks (with CID 01), the card ACKs the first.
            Self.f(13_560_000, card: false, "1A0100A40400"),
            Self.f(13_570_000, card: true, "AA01"),
            Self.f(13_580_000, card: false, "0B01" + "0E325041592E5359532E444446303100"),
            // The card asks for more time, twice; the reader agrees.
            Self.f(13_600_000, card: true, "FA0101"), Self.f(13_610_000, card: false, "FA0101"),
            Self.f(13_620_000, card: true, "F201"), Self.f(13_630_000, card: false, "F201"),
            // Response in two chained I-blocks, the reader ACKs.
            Self.f(27_120_000, card: true, "1A01" + "6F0A840E"),
            Self.f(27_130_000, card: false, "AB01"),
            Self.f(27_140_000, card: true, "0B01" + "01020304059000", duration: 2000),
        ]
        let t = try P.trace(from: frames)
        let x = t.exchanges
        #expect(x.count == 1)
        #expect(x[0].command == (try Hex.decode("00A404000E325041592E5359532E444446303100")))
        #expect(x[0].reply == .response(try ResponseAPDU(bytes: Hex.decode("6F0A840E01020304059000"))))
        // Origin: end of the ATS (800 + 1000 cycles). Command at its first frame; response at the
        // end of its last frame, WTX included.
        #expect(x[0].commandTime == P.seconds(13_560_000 - 1800))
        #expect(x[0].replyTime == P.seconds(27_142_000 - 1800))
        #expect(x[0].cardTime == P.seconds(27_142_000 - 1800) - P.seconds(13_560_000 - 1800))
        #expect(t[header: "ats"] == "0578807002")
    }

    @Test func aNAKedFrameIsReplacedByItsRetransmission() throws {
        var bad = Self.f(20_000, card: true, "02" + "6A82")
        bad.data[1] ^= 0xFF   // corrupt: the CRC no longer matches
        let frames = Self.activation + [
            Self.f(10_000, card: false, "02" + "00A404000E325041592E5359532E444446303100"),
            bad,
            Self.f(21_000, card: false, "B2"),
            Self.f(22_000, card: true, "02" + "6A82"),
        ]
        let t = try P.trace(from: frames)
        #expect(t.exchanges.map(\.reply) == [.response(ResponseAPDU(statusWord: .fileNotFound))])
    }

    @Test func aLostResponseBecomesAnEventAndTheCaptureGoesOn() throws {
        var bad = Self.f(20_000, card: true, "02" + "6F009000")
        bad.data.removeLast()   // truncated by the sniffer
        let frames = Self.activation + [
            Self.f(10_000, card: false, "02" + "00A404000E325041592E5359532E444446303100"),
            bad,
            Self.f(21_000, card: false, "B2"),
            Self.f(30_000, card: false, "03" + "00B2010C00"),
            Self.f(31_000, card: true, "03" + "9000"),
        ]
        let t = try P.trace(from: frames)
        #expect(t.exchanges.map(\.reply) == [
            .event(.transmitError("SCARD_E_COMM_DATA_LOST")),
            .response(ResponseAPDU(statusWord: .success)),
        ])
    }

    @Test func pollingAgainMidExchangeIsATear() throws {
        let frames = Self.activation + [
            Self.f(10_000, card: false, "02" + "00A404000E325041592E5359532E444446303100"),
            Self.f(90_000, card: false, "52", crc: false),
        ]
        let t = try P.trace(from: frames)
        #expect(t.exchanges.map(\.reply) == [.event(.cardRemoved)])
    }

    @Test func theTimestampCounterWrapsAround() throws {
        let frames = Self.activation.map { var f = $0; f.timestamp &+= 0xFFFF_0000; return f } + [
            Self.f(0xFFFF_F000, card: false, "02" + "00B2010C00"),
            Self.f(0x0000_1000, card: true, "02" + "9000"),   // after the wrap
        ]
        let t = try P.trace(from: frames)
        let x = try #require(t.exchanges.first)
        #expect(try #require(x.cardTime) > .zero)
        #expect(try #require(x.cardTime) < .milliseconds(1))
    }

    /// Found by fuzzing: a frame whose timestamp goes back (a corrupt one, or before the ATS)
    /// made a trace whose times go backwards, which the trace parser then refused.
    @Test func timesThatGoBackAreTakenAsTheTimeBefore() throws {
        let frames = Self.activation + [
            Self.f(100_000, card: false, "02" + "00B2010C00"),
            Self.f(200_000, card: true, "02" + "9000"),
            Self.f(50_000, card: false, "03" + "00B2020C00"),   // earlier than the answer before
            Self.f(60_000, card: true, "03" + "6A83"),
            Self.f(10, card: false, "02" + "00B2030C00"),       // before the ATS
            Self.f(20, card: true, "02" + "6A83"),
        ]
        let t = try P.trace(from: frames)
        #expect(t.exchanges.count == 3)
        let times = t.entries.map(\.time)
        #expect(times == times.sorted())
        #expect(try APDUTrace(parsing: t.text) == t)
    }

    /// Found by fuzzing: an I-block from the terminal that is not a command APDU became a
    /// command of the trace, which the trace parser then refused.
    @Test func aCommandThatIsNotAnAPDUIsSkippedWithItsAnswer() throws {
        let frames = Self.activation + [
            Self.f(10_000, card: false, "02" + "00B2"),
            Self.f(20_000, card: true, "02" + "6700"),
            Self.f(30_000, card: false, "03" + "00B2010C00"),
            Self.f(40_000, card: true, "03" + "9000"),
        ]
        let t = try P.trace(from: frames)
        #expect(t.exchanges.map(\.command) == [[0x00, 0xB2, 0x01, 0x0C, 0x00]])
        #expect(t.comments.contains { $0.contains("not a command APDU") })
        #expect(try APDUTrace(parsing: t.text) == t)
    }

    @Test func activationAloneHasNoExchanges() {
        do {
            _ = try P.trace(from: Self.activation)
            Issue.record("imported nothing")
        } catch {
            #expect(error.code == .noExchanges)
        }
    }

    @Test func truncatedTracelogsFailCleanly() throws {
        let bytes = try TraceSamples.bytes(TraceSamples.capture("hf_visa_apple_ecp.trace"))
        var failures = 0
        for n in 0..<bytes.count {
            do {
                _ = try P.frames(Array(bytes[..<n]))
            } catch {
                #expect(error.code == .badCapture || error.code == .noExchanges)
                failures += 1
            }
        }
        #expect(failures > 0)
    }

    static let atsToATR: [([UInt8], [UInt8])] = [
        ([0x05, 0x78, 0x80, 0x70, 0x02], [0x3B, 0x80, 0x80, 0x01, 0x01]),
        ([0x07, 0x70, 0x80, 0x70, 0x02, 0xAB, 0xCD], [0x3B, 0x82, 0x80, 0x01, 0xAB, 0xCD, 0x82 ^ 0x80 ^ 0x01 ^ 0xAB ^ 0xCD]),
    ]

    @Test(arguments: atsToATR)
    func pcscATRFromATS(_ ats: [UInt8], _ atr: [UInt8]) {
        #expect(P.pcscATR(ats: ats) == atr)
    }

    @Test func crcA() {
        // ISO/IEC 14443-3 Annex B: CRC_A of 00 00 is A0 1E; of 12 34 is 26 CF.
        #expect(P.crcA([0x00, 0x00]) == (0xA0, 0x1E))
        #expect(P.crcA([0x12, 0x34]) == (0x26, 0xCF))
    }
}
