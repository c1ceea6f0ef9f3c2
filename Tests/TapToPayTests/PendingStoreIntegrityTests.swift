import CodedErrors
import DeviceStore
import Foundation
import PaymentGateway
@testable import PaymentGateway
import CoreAPI
import PaymentFlow
import TapToPay
import Testing
import Synchronization
#if canImport(Glibc)
import Glibc
import TestSupport
import Storage
#endif

// Issue 11, one test per defect: the device's pending store and the ledger under a recovery
// beside a live sale, a crash between the answer and the hand-over, missing and damaged files,
// several attempts on one order id, and deliberate closing. A second store or gateway opened on
// the same directory stands for another process: its file locks exclude this one's as another
// process's would (flock locks belong to the open file).

/// The code of the typed error `body` threw; nil when it returned.
private func thrownCode<E: CodedError>(_ body: () throws(E) -> Void) -> E.Code? {
    do {
        try body()
        return nil
    } catch {
        return error.code
    }
}

/// The name of the code a ledger or a device store fails to open with (nil: it opens).
private func openCode(_ file: String, _ directory: String) -> String? {
    if file == Ledger.fileName {
        return thrownCode { () throws(GatewayError) in _ = try Ledger(directory: directory) }.map { "\($0)" }
    }
    return thrownCode { () throws(DeviceStoreError) in _ = try PendingPaymentStore(dataDirectory: directory) }.map { "\($0)" }
}

@Suite("Recovery beside a live sale")
struct RecoveryBesideALiveSaleTests {
    /// Defect 1: a recovery ran beside a sale in flight, reversed it, and the sale still reported
    /// approved. Now the sale owns its record: the recovery leaves it alone.
    @Test(arguments: [FlowCheckpoint.submitted, .answered])
    func aCoreAPIRecoveryLeavesASaleInFlightAlone(_ point: FlowCheckpoint) async throws {
        let dir = TempDir()
        let gate = CoreCheckpointGate(at: point)
        let rig = try await CoreRig.make(dir) { $0.checkpoint = gate.hook }
        let orderId = coreOrderId("live")
        let sale = Task { await rig.core.processSale(CoreSale(amount: 1250, orderId: orderId)) }
        await gate.waitUntilReached()

        let other = try OtherProcess(dir.path + "/data")
        let reports = try await other.resolver().resolvePending()
        #expect(reports.map(\.outcome) == [.inProgress])
        #expect(reports.first?.sale.orderId == orderId)
        #expect(try other.store.all().count == 1, "the recovery took the record of a live sale")

        gate.release()
        guard case .response(let r) = await sale.value else { Issue.record("the sale did not answer"); return }
        #expect(r.code == "A")
        #expect(try rig.reversalCount(orderId: orderId) == 0, "a sale reported approved was reversed")
        #expect(try rig.ledgerRows(orderId: orderId).first?.state == .approved)
        #expect(try rig.store.all().isEmpty)
        // Nothing left for a later recovery either.
        #expect(try await other.resolver().resolvePending().isEmpty)
    }

    @Test func aMONEIRecoveryLeavesAPaymentInFlightAlone() async throws {
        let h = try Harness()
        let (_, payment, gate) = try await h.paymentHeld(at: .submitted, amount: 1250, orderId: "live-monei")
        let reports = try await OtherProcess(h.directory).tapToPay.resolveUnclearOutcomes()
        #expect(reports.count == 1)
        guard case .inProgress = reports.first?.finding else { Issue.record("\(String(describing: reports.first?.finding))"); return }
        gate.release()
        #expect(await payment.value.result?.status == .approved)
        #expect(try h.store.all().isEmpty)
    }

    /// Three recoveries at once: run one at a time, each sale is reversed once and reported
    /// reversed once; the later runs find nothing left, and say so.
    @Test func concurrentRecoveriesReportEachSaleOnce() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir) { $0.gatewayFault = .lostAnswer }
        var orders: [String] = []
        for i in 0..<4 {
            let orderId = coreOrderId("lost-\(i)")
            #expect(coreCommError(await rig.core.processSale(CoreSale(amount: 1000 + i, orderId: orderId))) != nil)
            orders.append(orderId)
        }
        let data = dir.path + "/data"
        let runs = try await withThrowingTaskGroup(of: [PendingSaleReport].self) { group in
            for _ in 0..<3 {
                group.addTask { try await OtherProcess(data).resolver().resolvePending() }
            }
            var all: [[PendingSaleReport]] = []
            for try await r in group { all.append(r) }
            return all
        }
        let reversed = runs.flatMap { $0 }.filter { if case .reversed = $0.outcome { true } else { false } }
        #expect(Set(reversed.map(\.sale.orderId)) == Set(orders))
        #expect(reversed.count == orders.count, "a sale was reported reversed twice")
        #expect(runs.filter(\.isEmpty).count == 2, "the later recoveries should find nothing left")
        for o in orders { #expect(try rig.reversalCount(orderId: o) == 1) }
    }
}

@Suite("The record outlives the result")
struct RecordOutlivesResultTests {
    /// Defect 2: the record left before the result was handed over. With an acknowledged
    /// hand-over it stays, holding the answer, until the caller says it has the result.
    @Test func anAcknowledgedHandOverKeepsTheAnswerUntilAcknowledged() async throws {
        let h = try Harness()
        let tapToPay = try await h.preparedAcknowledging()
        let result = try #require(await pay(tapToPay, amount: 1250, orderId: "handover-1").result)
        let record = try #require(try h.store.get(orderId: "handover-1"))
        #expect(record.state == .answered)
        #expect(record.answer?.paymentId == result.paymentId)
        #expect(record.answer?.status == .approved)
        // Owned until acknowledged: a recovery leaves it.
        #expect(try h.store.isOwned(record.attemptId))
        try tapToPay.acknowledge(result)
        #expect(try h.store.all().isEmpty)
    }

    /// The process ends between the answer and the hand-over: recovery reports the stored answer
    /// and removes the record, without a gateway call (the gateway is unreachable here).
    @Test func aResultNeverHandedOverIsReportedFromTheRecord() async throws {
        let h = try Harness()
        do {
            let tapToPay = try await h.preparedAcknowledging()
            #expect(await pay(tapToPay, amount: 1251, orderId: "handover-2").result?.status == .declined)
            // `tapToPay` goes away without acknowledging: a process that died after the answer.
        }
        let unreachable = FaultyGateway(inner: h.gateway)
        let recovery = TapToPay(configuration: .init(cardSource: virtualCard("visa-qvsdc"), gateway: unreachable,
                                                     pendingStore: try PendingPaymentStore(dataDirectory: h.directory)))
        let reports = try await recovery.resolveUnclearOutcomes()
        #expect(reports.count == 1)
        guard case .answered(let answer) = reports.first?.finding else {
            Issue.record("\(String(describing: reports.first?.finding))")
            return
        }
        #expect(answer.status == .declined)
        #expect(reports.first?.removedFromStore == true)
        #expect(try h.store.all().isEmpty)
    }

    /// The CoreAPI face: an answered sale never acknowledged is resolved from its answer, and
    /// nothing is reversed (the app may have shown the approval).
    @Test func aCoreAPISaleNeverAcknowledgedIsNotReversed() async throws {
        let dir = TempDir()
        let orderId = coreOrderId("ack")
        do {
            let (rig, _) = try await CoreRig.approvedNotAcknowledged(dir, orderId: orderId, amount: 1250)
            #expect(try rig.store.get(orderId: orderId)?.state == .answered)
        }
        let other = try OtherProcess(dir.path + "/data")
        let reports = try await other.resolver().resolvePending()
        guard case .answered(let a) = reports.first?.outcome else { Issue.record("\(reports)"); return }
        #expect(a.transactionCode == "A")
        #expect(reports.first?.removedFromStore == true)
        #expect(try other.gateway.ledger.allPayments().filter { $0.orderId == orderId }.map(\.kind) == [.sale])
    }
}

extension RecordOutlivesResultTests {
    /// The same order run again while its answered sale waits for `acknowledge`: refused with
    /// transactionInProgress (nothing sent, the description says why); once acknowledged, the
    /// order runs again and the gateway answers from the one sale it holds.
    @Test func aSaleOfAnOrderWhoseAnswerIsNotAcknowledgedYetIsRefused() async throws {
        let dir = TempDir()
        let orderId = coreOrderId("ack-again")
        let (rig, first) = try await CoreRig.approvedNotAcknowledged(dir, orderId: orderId, amount: 1250)
        let again = await rig.core.processSale(CoreSale(amount: 1250, orderId: orderId))
        #expect(coreErrorCode(again) == .transactionInProgress, "\(again)")
        #expect("\(again)".contains("not acknowledged yet"), "\(again)")
        #expect(try rig.store.records(orderId: orderId).count == 1)

        try rig.core.acknowledge(first)
        #expect(try rig.store.records(orderId: orderId).isEmpty)
        _ = await rig.core.processSale(CoreSale(amount: 1250, orderId: orderId))
        #expect(try rig.ledgerRows(orderId: orderId).filter { $0.kind == .sale }.count == 1)
    }
}

/// A gateway whose every request fails as a dead network would.
private struct FaultyGateway: ForwardingGateway {
    let inner: any Gateway
    func charges(orderId: String, options: GatewayRequestOptions) async throws(GatewayError) -> [Payment] {
        throw GatewayError(.connectionLost, "the network is down")
    }
    func transactionList(_ filter: TransactionFilter, options: GatewayRequestOptions) async throws(GatewayError) -> [TransactionSummary] {
        throw GatewayError(.connectionLost, "the network is down")
    }
}

@Suite("A data directory knows what it holds")
struct DataDirectoryIntegrityTests {
    /// A directory with one payment made in it (ledger, device store, manifest).
    private static func directoryWithAPayment() async throws -> Harness {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration())
        #expect(await pay(tapToPay, amount: 1000, orderId: "first").result?.status == .approved)
        return h
    }

    /// Defect 3: a deleted or emptied store was silently created anew.
    @Test(arguments: [Ledger.fileName, PendingPaymentStore.fileName])
    func aMissingOrEmptyStoreIsAnErrorNeverANewStore(_ file: String) async throws {
        let h = try await Self.directoryWithAPayment()
        let path = h.directory + "/" + file
        func open() -> String? { openCode(file, h.directory) }
        // Emptied.
        let saved = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(truncate(path, 0) == 0)
        #expect(open() == "storeMissing")
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue == 0,
                "the empty file was written over")
        // Deleted.
        try FileManager.default.removeItem(atPath: path)
        #expect(open() == "storeMissing")
        #expect(!FileManager.default.fileExists(atPath: path), "the deleted store was created anew")
        // Put back: works again.
        try saved.write(to: URL(fileURLWithPath: path))
        #expect(open() == nil)
    }

    @Test func aStoreFromAnotherDirectoryIsRefused() async throws {
        let a = try await Self.directoryWithAPayment()
        let b = try await Self.directoryWithAPayment()
        for file in [Ledger.fileName, PendingPaymentStore.fileName] {
            try FileManager.default.removeItem(atPath: b.directory + "/" + file)
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: b.directory + "/" + file + suffix) }
            try FileManager.default.copyItem(atPath: a.directory + "/" + file, toPath: b.directory + "/" + file)
        }
        #expect(thrownCode { () throws(GatewayError) in _ = try Ledger(directory: b.directory) } == .storeMissing)
        #expect(thrownCode { () throws(DeviceStoreError) in _ = try PendingPaymentStore(dataDirectory: b.directory) } == .storeMissing)
    }

    @Test func aLostManifestIsAnError() async throws {
        let h = try await Self.directoryWithAPayment()
        try FileManager.default.removeItem(atPath: h.directory + "/" + DataDirectoryLayout.manifestName)
        #expect(thrownCode { () throws(GatewayError) in _ = try Ledger(directory: h.directory) } == .storeMissing)
        #expect(thrownCode { () throws(DeviceStoreError) in _ = try PendingPaymentStore(dataDirectory: h.directory) } == .storeMissing)
    }

    /// Defect 4: a dropped table or a damaged page went unnoticed.
    @Test func aDroppedTableIsDamage() async throws {
        let h = try await Self.directoryWithAPayment()
        do {
            let c = try SQLiteConnection(path: h.directory + "/" + Ledger.fileName, busyTimeout: .seconds(1))
            try c.execute("DROP TABLE webhooks")
            let d = try SQLiteConnection(path: h.directory + "/" + PendingPaymentStore.fileName, busyTimeout: .seconds(1))
            try d.execute("DROP TABLE attempts")
        }
        #expect(thrownCode { () throws(GatewayError) in _ = try Ledger(directory: h.directory) } == .corruptLedger)
        #expect(thrownCode { () throws(DeviceStoreError) in _ = try PendingPaymentStore(dataDirectory: h.directory) } == .corruptStore)
    }

    @Test(arguments: [Ledger.fileName, PendingPaymentStore.fileName])
    func aDamagedPageIsFoundOnOpen(_ file: String) async throws {
        let h = try await Self.directoryWithAPayment()
        let path = h.directory + "/" + file
        // Fold the WAL into the file, then damage a page after the first (the schema's).
        do { try SQLiteConnection(path: path, busyTimeout: .seconds(1)).execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
        #expect(bytes.count >= 2 * pageSize)
        var generator = SystemRandomNumberGenerator()
        for i in pageSize..<(2 * pageSize) { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(openCode(file, h.directory) == (file == Ledger.fileName ? "corruptLedger" : "corruptStore"))
    }

    /// A device store written by tapemu before attempts had ids (schema 1, no manifest) is
    /// adopted: its records are kept, one per attempt.
    @Test func aVersionOneDeviceStoreIsMigrated() throws {
        let dir = TempDir()
        do {
            let c = try SQLiteConnection(path: dir.path + "/" + PendingPaymentStore.fileName, busyTimeout: .seconds(1))
            try c.execute("CREATE TABLE pending (order_id TEXT PRIMARY KEY NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL)")
            try c.run("INSERT INTO pending VALUES ('old-1', ?, 1)", [.text("""
                {"amount":1292,"createdAt":"2026-11-29T10:00:00Z","currency":"EUR","last4":"0010","maskedPAN":"476173******0010","orderId":"old-1","origin":"coreAPI","sale":{}}
                """)])
        }
        // The first to open it may be a query (`tapemu pending`): it is upgraded then too.
        #expect(try PendingPaymentStore(dataDirectory: dir.path, access: .readOnly).all().map(\.orderId) == ["old-1"])
        let store = try PendingPaymentStore(dataDirectory: dir.path)
        let records = try store.all()
        #expect(records.map(\.orderId) == ["old-1"])
        #expect(records.first?.amount == 1292)
        #expect(records.first.map { !$0.attemptId.isEmpty } == true)
        // Adopted: it is in the manifest now, so losing it is an error.
        try FileManager.default.removeItem(atPath: dir.path + "/" + PendingPaymentStore.fileName)
        #expect(thrownCode { () throws(DeviceStoreError) in _ = try PendingPaymentStore(dataDirectory: dir.path) } == .storeMissing)
    }

    @Test func aMissingDirectoryIsNotCreatedByReadersOrRecoveries() {
        let dir = TempDir()
        let missing = dir.path + "/typo"
        for access in [DataDirectoryLayout.Access.existing, .readOnly] {
            #expect(thrownCode { () throws(DeviceStoreError) in _ = try PendingPaymentStore(dataDirectory: missing, access: access) }
                    == .noDataDirectory)
            #expect(thrownCode { () throws(GatewayError) in _ = try Ledger(directory: missing, access: access) } == .noDataDirectory)
        }
        #expect(!FileManager.default.fileExists(atPath: missing))
    }
}

@Suite("Damage is contained")
struct DamageContainmentTests {
    /// A CoreAPI sale in a new directory, approved and its answer lost (a communication error):
    /// its record stays on the device. The directory, the rig and the order id.
    static func answerLostSale(_ name: String) async throws -> (dir: TempDir, rig: CoreRig, orderId: String) {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir) { $0.gatewayFault = .lostAnswer }
        let orderId = coreOrderId(name)
        #expect(coreCommError(await rig.core.processSale(CoreSale(amount: 1000, orderId: orderId))) != nil)
        return (dir, rig, orderId)
    }

    /// Runs `sql` on the device store's file, as damage from outside would.
    static func execute(_ sql: String, on store: PendingPaymentStore) throws {
        try SQLiteConnection(path: store.path, busyTimeout: .seconds(1)).execute(sql)
    }

    /// Defect 4: one malformed record blocked every recovery. Now it is named and the others resolve.
    @Test func anUnreadableRecordIsReportedAndTheOthersResolve() async throws {
        let (dir, rig, orderId) = try await Self.answerLostSale("good")
        try Self.execute("INSERT INTO attempts (attempt_id, order_id, state, body, created_at) VALUES ('00000000-0000-0000-0000-000000000001', 'bad-1', 'pending', '{not json', 0)", on: rig.store)
        let scan = try rig.store.scan()
        #expect(scan.unreadable.map(\.orderId) == ["bad-1"])
        #expect(scan.records.map(\.orderId) == [orderId])
        let reports = try await rig.core.resolvePendingSales()
        #expect(reports.count == 2)
        #expect(reports.contains { $0.sale.orderId == "bad-1" && $0.outcome == .unreadable(reason: scan.unreadable[0].reason) })
        #expect(reports.contains { r in r.sale.orderId == orderId && r.removedFromStore && { if case .reversed = r.outcome { true } else { false } }() })
        let monei = try await OtherProcess(dir.path + "/data").tapToPay.resolveUnclearOutcomes()
        #expect(monei.map(\.pending.orderId) == ["bad-1"])
    }

    /// A removal that fails is an error the report carries, never ignored: the record stays.
    @Test func aFailedRemovalIsReportedAndTheRecordStays() async throws {
        let (_, rig, orderId) = try await Self.answerLostSale("stuck")
        try Self.execute("CREATE TRIGGER refuse BEFORE DELETE ON attempts BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END;", on: rig.store)
        let reports = try await rig.core.resolvePendingSales()
        #expect(reports.count == 1)
        #expect(reports.first?.removedFromStore == false)
        #expect(reports.first?.storeError != nil)
        #expect(try rig.store.all().map(\.orderId) == [orderId])
        // Reversed once; running it again does not reverse it again.
        #expect(try rig.reversalCount(orderId: orderId) == 1)
        let again = try await rig.core.resolvePendingSales()
        #expect(again.first?.outcome == .alreadyReversed || again.first.map { if case .declined = $0.outcome { true } else { false } } == true)
        #expect(try rig.reversalCount(orderId: orderId) == 1)
    }
}

@Suite("Recovery matches what was attempted")
struct AttemptMatchingTests {
    /// Defect 5: `pay 1201 visa`, then `pay 1207 amex` on the same order id (refused, nothing
    /// charged), then recovery reported the amex attempt approved from the visa payment.
    @Test func anotherPaymentOfTheOrderIsNotThisAttempts() async throws {
        let h = try Harness()
        let visa = try await h.prepared(h.configuration())
        #expect(await pay(visa, amount: 1201, orderId: "c").result?.status == .approved)
        let amex = try await h.prepared(h.configuration(source: virtualCard("amex")))
        expectFailure(await pay(amex, amount: 1207, orderId: "c"), .outcomeUnknown(orderId: "c"))
        let records = try h.store.records(orderId: "c")
        #expect(records.map(\.amount) == [1207])

        let reports = try await visa.resolveUnclearOutcomes()
        #expect(reports.count == 1)
        guard case .otherPayment(let p, let reason) = reports.first?.finding else {
            Issue.record("\(String(describing: reports.first?.finding))")
            return
        }
        #expect(p.amount == 1201)
        #expect(reason.contains("amount"))
        #expect(reports.first?.removedFromStore == false)
        #expect(try h.store.records(orderId: "c").count == 1)
    }

    /// One record per attempt: a second attempt on an order never replaces the first one's.
    @Test func twoAttemptsOnOneOrderKeepTwoRecords() async throws {
        let h = try Harness()
        let t = try await h.prepared(h.configuration(fault: .noAnswer))
        await h.payWithoutAnAnswer(t, orderId: "twice")
        await h.payWithoutAnAnswer(t, orderId: "twice")
        let records = try h.store.records(orderId: "twice")
        #expect(records.count == 2)
        #expect(Set(records.map(\.attemptId)).count == 2)
    }

    /// When a later attempt's result is handed over, the order's earlier unowned attempts for the
    /// same amount and card leave with it: the gateway holds one sale per order, and that outcome
    /// is now known (a recovery would otherwise reverse a sale handed over as approved).
    @Test func aHandedOverResultSupersedesEarlierAttemptsOfTheOrder() async throws {
        let h = try Harness()
        let t = try await h.prepared(h.configuration())
        try h.store.save(PendingPayment(orderId: "retry", origin: .tapToPay, amount: 1000, currency: "EUR",
                                        maskedPAN: "476173******0010", last4: "0010", cardBrand: "visa", createdAt: Date()))
        try h.store.save(PendingPayment(orderId: "retry", origin: .tapToPay, amount: 999, currency: "EUR",
                                        maskedPAN: "476173******0010", last4: "0010", cardBrand: "visa", createdAt: Date()))
        #expect(await pay(t, amount: 1000, orderId: "retry").result?.status == .approved)
        #expect(try h.store.records(orderId: "retry").map(\.amount) == [999])
    }
}

@Suite("Closing a record deliberately")
struct ClosingRecordsTests {
    /// Defect 8: a record for which no payment shows could never be closed.
    @Test func aRecordWithoutAnAnswerIsClosedOnTheRecord() async throws {
        let h = try Harness()
        let t = try await h.prepared(h.configuration(fault: .noAnswer))
        await h.payWithoutAnAnswer(t, orderId: "ticket")
        let reports = try await t.resolveUnclearOutcomes()
        guard case .notFound = reports.first?.finding else { Issue.record("\(reports)"); return }

        #expect(thrownCode { () throws(DeviceStoreError) in _ = try h.store.close(orderId: "ticket", reason: "  ") } == .invalidRequest)
        #expect(thrownCode { () throws(DeviceStoreError) in _ = try h.store.close(orderId: "nope", reason: "x") } == .notFound)
        let closed = try h.store.close(orderId: "ticket", reason: "support ticket 4711: not charged")
        #expect(closed.state == .closed)
        #expect(try h.store.all().isEmpty)
        #expect(try await t.resolveUnclearOutcomes().isEmpty)
        let audit = try h.store.scan(includingClosed: true).records
        #expect(audit.map(\.orderId) == ["ticket"])
        #expect(audit.first?.closure?.reason == "support ticket 4711: not charged")
    }

    @Test func aRecordOwnedByALivePaymentCannotBeClosed() async throws {
        let h = try Harness()
        let (_, payment, gate) = try await h.paymentHeld(at: .pendingWritten, orderId: "owned")
        let other = try PendingPaymentStore(dataDirectory: h.directory)
        #expect(thrownCode { () throws(DeviceStoreError) in _ = try other.close(orderId: "owned", reason: "x") } == .busy)
        gate.release()
        #expect(await payment.value.result?.status == .approved)
    }
}
