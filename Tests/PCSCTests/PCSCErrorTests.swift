import CardChannel
import ISO7816
import Testing
import TestSupport
import Timing
@testable import PCSC

/// The mapping of PC/SC return codes, tested without pcscd by forcing codes at the C edge.
@Suite("PC/SC errors")
struct PCSCErrorTests {
    @Test("named codes carry their C constant and a message")
    func names() {
        #expect(PCSCError.Code.noService.name == "SCARD_E_NO_SERVICE")
        #expect(PCSCError.Code.removedCard.name == "SCARD_W_REMOVED_CARD")
        #expect(PCSCError.Code.notTransacted.name == "SCARD_E_NOT_TRANSACTED")
        #expect(PCSCError.Code.noReadersAvailable.name == "SCARD_E_NO_READERS_AVAILABLE")
        #expect(PCSCError.Code.timeout.isKnown)
        #expect(!PCSCError.Code.noService.message.isEmpty)
        let e = PCSCError(.noService, function: .establishContext)
        #expect(e.description.contains("SCardEstablishContext"))
        #expect(e.description.contains("SCARD_E_NO_SERVICE"))
        #expect(e.hint?.contains("pcscd") == true)
    }

    @Test("an unknown code is kept as it came")
    func unknownCode() {
        let code = PCSCError.Code(rawValue: 0x7654_3210)
        #expect(!code.isKnown)
        #expect(code.name == "0x76543210")
        #expect(code != .unknownError && code != .internalError)
        #expect(PCSCError(code, function: .transmit).code.rawValue == 0x7654_3210)
    }

    @Test("establishing a context without pcscd gives noService, with how to start it")
    func noServiceForced() async throws {
        let forced = PCSCForcedResults([.establishContext: [.noService]])
        await PCSCTestHook.$forcedResults.withValue(forced) {
            let error = await #expect(throws: PCSCError.self) {
                _ = try await PCSCContext.establish()
            }
            #expect(error?.code == .noService)
            #expect(error?.function == .establishContext)
            do throws(CardChannelError) {
                _ = try await PCSC.openChannel(reader: "any", wait: .seconds(1))
                Issue.record("opened a channel without pcscd")
            } catch {
                #expect(error.code == .noService)
                #expect(error.hint?.contains("pcscd") == true)
                #expect(error.detail == "SCARD_E_NO_SERVICE")
            }
        }
    }

    @Test("no reader at all gives noReader")
    func noReaders() async {
        let forced = PCSCForcedResults([.establishContext: [.success], .listReaders: [.noReadersAvailable]])
        await PCSCTestHook.$forcedResults.withValue(forced) {
            await expectThrows(CardChannelError.self, .noReader) {
                _ = try await PCSC.openChannel(reader: "0", wait: .seconds(1))
            }
        }
    }

    /// (code forced on SCardTransmit, channel error expected)
    static let transmitCases: [(PCSCError.Code, CardChannelError.Code)] = [
        (.removedCard, .cardRemoved),
        (.noSmartcard, .cardRemoved),
        (.notTransacted, .cardRemoved),
        (.unpoweredCard, .cardRemoved),
        (.readerUnavailable, .readerRemoved),
        (.unknownReader, .readerRemoved),
        (.noService, .noService),
        (.serviceStopped, .noService),
        (.sharingViolation, .sharingViolation),
        (.cancelled, .cancelled),
        (.timeout, .timeout),
        (.commDataLost, .transmitFailed),
        (.resetCard, .transmitFailed),
        (.insufficientBuffer, .transmitFailed),
        (.commError, .transmitFailed),
        (.unexpected, .transmitFailed),
        (PCSCError.Code(rawValue: 0x7654_3210), .transmitFailed),
    ]

    /// `body` on a channel to "Forced Reader 00 00": establishing the context, connecting, the
    /// card's status and the reader watch succeed; each call `forced` lists takes its next code.
    static func withForcedChannel(_ forced: [PCSCFunction: [PCSCError.Code]],
                                  _ body: (PCSCCardChannel) async throws -> Void) async throws {
        let succeeding: [PCSCFunction: [PCSCError.Code]] = [
            .establishContext: [.success], .connect: [.success], .status: [.success], .getStatusChange: [.success],
        ]
        try await PCSCTestHook.$forcedResults.withValue(PCSCForcedResults(succeeding.merging(forced) { _, given in given })) {
            let context = try await PCSCContext.establish()
            try await body(try await PCSCCardChannel.wrapping(try await context.connect(to: "Forced Reader 00 00")))
        }
    }

    @Test("a failed SCardTransmit maps to the channel error", arguments: transmitCases)
    func transmitMapping(code: PCSCError.Code, expected: CardChannelError.Code) async throws {
        try await Self.withForcedChannel([.transmit: [code]]) { channel in
            do throws(CardChannelError) {
                _ = try await channel.transmit(.selectPPSE)
                Issue.record("transmit succeeded")
            } catch {
                #expect(error.code == expected)
                #expect(error.detail == code.name)
            }
            // The same mapping on the path with a deadline (a card session's), which has a
            // switch of its own.
            let clock = MonotonicClock.continuous
            do throws(CardChannelError) {
                _ = try await channel.transmit(.selectPPSE, deadline: clock.now + .seconds(60), on: clock,
                                               onTimeout: { CardChannelError(.timeout, "the deadline passed") })
                Issue.record("transmit with a deadline succeeded")
            } catch {
                #expect(error.code == expected)
                #expect(error.detail == code.name)
            }
        }
    }

    /// (code, phase, channel error expected) beyond the exchange.
    static let phaseCases: [(PCSCError.Code, PCSCPhase, CardChannelError.Code)] = [
        (.timeout, .waitingForCard, .noCard),
        (.timeout, .exchange, .timeout),
        (.unknownReader, .service, .noReader),
        (.unknownReader, .waitingForCard, .readerRemoved),
        (.notTransacted, .connecting, .transmitFailed),
        (.noReadersAvailable, .service, .noReader),
        (.unresponsiveCard, .connecting, .transmitFailed),
        (.cancelled, .waitingForCard, .cancelled),
        // pcscd stopped or restarted under a wait or a watch (the socket to it broke): the
        // service is gone (exit 69), not a reader failing mid-exchange (75).
        (.commError, .service, .noService),
        (.commError, .waitingForCard, .noService),
        (.commError, .connecting, .transmitFailed),
    ]

    @Test("errors map by phase", arguments: phaseCases)
    func phaseMapping(code: PCSCError.Code, phase: PCSCPhase, expected: CardChannelError.Code) {
        let e = CardChannelError(PCSCError(code, function: .getStatusChange), during: phase)
        #expect(e.code == expected)
        #expect(e.detail == code.name)
    }

    @Test("forced codes are taken in order, the last one stays")
    func forcedSequence() async throws {
        try await Self.withForcedChannel([.transmit: [.notTransacted, .removedCard]]) { channel in
            var details: [String?] = []
            for _ in 0..<3 {
                do throws(CardChannelError) { _ = try await channel.transmit(.selectPPSE) } catch {
                    #expect(error.code == .cardRemoved)
                    details.append(error.detail)
                }
            }
            #expect(details == ["SCARD_E_NOT_TRANSACTED", "SCARD_W_REMOVED_CARD", "SCARD_W_REMOVED_CARD"])
        }
    }

    @Test("a closed channel refuses to transmit")
    func closedChannel() async throws {
        try await Self.withForcedChannel([.disconnect: [.success]]) { channel in
            channel.close()
            await expectThrows(CardChannelError.self, .closed) { _ = try await channel.transmit(.selectPPSE) }
        }
    }

    @Test("a command whose fields were set out of range after it was made is a typed error on both paths, not a trap")
    func outOfRangeCommand() async throws {
        try await Self.withForcedChannel([.transmit: [.success, .success, .success, .success]]) { channel in
            var bigLe = CommandAPDU.selectPPSE
            bigLe.expectedResponseLength = 70_000
            var negativeLe = CommandAPDU.selectPPSE
            negativeLe.expectedResponseLength = -5
            var longData = CommandAPDU(cla: 0x80, ins: 0xE2, p1: 0, p2: 0)
            longData.data = [UInt8](repeating: 0, count: 65_536)
            for command in [bigLe, negativeLe, longData] {
                #expect(command.encodingProblem != nil)
                do throws(CardChannelError) {
                    _ = try await channel.transmit(command)
                    Issue.record("an out-of-range command was sent")
                } catch {
                    #expect(error.code == .transmitFailed)
                    #expect(error.detail == "bad length")
                }
                let session = CardSession(channel: channel)
                await expectThrows(CardChannelError.self, .transmitFailed) { _ = try await session.send(command) }
            }
            #expect(CommandAPDU.selectPPSE.encodingProblem == nil)
        }
    }

    @Test("a command needing extended lengths is refused when the ATR does not announce them")
    func extendedLength() async throws {
        try await Self.withForcedChannel([.transmit: [.success]]) { channel in
            let long = CommandAPDU(cla: 0x80, ins: 0xA8, p1: 0, p2: 0, data: [UInt8](repeating: 0, count: 300), le: 0)
            await expectThrows(CardChannelError.self, .transmitFailed) { _ = try await channel.transmit(long) }
        }
    }
}
