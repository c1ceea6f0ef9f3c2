import BERTLV
import PaymentRules
import CardChannel
@testable import EMVKernel
import ISO7816
import Testing
import VirtualCard
import Timing
import TestSupport

/// The kernel and its driver against every built-in virtual card, through VirtualCardChannel and
/// CardSession.
@Suite struct VirtualCardReadTests {
    let reader = EMVReader(environment: testEnvironment)

    func profile(_ name: String) throws -> CardProfile { try #require(CardProfiles.named(name)) }

    func read(_ profile: CardProfile, amount: UInt64 = 1250,
              onOnlineDataReady: (@Sendable (PartialCardRead) async -> Void)? = nil) async throws(KernelError) -> CardRead {
        let channel = VirtualCardChannel(card: EmulatedCard(profile: profile), simulatesCardTime: false)
        return try await reader.read(channel: channel, transaction: Transaction(amount: amount),
                                     onOnlineDataReady: onOnlineDataReady)
    }

    @Test("a read driven on the channel's thread is the read in process: one run of exchanges, two when the online data is handed out between",
          arguments: ["visa-qvsdc", "mastercard-mchip", "amex"])
    func directRead(name: String) async throws {
        let inProcess = try await read(try profile(name))
        let handedOut = Counter()
        for callback in [false, true] {
            let direct = DirectScriptedChannel(answering: EmulatedCard(profile: try profile(name)))
            defer { direct.close() }
            let session = CardSession(channel: direct)
            #expect(session.drivesDirectly)
            let handOut: @Sendable (PartialCardRead) async -> Void = { @Sendable partial in
                #expect(!partial.exchanges.isEmpty)
                handedOut.increment()
            }
            let onOnlineDataReady = callback ? handOut : nil
            let read = try await reader.read(session: session, transaction: Transaction(amount: 1250),
                                             onOnlineDataReady: onOnlineDataReady)
            #expect(read.card == inProcess.card)
            #expect(read.application == inProcess.application)
            #expect(read.cardDataObjects == inProcess.cardDataObjects)
            #expect(read.cryptogram == inProcess.cryptogram)
            #expect(read.exchanges.map(\.command) == inProcess.exchanges.map(\.command))
            #expect(read.exchanges.map(\.response) == inProcess.exchanges.map(\.response))
            // qVSDC: the cryptogram comes with GPO, before the records are read.
            let handsOut = inProcess.cryptogram.source == .gpo
            #expect(direct.runs.queued == (callback && handsOut ? 2 : 1), "callback: \(callback)")
            #expect(direct.runs.ended == direct.runs.queued)
        }
        #expect(handedOut.count == (inProcess.cryptogram.source == .gpo ? 1 : 0))
    }

    struct Expected: Sendable, CustomTestStringConvertible {
        var profile: String
        var brand: PaymentNetwork
        var aid: String
        var label: String
        var last4: String
        var name: String
        var source: Cryptogram.Source
        var testDescription: String { profile }
    }

    static let readable: [Expected] = [
        Expected(profile: "visa-qvsdc", brand: .visa, aid: "A0000000031010", label: "VISA CREDIT", last4: "0010",
                 name: "VISA TEST/CARD", source: .gpo),
        Expected(profile: "mastercard-mchip", brand: .mastercard, aid: "A0000000041010", label: "MASTERCARD",
                 last4: "0434", name: "MASTERCARD TEST/CARD", source: .generateAC),
        Expected(profile: "amex", brand: .amex, aid: "A00000002501", label: "AMERICAN EXPRESS", last4: "0126",
                 name: "AMEX TEST/CARD", source: .generateAC),
        Expected(profile: "two-apps", brand: .visa, aid: "A0000000031010", label: "VISA CREDIT", last4: "0135",
                 name: "VISA TEST/CARD", source: .gpo),
        Expected(profile: "no-ppse", brand: .mastercard, aid: "A0000000041010", label: "MASTERCARD", last4: "0010",
                 name: "MASTERCARD TEST/CARD", source: .generateAC),
        Expected(profile: "chained", brand: .visa, aid: "A0000000031010", label: "VISA CREDIT", last4: "0044",
                 name: "VISA TEST/CARD", source: .gpo),
        Expected(profile: "slow", brand: .visa, aid: "A0000000031010", label: "VISA CREDIT", last4: "0085",
                 name: "VISA TEST/CARD", source: .gpo),
        Expected(profile: "visa-online-pin", brand: .visa, aid: "A0000000031010", label: "VISA CREDIT", last4: "1111",
                 name: "VISA PIN/CARD", source: .gpo),
    ]

    @Test(arguments: readable)
    func readsEveryProfile(_ e: Expected) async throws {
        let profile = try profile(e.profile)
        let read = try await read(profile)
        #expect(read.application.brand == e.brand)
        #expect(read.application.aidHex == e.aid)
        #expect(read.application.label == e.label)
        #expect(read.card.pan.last4 == e.last4)
        #expect(read.card.pan.isLuhnValid)
        #expect(read.card.expiry == Expiry(year: 2028, month: 12))
        #expect(read.card.cardholderName == e.name)
        #expect(read.cryptogram.kind == .arqc)
        #expect(read.cryptogram.source == e.source)
        #expect(read.cryptogram.atc == profile.atc + 1)
        #expect(read.cvm == .noCVM)
        // Every command answered, in order, and timed.
        #expect(read.exchanges.count >= 4)
        #expect(read.exchanges.allSatisfy { $0.response != nil && $0.failure == nil })
        #expect(read.exchanges.first?.command == .selectPPSE)
        // The online data is what an issuer needs to verify the cryptogram.
        let app = try #require(profile.applications.first { $0.aid == read.application.aid })
        #expect(ApplicationCryptogram.verify(issuerMasterKey: profile.issuerMasterKey, pan: read.card.pan,
                                             panSequenceNumber: app.panSequenceNumber,
                                             authorisationData: read.cryptogram.onlineData))
        #expect(!read.cryptogram.onlineData.contains { SensitiveData.isSensitive($0.tag) })
    }

    @Test func eachReadIsANewTransaction() async throws {
        let card = EmulatedCard(profile: try profile("mastercard-mchip"))
        var atcs: [UInt16] = []
        for _ in 0..<3 {
            atcs.append(try await reader.read(channel: VirtualCardChannel(card: card, simulatesCardTime: false),
                                              transaction: Transaction(amount: 100)).cryptogram.atc)
        }
        #expect(atcs == [8, 9, 10])
    }

    @Test func twoAppsPicksTheHigherPriority() async throws {
        let read = try await read(try profile("two-apps"))
        #expect(read.application.priority == 1)
        // Debit is listed first in the PPSE but credit (priority 1) is selected first.
        try #require(read.exchanges.count > 1)
        #expect(read.exchanges[1].command.data == bytes("A0000000031010"))
    }

    @Test func noPPSEFallsBackToTheListOfAIDs() async throws {
        let read = try await read(try profile("no-ppse"))
        try #require(!read.exchanges.isEmpty)
        #expect(read.exchanges[0].response?.statusWord == .fileNotFound)
        let selects = read.exchanges.filter { $0.command.instructionCode == 0xA4 }.map { Hex.encode($0.command.data) }
        // Every supported AID is tried in turn, then the one found is selected for good.
        #expect(selects.dropFirst().prefix(4) == ["A0000000031010", "A0000000032010", "A0000000032020", "A0000000041010"])
        #expect(selects.last == "A0000000041010")
    }

    @Test func chainedCardGoesThroughGetResponseAndResend() async throws {
        let read = try await read(try profile("chained"))
        #expect(read.exchanges.contains { $0.command.instructionCode == 0xC0 })      // GET RESPONSE
        #expect(read.exchanges.contains { $0.response?.sw1 == 0x61 })
        #expect(read.exchanges.contains { $0.response?.sw1 == 0x6C })
        // The data is the same as a plain card's.
        #expect(read.card.cardholderName == "VISA TEST/CARD")
    }

    @Test(arguments: [(UInt64(1250), CardholderVerification.noCVM), (6000, .onlinePIN)])
    func onlinePINAboveTheCVMLimit(_ amount: UInt64, _ cvm: CardholderVerification) async throws {
        #expect(try await read(try profile("visa-online-pin"), amount: amount).cvm == cvm)
    }

    @Test(arguments: ["mastercard-mchip", "amex", "no-ppse"])
    func cvmListAboveTheCVMLimit(_ name: String) async throws {
        let read = try await read(try profile(name), amount: 7500)
        #expect(read.cvm == .onlinePIN)
        #expect(read.cryptogram.onlineData.first { $0.tag == .cvmResults }?.valueBytes == bytes("420300"))
    }

    @Test func offlineDecline() async throws {
        let error = await #expect(throws: KernelError.self) { try await read(try profile("offline-decline")) }
        #expect(error?.code == .cardDeclinedOffline)
        #expect(error?.step == .generateAC)
        #expect(error?.partial?.card?.pan.last4 == "0011")
        #expect(error?.partial?.cryptogram?.kind == .aac)
        #expect(error?.partial?.exchanges.last?.command.instructionCode == 0xAE)
        #expect(error?.happenedAfterOnlineDataReady == false)
    }

    @Test func onlineDataReadyComesOnceBeforeTheRecords() async throws {
        let calls = Recorder<PartialCardRead>()
        let read = try await read(try profile("visa-qvsdc")) { calls.record($0) }
        #expect(calls.calls.count == 1)
        let early = try #require(calls.calls.first)
        #expect(early.exchanges.count == 3)                         // PPSE, SELECT, GPO
        #expect(early.cryptogram?.ac == read.cryptogram.ac)
        #expect(early.card?.pan == read.card.pan)

        let none = Recorder<PartialCardRead>()
        _ = try await self.read(try profile("mastercard-mchip")) { none.record($0) }
        #expect(none.calls.isEmpty)                                  // the cryptogram comes last
    }

    @Test("without an online-data callback the read is the same, exchange for exchange")
    func noCallbackSameRead() async throws {
        let profile = try profile("visa-qvsdc")
        let with = try await read(profile) { _ in }
        let without = try await read(profile)
        #expect(without.exchanges.map(\.command) == with.exchanges.map(\.command))
        #expect(without.exchanges.map(\.response) == with.exchanges.map(\.response))
        #expect(without.exchanges.count == 6)   // PPSE, SELECT, GPO, the record, the two certificate records
        #expect(without.card.pan == with.card.pan)
        #expect(without.cryptogram.kind == with.cryptogram.kind)
        #expect(without.cvm == with.cvm)
    }

    @Test func tearAfterTheOnlineDataPoint() async throws {
        let calls = Recorder<PartialCardRead>()
        let error = await #expect(throws: KernelError.self) {
            try await read(try profile("torn")) { calls.record($0) }
        }
        #expect(error?.code == .channelFailed)
        #expect(error?.channelError?.code == .cardRemoved)
        #expect(error?.step == .readRecord(record: 1, sfi: 3))
        #expect(error?.happenedAfterOnlineDataReady == true)
        #expect(calls.calls.count == 1)
        let partial = try #require(error?.partial)
        #expect(partial.exchanges.count == 4)
        #expect(partial.exchanges.last?.failure == .cardRemoved)
        #expect(partial.exchanges.last?.response == nil)
        #expect(partial.card?.pan.last4 == "0028")
        #expect(partial.cryptogram?.kind == .arqc)
    }

    @Test func tearBeforeTheOnlineDataPoint() async throws {
        let error = await #expect(throws: KernelError.self) {
            try await read(try profile("mastercard-mchip").withTear(afterExchange: 4))
        }
        #expect(error?.channelError?.code == .cardRemoved)
        #expect(error?.step == .readRecord(record: 1, sfi: 2))
        #expect(error?.happenedAfterOnlineDataReady == false)
        #expect(error?.partial?.exchanges.count == 5)
        #expect(error?.partial?.application?.brand == .mastercard)
    }

    @Test func muteCardTimesOut() async throws {
        let clock = ManualClock()
        let channel = VirtualCardChannel(card: EmulatedCard(profile: try profile("mute")), clock: MonotonicClock(clock),
                                         simulatesCardTime: false)
        let reader = self.reader
        let task = Task { () async throws(KernelError) -> CardRead in
            try await reader.read(channel: channel, transaction: Transaction(amount: 1250),
                                  apduTimeout: .seconds(2), clock: MonotonicClock(clock))
        }
        // The deadline's timer and the mute card both sleep on the clock: then time passes.
        await clock.waitForSleepers(2)
        clock.advance(by: .seconds(2))
        let result = await task.result
        guard case .failure(let e) = result, let error = e as? KernelError else {
            Issue.record("a mute card was read, or failed otherwise: \(result)")
            return
        }
        #expect(error.code == .channelFailed)
        #expect(error.channelError?.code == .timeout)
        #expect(error.step == .gpo)
        #expect(error.partial?.exchanges.count == 3)
        #expect(error.partial?.exchanges.last?.failure == .timeout)
        #expect(error.partial?.exchanges.last?.duration == .seconds(2))
    }

    /// The card's commands: PPSE, SELECT, GPO and one READ RECORD per record its AFL names (the
    /// card as it answers: personalised, with its certificate records).
    static func commandCount(_ profile: CardProfile) -> Int {
        let afl = profile.personalisedForODA().applications[0].afl
        let records = stride(from: 0, to: afl.count - afl.count % 4, by: 4).map { Int(afl[$0 + 2]) - Int(afl[$0 + 1]) + 1 }
        return 3 + records.reduce(0, +)
    }

    // Time limit: a read that sends one command more than the loop advances the clock for sleeps
    // on the clock for good; the limit cancels it and the test fails instead of hanging the run.
    @Test(.timeLimit(.minutes(1)))
    func slowCardExchangesAreTimedOnTheClock() async throws {
        let clock = ManualClock()
        let profile = try profile("slow")
        let channel = VirtualCardChannel(card: EmulatedCard(profile: profile), clock: MonotonicClock(clock),
                                         simulatesCardTime: true)
        let reader = self.reader
        let task = Task { () async throws(KernelError) -> CardRead in
            try await reader.read(channel: channel, transaction: Transaction(amount: 1250), clock: MonotonicClock(clock))
        }
        // PPSE, SELECT, GPO, the records (its data and its two certificate records): each time the
        // card and the deadline sleep, 150 ms pass.
        let count = Self.commandCount(profile)
        #expect(count == 6)
        for _ in 0..<count {
            await clock.waitForSleepers(2)
            clock.advance(by: .milliseconds(150))
        }
        let read = try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
        #expect(read.exchanges.count == count)
        #expect(read.exchanges.map(\.micros) == Array(repeating: 150_000, count: count))
        #expect(read.exchanges.map(\.start) == (0..<count).map { .milliseconds(150 * $0) })
    }
}
