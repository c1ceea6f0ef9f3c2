import CardChannel
import EMVKernel
import Foundation
@testable import PaymentGateway
import Synchronization
import CoreAPI
import PaymentFlow
import Testing
import VirtualCard
import Timing
import APDUTrace
import TestSupport
import Storage

/// `processSale` and `processRefund`: every callback for the cause the seeds name.
@Suite struct CoreAPISaleTests {
    // MARK: Answers

    @Test func anApprovedSaleIsResponseCodeA() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        #expect(rig.initialised)
        let orderId = coreOrderId()
        let outcome = await rig.core.processSale(CoreSale(amount: 1250, currency: "EUR", orderId: orderId))
        guard case .response(let r) = outcome else { Issue.record("not a response: \(outcome)"); return }
        #expect(r.code == "A")
        #expect(r.isApproved)
        #expect(r.orderId == orderId)
        #expect(r.amount == 1250)
        #expect(r.maskedPAN == "476173******0010")
        #expect(r.cardType == "visa")
        #expect(r.authCode?.count == 6)
        #expect(r.sale.uniqueRef == r.uniqueRef)
        #expect(r.sale.maskedPAN == r.maskedPAN)
        // The listener got exactly that, once; the device connected at initialise.
        #expect(rig.sales.events == [.response(r)])
        guard case .connected(.appleTTP, let info)? = rig.device.events.first else {
            Issue.record("no onDeviceConnected: \(rig.device.events)")
            return
        }
        #expect(info["deviceType"] == "AppleTTP")
        #expect(info["source"] == "visa-qvsdc")
        #expect(info["model"] == "iPhone15,2")
        #expect(rig.device.events.count == 1)
        // Nothing is left pending once the answer is known.
        #expect(try rig.store.all().isEmpty)
        #expect(try rig.core.pendingSales().isEmpty)
    }

    /// The gateway's codes come back as they are; only A is an approval.
    @Test(arguments: [(1000, "A"), (1051, "D"), (1052, "D"), (1055, "D"), (1056, "R"), (1057, "E")])
    func responseCodesAreTheGateways(_ amount: Int, _ code: String) async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let outcome = await rig.core.processSale(CoreSale(amount: amount, orderId: coreOrderId()))
        guard case .response(let r) = outcome else { Issue.record("not a response: \(outcome)"); return }
        #expect(r.code == code)
        #expect(r.isApproved == (code == "A"))
        #expect(rig.sales.events == [.response(r)])
        #expect(try rig.store.all().isEmpty)
    }

    // MARK: onError: before the card

    @Test(arguments: [(0, "o"), (-5, "o"), (1_000_000_000_000, "o"), (100, ""), (100, "   "), (100, "a\u{1}b"),
                      (100, String(repeating: "x", count: 129)), (100, "em\u{2003}space")])
    func invalidSalesAreInvalidParameters(_ amount: Int, _ orderId: String) async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let outcome = await rig.core.processSale(CoreSale(amount: amount, orderId: orderId))
        #expect(coreErrorCode(outcome) == .invalidParameters)
        #expect(rig.sales.events.count == 1)
        #expect(try rig.gateway.ledger.allPayments().isEmpty)
    }

    @Test func aSaleInAnotherCurrencyIsTerminalSettings() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 100, currency: "USD", orderId: "o"))) == .terminalSettings)

        // A terminal whose currency is not the reader kernel's.
        let other = try await CoreRig.make(TempDir(), initialise: false)
        var terminal = other.terminal
        terminal.currency = "GBP"
        await other.core.initialise(terminal: terminal, saleListener: other.sales)
        #expect(coreErrorCode(await other.core.processSale(CoreSale(amount: 100, currency: "GBP", orderId: "o"))) == .terminalSettings)
        #expect(other.sales.events.count == 1)
    }

    @Test(arguments: [(CoreTokenChoice.none, CoreError.invalidTokenSettings), (.garbage, .invalidToken), (.expired, .tokenExpired)])
    func tokenProblemsAreTransactionErrors(_ token: CoreTokenChoice, _ expected: CoreError) async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir, token: token)
        let outcome = await rig.core.processSale(CoreSale(amount: 100, orderId: coreOrderId()))
        #expect(coreErrorCode(outcome) == expected)
        if case .error(_, let d)? = rig.sales.events.first { #expect(d?.isEmpty == false) }
        #expect(try rig.gateway.ledger.allPayments().isEmpty)
        #expect(try rig.store.all().isEmpty)
    }

    /// "The SDK returns transaction processing failures, such as network problems, to onError":
    /// the gateway unreachable before the card is read.
    @Test(arguments: [GatewayFault.serverError, .lostAnswer])
    func aNetworkProblemBeforeTheCardIsOnError(_ fault: GatewayFault) async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        rig.gateway.armFault(fault, for: .validateToken)
        let outcome = await rig.core.processSale(CoreSale(amount: 100, orderId: coreOrderId()))
        #expect(coreErrorCode(outcome) == .networkError)
        #expect(rig.sales.events.count == 1)
        #expect(try rig.gateway.ledger.allPayments().isEmpty)
        #expect(try rig.store.all().isEmpty)
    }

    @Test func beforeInitialiseTheDeviceIsNotReady() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir, initialise: false)
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 100, orderId: "o"))) == .deviceNotReady)
        #expect(!rig.core.isInitialised)
        if case .error(let e, _) = await rig.core.processRefund(CoreRefund(uniqueRef: "X")) {
            #expect(e == .deviceNotReady)
        } else {
            Issue.record("a refund ran before initialise")
        }
    }

    // MARK: onError: the card and the reader

    @Test func noCardInTimeIsATimeout() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir, source: CoreFailingCardSource(code: .noCard))
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 100, orderId: "o"))) == .timeout)
        // Not a device fault.
        #expect(rig.device.errors.isEmpty)
    }

    @Test func anOfflineDeclineIsCardDeclined() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir, source: CoreRig.card("offline-decline"))
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 100, orderId: "o"))) == .cardDeclined)
        #expect(try rig.gateway.ledger.allPayments().isEmpty)
        #expect(try rig.store.all().isEmpty)
    }

    @Test func aCardWithNoUsableApplicationIsInvalidEMVData() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir, source: CoreNoApplicationSource())
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 100, orderId: "o"))) == .invalidEMVData)
        #expect(rig.device.errors.isEmpty)
    }

    @Test func aVerificationTheDeviceCannotDoIsCVMFailed() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir, source: CoreRig.card("visa-online-pin")) { config in
            // A terminal that can do neither online PIN, nor signature, nor a consumer device CVM.
            config.terminal.terminalCapabilities[1] &= ~0x60
            config.terminal.terminalTransactionQualifiers[0] &= ~0x04
            config.terminal.terminalTransactionQualifiers[2] &= ~0x40
        }
        // Above the CVM limit (50.00), the card asks for a verification.
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 6000, orderId: "o"))) == .cvmFailed)
        #expect(try rig.gateway.ledger.allPayments().isEmpty)
    }

    @Test(arguments: [(ScriptedPINProvider.Answer.fail, CoreError.pinEntryFailed), (.cancel, .cancelled)])
    func pinEntryProblems(_ answer: ScriptedPINProvider.Answer, _ expected: CoreError) async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir, source: CoreRig.card("visa-online-pin")) { config in
            config.pin = ScriptedPINProvider(answer)
        }
        // Above the CVM limit (50.00), the card asks for its online PIN.
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 6000, orderId: "o"))) == expected)
        #expect(try rig.gateway.ledger.allPayments().isEmpty)
        #expect(try rig.store.all().isEmpty)
    }

    @Test func aPINSaleIsApprovedWithAPIN() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir, source: CoreRig.card("visa-online-pin")) { config in
            config.pin = ScriptedPINProvider(.pin(PIN("1234")!))
        }
        guard case .response(let r) = await rig.core.processSale(CoreSale(amount: 6000, orderId: "o")) else {
            Issue.record("no response: \(rig.sales.events)")
            return
        }
        #expect(r.code == "A")
        #expect(r.maskedPAN == "411111******1111")
    }

    /// Reader faults before the submission point: the device listener gets the device error, the
    /// sale listener `onError(cardReadFailed)`; a reader that is gone also disconnects the device.
    @Test(arguments: [
        (CardChannelError.Code.noReader, CoreDeviceError.noReader, true),
        (.readerRemoved, .readerRemoved, true),
        (.noService, .serviceUnavailable, true),
        (.sharingViolation, .readerBusy, false),
        (.notAPaymentCard, .unsupportedCard, false),
        (.transmitFailed, .readerFault, false),
        (.traceMismatch, .readerFault, false),
        (.cardRemoved, .cardRemoved, false),
    ])
    func readerFaultsAreDeviceErrors(_ code: CardChannelError.Code, _ expected: CoreDeviceError, _ disconnects: Bool) async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir, source: CoreFailingCardSource(code: code))
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 100, orderId: "o"))) == .cardReadFailed)
        var expectedEvents: [CoreDeviceEvent] = []
        guard case .connected(let type, let info)? = rig.device.events.first else {
            Issue.record("no onDeviceConnected")
            return
        }
        expectedEvents.append(.connected(type, info))
        expectedEvents.append(.error(expected, "emulated reader fault \(code)"))
        if disconnects { expectedEvents.append(.disconnected(.appleTTP)) }
        #expect(rig.device.events == expectedEvents)
        #expect(try rig.store.all().isEmpty)
    }

    /// A device that went away comes back: the next sale that gets a card reconnects it.
    @Test func aReaderThatComesBackReconnects() async throws {
        let dir = TempDir()
        let source = CoreSwitchableSource()
        let rig = try await CoreRig.make(dir, source: source)
        source.fail(with: .readerRemoved)
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 100, orderId: coreOrderId()))) == .cardReadFailed)
        source.fail(with: nil)
        let r = try await rig.answeredSale(amount: 100)
        #expect(r.code == "A")
        let kinds = rig.device.events.map { e -> String in
            switch e {
            case .connected: "connected"
            case .disconnected: "disconnected"
            case .error(let d, _): d.name
            }
        }
        #expect(kinds == ["connected", "READER_REMOVED", "disconnected", "connected"])
    }

    @Test func aTornCardBeforeTheCryptogramIsCardRemoved() async throws {
        let dir = TempDir()
        // The card leaves the field after the application is selected: the GPO, which would
        // carry the cryptogram, never gets an answer, so nothing was sent.
        let card = VirtualCardSource(profile: CardProfiles.named("visa-qvsdc")!.withTear(afterExchange: 2),
                                     simulatesCardTime: false)
        let rig = try await CoreRig.make(dir, source: card)
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 100, orderId: "o"))) == .cardReadFailed)
        #expect(rig.device.errors == [.cardRemoved])
        #expect(try rig.gateway.ledger.allPayments().isEmpty)
        #expect(try rig.store.all().isEmpty)
    }

    @Test func aMuteCardIsCardMute() async throws {
        let dir = TempDir()
        let clock = ManualClock()
        let rig = try await CoreRig.make(dir, source: CoreRig.card("mute")) { config in
            config.clock = MonotonicClock(clock)
        }
        let core = rig.core
        let sale = Task { await core.processSale(CoreSale(amount: 100, orderId: "o")) }
        // The APDU deadline's timer and the mute card both sleep on the clock: then time passes.
        await clock.waitForSleepers(2)
        clock.advance(by: .seconds(2))
        #expect(coreErrorCode(await sale.value) == .cardReadFailed)
        #expect(rig.device.errors == [.cardMute])
    }

    @Test func aPendingSaleThatCannotBeStoredIsNeverSent() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        // The device's disk refuses the write.
        let db = try SQLiteConnection(path: rig.store.path, busyTimeout: .seconds(5))
        try db.execute("CREATE TRIGGER refuse BEFORE INSERT ON attempts BEGIN SELECT RAISE(ABORT, 'disk full'); END;")
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 100, orderId: "o"))) == .storageError)
        #expect(try rig.gateway.ledger.allPayments().isEmpty)
    }

    @Test func cancellingBeforeTheSubmissionPointIsCancelled() async throws {
        let dir = TempDir()
        let gate = CoreCheckpointGate(at: .cardRead)
        let rig = try await CoreRig.make(dir) { config in
            config.submitsEarly = false
            config.checkpoint = gate.hook
        }
        let core = rig.core
        let sale = Task { await core.processSale(CoreSale(amount: 100, orderId: "o")) }
        await gate.waitUntilReached()
        core.cancelSale()
        gate.release()
        #expect(coreErrorCode(await sale.value) == .cancelled)
        #expect(try rig.gateway.ledger.allPayments().isEmpty)
        #expect(try rig.store.all().isEmpty)
    }

    @Test func aSecondSaleWhileOneRunsIsTransactionInProgress() async throws {
        let dir = TempDir()
        let gate = CoreCheckpointGate(at: .cardRead)
        let rig = try await CoreRig.make(dir) { config in config.checkpoint = gate.hook }
        let core = rig.core
        let first = Task { await core.processSale(CoreSale(amount: 100, orderId: "first")) }
        await gate.waitUntilReached()
        #expect(coreErrorCode(await core.processSale(CoreSale(amount: 100, orderId: "second"))) == .transactionInProgress)
        gate.release()
        guard case .response(let r) = await first.value else { Issue.record("the first sale failed"); return }
        #expect(r.orderId == "first")
        #expect(try rig.ledgerRows(orderId: "second").isEmpty)
    }

    // MARK: onTransactionCommError: after the submission point

    @Test(arguments: [(1092, "A"), (1095, "D")])
    func aLostAnswerIsACommErrorWithTheSale(_ amount: Int, _ hostCode: String) async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let orderId = coreOrderId()
        let outcome = await rig.core.processSale(CoreSale(amount: amount, orderId: orderId))
        guard let (sale, error) = coreCommError(outcome) else { Issue.record("not a comm error: \(outcome)"); return }
        #expect(error == .networkError)
        // The original sale comes back, with the card it was read from.
        #expect(sale.orderId == orderId)
        #expect(sale.amount == amount)
        #expect(sale.maskedPAN == "476173******0010")
        #expect(sale.cardType == "visa")
        #expect(sale.uniqueRef == nil)
        guard case .commError(let s, .networkError, let message)? = rig.sales.events.first else {
            Issue.record("no onTransactionCommError")
            return
        }
        #expect(s == sale)
        #expect(message?.contains("unknown") == true)
        #expect(message?.contains("4761739001010010") == false)
        #expect(rig.sales.events.count == 1)
        // Stored on the device before the submission point, as a CoreSale dictionary.
        #expect(try rig.core.pendingSales() == [sale])
        let pending = try #require(try rig.store.get(orderId: orderId))
        #expect(pending.origin == .coreAPI)
        #expect(CoreSale(dictionary: pending.sale)?.orderId == orderId)
        // The host did record it.
        let rows = try rig.ledgerRows(orderId: orderId)
        #expect(rows.count == 1)
        #expect(rows.first?.transactionCode.rawValue == hostCode)
    }

    @Test func noAnswerFromTheHostIsACommErrorTimeout() async throws {
        let dir = TempDir()
        let gatewayClock = ManualClock()
        let rig = try await CoreRig.make(dir, gatewayClock: gatewayClock)
        let core = rig.core
        let orderId = coreOrderId()
        let sale = Task { await core.processSale(CoreSale(amount: 1091, orderId: orderId)) }
        // The caller waits out its request timeout on the gateway's clock.
        await gatewayClock.waitForSleepers(1)
        gatewayClock.advance(by: .seconds(30))
        guard let (s, error) = coreCommError(await sale.value) else { Issue.record("not a comm error"); return }
        #expect(error == .timeout)
        #expect(s.orderId == orderId)
        #expect(try rig.core.pendingSales().map(\.orderId) == [orderId])
        #expect(try rig.ledgerRows(orderId: orderId).isEmpty)
    }

    @Test func cancellingWhileTheAnswerIsAwaitedIsACommErrorCancelled() async throws {
        let dir = TempDir()
        let gatewayClock = ManualClock()
        let rig = try await CoreRig.make(dir, gatewayClock: gatewayClock)
        let core = rig.core
        let sale = Task { await core.processSale(CoreSale(amount: 1091, orderId: "o")) }
        await gatewayClock.waitForSleepers(1)
        core.cancelSale()
        guard let (_, error) = coreCommError(await sale.value) else { Issue.record("not a comm error"); return }
        #expect(error == .cancelled)
        #expect(try rig.core.pendingSales().map(\.orderId) == ["o"])
    }

    @Test func aCardTornAfterEarlySubmissionIsACommError() async throws {
        let dir = TempDir()
        // visa-qvsdc hands out its cryptogram in the GPO answer (exchange 3): the request leaves
        // at once; the card then leaves before its record is read.
        let card = VirtualCardSource(profile: CardProfiles.named("visa-qvsdc")!.withTear(afterExchange: 3),
                                     simulatesCardTime: false)
        let rig = try await CoreRig.make(dir, source: card)
        let orderId = coreOrderId()
        guard let (sale, error) = coreCommError(await rig.core.processSale(CoreSale(amount: 1000, orderId: orderId))) else {
            Issue.record("not a comm error: \(rig.sales.events)")
            return
        }
        #expect(error == .cardReadFailed)
        #expect(sale.maskedPAN == "476173******0010")
        #expect(rig.device.errors == [.cardRemoved])
        #expect(try rig.core.pendingSales().map(\.orderId) == [orderId])
        // The host approved it: it must be resolved (see the recovery tests).
        #expect(try rig.ledgerRows(orderId: orderId).first?.transactionCode == .approved)
    }

    // MARK: Refunds

    @Test func aReferencedRefund() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let sale = try await rig.answeredSale()
        guard case .response(let r) = await rig.core.processRefund(CoreRefund(uniqueRef: sale.uniqueRef, amount: 400)) else {
            Issue.record("the refund failed: \(rig.refunds.events)")
            return
        }
        #expect(r.code == "A")
        #expect(r.amount == 400)
        #expect(r.remainingAmount == 600)
        #expect(r.originalUniqueRef == sale.uniqueRef)
        #expect(rig.refunds.events == [.response(r)])
        // More than what is left is refused; so is an unknown reference and a bad amount.
        #expect(await refundError(rig, CoreRefund(uniqueRef: sale.uniqueRef, amount: 700)) == .refundNotAllowed)
        #expect(await refundError(rig, CoreRefund(uniqueRef: "NOSUCHREF0", amount: 1)) == .transactionNotFound)
        #expect(await refundError(rig, CoreRefund(uniqueRef: sale.uniqueRef, amount: 0)) == .invalidParameters)
        #expect(await refundError(rig, CoreRefund(uniqueRef: "", amount: 1)) == .invalidParameters)
        #expect(rig.refunds.events.count == 5)
    }

    @Test func aDeclinedSaleCannotBeRefunded() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let sale = try await rig.answeredSale(amount: 1051)
        #expect(await refundError(rig, CoreRefund(uniqueRef: sale.uniqueRef)) == .refundNotAllowed)
    }

    /// "If a referenced refund fails to reach our gateway, the SDK reports it through onError."
    @Test(arguments: [(GatewayFault.serverError, false), (.lostAnswer, true)])
    func aRefundThatCannotReachTheGatewayIsOnError(_ fault: GatewayFault, _ recorded: Bool) async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let orderId = coreOrderId()
        let sale = try await rig.answeredSale(orderId: orderId)
        rig.gateway.armFault(fault, for: .refund)
        #expect(await refundError(rig, CoreRefund(uniqueRef: sale.uniqueRef)) == .networkError)
        // The refund listener has no comm-error callback: onError, and the refund may exist.
        #expect(try rig.ledgerRows(orderId: orderId).contains { $0.kind == .refund } == recorded)
        let list = try await RestConnector.requestTransactionList(CoreTransactionFilter(orderId: orderId), with: rig.terminal)
        #expect(list.transactionSummary.contains { $0.type == "refund" } == recorded)
    }

    private func refundError(_ rig: CoreRig, _ refund: CoreRefund) async -> CoreError? {
        if case .error(let e, _) = await rig.core.processRefund(refund) { return e }
        return nil
    }
}

/// A card source that fails with a reader fault until told otherwise, then gives a virtual card.
final class CoreSwitchableSource: CardSource {
    private let failure = Mutex<CardChannelError.Code?>(nil)
    let card = CoreRig.card()
    var name: String { "switchable" }

    func fail(with code: CardChannelError.Code?) { failure.withLock { $0 = code } }

    func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        if let code = failure.withLock({ $0 }) { throw CardChannelError(code, "emulated reader fault \(code)") }
        return try await card.waitForCard(timeout: timeout, clock: clock)
    }
}
