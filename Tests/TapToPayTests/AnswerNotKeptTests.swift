import DeviceStore
import Foundation
@testable import PaymentGateway
import Synchronization
import CoreAPI
import PaymentFlow
import TapToPay
import Testing
import TestSupport
import Storage

/// The device's disk takes the attempt's record, then refuses every change to it (a disk that
/// filled up while the answer was on its way: seen with `tapemu sale --gateway URL` on a small
/// tmpfs filled during a slow answer). The gateway's answer then cannot be stored in the record,
/// and the record cannot leave either: it stays `pending`, without the answer, and a recovery
/// later looks the order up. So the answer must not be handed over as the sale's result — the
/// CoreAPI recovery reverses the authorised sale it finds, and a sale the app was told was
/// approved would be reversed (seen: `tapemu sale` exit 0 approved, then `tapemu resolve`
/// "→ reversed").
final class RefusingDeviceDisk: Sendable {
    let path: String
    private let armed = Mutex(false)

    init(store: PendingPaymentStore) { path = store.path }

    /// From the next record written on, the disk refuses every change.
    func arm() { armed.withLock { $0 = true } }

    /// The flow's checkpoint hook: the record is durable; from now on nothing more gets written.
    var hook: @Sendable (FlowCheckpoint) async -> Void {
        { point in
            guard point == .pendingWritten, self.armed.withLock({ $0 }) else { return }
            do {
                let db = try SQLiteConnection(path: self.path, busyTimeout: .seconds(5))
                try db.execute("""
                    CREATE TRIGGER refuse_update BEFORE UPDATE ON attempts BEGIN SELECT RAISE(ABORT, 'disk full'); END;
                    CREATE TRIGGER refuse_delete BEFORE DELETE ON attempts BEGIN SELECT RAISE(ABORT, 'disk full'); END;
                    """)
            } catch {
                Issue.record("the disk could not be made to refuse writes: \(error)")
            }
        }
    }

    /// Space again: writes work.
    func heal() throws {
        let db = try SQLiteConnection(path: path, busyTimeout: .seconds(5))
        try db.execute("DROP TRIGGER IF EXISTS refuse_update; DROP TRIGGER IF EXISTS refuse_delete;")
    }
}

@Suite("An answer the device cannot keep is not handed over")
struct AnswerNotKeptTests {
    @Test func aCoreAPISaleWhoseAnswerCannotBeKeptIsACommErrorAndNeverAnApprovalThatRecoveryReverses() async throws {
        let dir = TempDir()
        let disk = Mutex<RefusingDeviceDisk?>(nil)
        let rig = try await CoreRig.make(dir) { config in
            let d = RefusingDeviceDisk(store: config.pendingStore)
            d.arm()
            disk.withLock { $0 = d }
            config.checkpoint = d.hook
        }
        let orderId = coreOrderId("kept")
        let outcome = await rig.core.processSale(CoreSale(amount: 1250, currency: "EUR", orderId: orderId))
        try #require(disk.withLock { $0 }).heal()
        // The record stayed, without the answer: what recovery sees.
        #expect(try rig.store.records(orderId: orderId).map(\.state) == [.pending])
        let reports = try await rig.core.resolvePendingSales()

        // What the app was told agrees with what recovery did: an approval is never reversed.
        if case .response(let r) = outcome, r.isApproved {
            #expect(try rig.reversalCount(orderId: orderId) == 0,
                    "the app was told the sale was approved, and the recovery reversed it: \(reports.map(\.outcome))")
        }
        #expect(coreCommError(outcome)?.1 == .storageError, "\(outcome)")
        #expect(rig.sales.events.count == 1)
    }

    @Test func aMONEIPaymentWhoseAnswerCannotBeKeptIsOutcomeUnknownNotAnApprovalThatRecoveryReverses() async throws {
        // The same sale run again through the other face: a CoreAPI attempt left unclear (the
        // answer lost), then the MONEI face charges the same order, amount and card — the gateway
        // answers with the order's sale. Had that answer been handed over approved without being
        // kept, the CoreAPI attempt's recovery (no sibling holding the answer) would reverse it.
        let dir = TempDir()
        let disk = Mutex<RefusingDeviceDisk?>(nil)
        let rig = try await CoreRig.make(dir) { config in
            let d = RefusingDeviceDisk(store: config.pendingStore)
            disk.withLock { $0 = d }
            config.checkpoint = d.hook
        }
        let d = try #require(disk.withLock { $0 })
        let orderId = coreOrderId("kept")
        rig.gateway.armFault(.lostAnswer)
        #expect(coreCommError(await rig.core.processSale(CoreSale(amount: 1000, currency: "EUR", orderId: orderId))) != nil)

        d.arm()
        let tapToPay = TapToPay(configuration: TapToPay.Configuration(
            cardSource: CoreRig.card(), gateway: rig.gateway, pendingStore: rig.store, checkpoint: d.hook))
        try await tapToPay.prepare(token: rig.gateway.issueToken(accountId: "acct_core_test"))
        let outcome = await pay(tapToPay, amount: 1000, orderId: orderId)
        try d.heal()
        let reports = try await rig.core.resolvePendingSales()

        if case .result(let r) = outcome, r.status == .approved {
            #expect(try rig.reversalCount(orderId: orderId) == 0,
                    "the app was told the payment was approved, and the recovery reversed it: \(reports.map(\.outcome))")
        }
        expectFailure(outcome, .outcomeUnknown(orderId: orderId))
    }
}
