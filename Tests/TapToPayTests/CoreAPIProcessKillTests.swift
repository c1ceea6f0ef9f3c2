import DeviceStore
import Foundation
import PaymentGateway
import CoreAPI
import Testing
#if canImport(Glibc)
import Glibc
import TestSupport
#endif

/// A real process killed with SIGKILL at each point between the card read and the host's answer
/// (`tapemu sale` with `TAPEMU_KILL_AT`), then a new process resolves what is on disk: the pending
/// sale is there whenever it may have been charged, the recovery resolves it, nothing is
/// reversed twice and nothing is lost.
///
/// Needs the `tapemu` executable built next to the test bundle (`swift build --build-tests`, or
/// `swift test`, builds it); `TAPEMU_BINARY` may point at another one.
@Suite(.serialized) struct CoreAPIProcessKillTests {
    enum KillPoint: String, CaseIterable, Sendable {
        case cardRead, pendingWritten, submitted, gatewayReceived, gatewayRecorded, answered, printed
    }

    /// What the host can have recorded when the process died.
    enum HostState: Sendable { case nothing, recorded, either }

    struct Case: Sendable, CustomTestStringConvertible {
        var point: KillPoint
        var approves: Bool
        var earlySubmission: Bool
        var testDescription: String {
            "\(point.rawValue), \(approves ? "approved" : "declined"), \(earlySubmission ? "early" : "late") submission"
        }

        var amount: Int { approves ? 1000 : 1054 }
        var seed: SeedVariant { earlySubmission ? .seed003 : .seed002 }

        /// Whether the sale is on the device's disk after the kill.
        var pendingExpected: Bool { !(point == .cardRead && !earlySubmission) }

        var host: HostState {
            switch point {
            case .cardRead: earlySubmission ? .either : .nothing
            case .pendingWritten, .gatewayReceived: .nothing
            case .submitted: .either
            case .gatewayRecorded, .answered, .printed: .recorded
            }
        }

        /// The answer had come back and was stored in the record: recovery reports it as the
        /// outcome and reverses nothing (it may have been shown already: with `printed` it was).
        var answerStored: Bool { point == .answered || point == .printed }
    }

    static let cases: [Case] = KillPoint.allCases.flatMap { p in
        [true, false].flatMap { approves in
            [false, true].map { early in Case(point: p, approves: approves, earlySubmission: early) }
        }
    }

    struct Child {
        var status: Int32
        var killedBySignal: Bool
        var stdout: String
        var stderr: String
    }

    /// The built `tapemu` (TestSupport's ``tapemuExecutable()``).
    static func binary() throws -> URL { try tapemuExecutable() }

    /// Runs `tapemu args…` (or another `executable`) and waits for it to exit (a real event: the
    /// child's termination).
    static func run(_ args: [String], killAt: KillPoint? = nil, in dir: TempDir,
                    executable: URL? = nil) async throws -> Child {
        let process = Process()
        process.executableURL = try executable ?? binary()
        process.arguments = args
        var env = ProcessInfo.processInfo.environment
        env["TAPEMU_KILL_AT"] = killAt?.rawValue
        process.environment = env
        let out = dir.path + "/stdout-\(UUID().uuidString)"
        let err = dir.path + "/stderr-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let outHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        let errHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            process.terminationHandler = { _ in c.resume() }
            do {
                try process.run()
            } catch {
                Issue.record("cannot start tapemu: \(error)")
                process.terminationHandler = nil
                c.resume()
            }
        }
        try? outHandle.close()
        try? errHandle.close()
        return Child(status: process.terminationStatus, killedBySignal: process.terminationReason == .uncaughtSignal,
                     stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
                     stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    static func json(_ text: String) throws -> [[String: Any]] {
        let value = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try #require(value as? [[String: Any]], "not a JSON array: \(text)")
    }

    @Test func theBinaryIsThere() throws {
        let url = try Self.binary()
        #expect(FileManager.default.isExecutableFile(atPath: url.path))
    }

    @Test(arguments: cases)
    func killedAtEachPointThenResolved(_ c: Case) async throws {
        let dir = TempDir()
        let data = dir.path + "/data"
        let orderId = coreOrderId("kill")
        var sale = ["sale", "--amount", "\(c.amount)", "--order-id", orderId, "--data-dir", data, "--json"]
        if !c.earlySubmission { sale.append("--no-early-submit") }

        // 1. The sale, killed.
        let killed = try await Self.run(sale, killAt: c.point, in: dir)
        #expect(killed.killedBySignal, "tapemu was not killed: exit \(killed.status), \(killed.stderr)")
        #expect(killed.status == SIGKILL)
        #expect(killed.stderr.contains("killed at \(c.point.rawValue)"))

        // 2. What is on disk now.
        let hostRows: [Payment]
        do {
            let gateway = try EmbeddedGateway(dataDirectory: data)
            hostRows = try gateway.ledger.allPayments().filter { $0.orderId == orderId }
            let store = try PendingPaymentStore(dataDirectory: data)
            let pending = try store.all()
            if c.pendingExpected {
                try #require(pending.count == 1, "the pending sale is not on disk")
                #expect(pending[0].orderId == orderId)
                #expect(pending[0].origin == .coreAPI)
                #expect(pending[0].maskedPAN == "476173******0010")
                #expect(CoreSale(pending: pending[0])?.amount == c.amount)
            } else {
                #expect(pending.isEmpty)
            }
        }
        #expect(hostRows.allSatisfy { $0.kind == .sale })
        #expect(hostRows.count <= 1)
        switch c.host {
        case .nothing: #expect(hostRows.isEmpty)
        case .recorded: #expect(hostRows.count == 1)
        case .either: break
        }
        let hostSale = hostRows.first
        if let hostSale { #expect(hostSale.transactionCode == (c.approves ? .approved : .declined)) }
        // Whatever the host recorded, the device kept a pending sale for it: nothing is lost.
        if hostSale != nil { #expect(c.pendingExpected) }

        // 3. A new process lists and resolves.
        let listed = try await Self.run(["pending", "--json", "--data-dir", data], in: dir)
        #expect(listed.status == 0)
        #expect(try Self.json(listed.stdout).compactMap { $0["orderId"] as? String } == (c.pendingExpected ? [orderId] : []))

        let resolved = try await Self.run(["resolve", "--seed", c.seed.rawValue, "--json", "--data-dir", data], in: dir)
        #expect(resolved.status == 0, "resolve failed: \(resolved.stderr)")
        let reports = try Self.json(resolved.stdout)
        if c.point == .printed {
            #expect(killed.stdout.contains("onSaleResponse"), "the response was not printed before the kill")
        }
        let expectedOutcome: String? = if !c.pendingExpected { nil }
            else if c.answerStored { "answered" }
            else if hostSale == nil { "notFound" }
            else if c.approves { "reversed" }
            else { "declined" }
        #expect(reports.compactMap { $0["outcome"] as? String } == (expectedOutcome.map { [$0] } ?? []))
        if let report = reports.first {
            #expect((report["sale"] as? [String: Any])?["orderId"] as? String == orderId)
            #expect(report["removedFromStore"] as? Bool == true)
            #expect(report["seed"] as? String == c.seed.rawValue)
        }

        // 4. The ledger after the recovery: an approved sale reversed exactly once.
        func rows() throws -> [Payment] {
            try EmbeddedGateway(dataDirectory: data).ledger.allPayments().filter { $0.orderId == orderId }
        }
        let after = try rows()
        if let hostSale {
            let saleNow = try #require(after.first { $0.kind == .sale })
            #expect(saleNow.paymentId == hostSale.paymentId)
            let reversed = c.approves && !c.answerStored
            #expect(saleNow.state == (reversed ? .reversed : c.approves ? .approved : .declined))
            #expect(after.filter { $0.kind == .reversal }.count == (reversed ? 1 : 0))
        } else {
            #expect(after.isEmpty)
        }
        #expect(try PendingPaymentStore(dataDirectory: data).all().isEmpty)

        // 5. Resolving again does nothing.
        let again = try await Self.run(["resolve", "--seed", c.seed.rawValue, "--json", "--data-dir", data], in: dir)
        #expect(again.status == 0)
        #expect(try Self.json(again.stdout).isEmpty)
        #expect(try rows() == after)

        // 6. A sale that never reached the host runs again, once.
        if hostSale == nil {
            let rerun = try await Self.run(sale, in: dir)
            #expect(rerun.status == (c.approves ? 0 : 2), "the sale did not run again: \(rerun.stderr)")
            #expect(try rows().filter { $0.kind == .sale }.count == 1)
            #expect(try PendingPaymentStore(dataDirectory: data).all().isEmpty)
        }
    }

    @Test func anUnknownKillPointIsAUsageError() async throws {
        let dir = TempDir()
        let process = Process()
        process.executableURL = try Self.binary()
        process.arguments = ["sale", "--amount", "100", "--order-id", "o", "--data-dir", dir.path + "/data"]
        var env = ProcessInfo.processInfo.environment
        env["TAPEMU_KILL_AT"] = "nowhere"
        process.environment = env
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            process.terminationHandler = { _ in c.resume() }
            do { try process.run() } catch { c.resume() }
        }
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 64)
    }

    /// The CLI prints one line per callback, and `--json` the same callbacks as one array.
    @Test func saleCommandPrintsEachCallback() async throws {
        let dir = TempDir()
        let data = dir.path + "/data"
        let lost = try await Self.run(["sale", "--amount", "1092", "--order-id", "cli-1", "--data-dir", data], in: dir)
        #expect(lost.status == 4)
        let lines = lost.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("onDeviceConnected AppleTTP") == true)
        #expect(lines.last?.hasPrefix("onTransactionCommError order=cli-1 amount=1092 EUR card=visa 476173******0010 error=1 networkError") == true)
        #expect(!lost.stdout.contains("4761739001010010"))
        #expect(!lost.stderr.contains("4761739001010010"))

        let blocked = try await Self.run(["sale", "--amount", "100", "--order-id", "cli-2", "--device-condition",
                                          "merchant-blocked", "--json", "--data-dir", data], in: dir)
        #expect(blocked.status == 3)
        let callbacks = try Self.json(blocked.stdout)
        #expect(callbacks.compactMap { $0["callback"] as? String } == ["onDeviceError", "onError"])
        #expect(callbacks.first?["errorName"] as? String == "APPLE_TTP_MERCHANT_BLOCKED")
        #expect(callbacks.last?["errorName"] as? String == "deviceNotReady")

        let declined = try await Self.run(["sale", "--amount", "1057", "--order-id", "cli-3", "--json", "--data-dir", data], in: dir)
        #expect(declined.status == 2)
        let answer = try Self.json(declined.stdout).last
        #expect(answer?["callback"] as? String == "onSaleResponse")
        #expect(answer?["code"] as? String == "E")
        #expect(answer?["approved"] as? Bool == false)

        let pending = try await Self.run(["pending", "--data-dir", data], in: dir)
        #expect(pending.stdout.hasPrefix("cli-1  1092 EUR  visa 476173******0010"))
        let resolved = try await Self.run(["resolve", "--data-dir", data], in: dir)
        #expect(resolved.status == 0)
        #expect(resolved.stdout.contains("found code A"))
        #expect(resolved.stdout.contains("reversed"))
    }

    /// A failed request leaves the sale pending, and `resolve` says so with exit 75.
    @Test func resolveKeepsWhatItCannotResolve() async throws {
        let dir = TempDir()
        let data = dir.path + "/data"
        _ = try await Self.run(["sale", "--amount", "1092", "--order-id", "keep-1", "--data-dir", data], in: dir)
        let failed = try await Self.run(["resolve", "--gateway-fault", "server-error", "--json", "--data-dir", data], in: dir)
        #expect(failed.status == 75)
        let report = try #require(try Self.json(failed.stdout).first)
        #expect(report["outcome"] as? String == "failed")
        #expect(report["removedFromStore"] as? Bool == false)
        #expect((report["error"] as? [String: Any])?["name"] as? String == "networkError")
        let ok = try await Self.run(["resolve", "--json", "--data-dir", data], in: dir)
        #expect(ok.status == 0)
        #expect(try Self.json(ok.stdout).first?["outcome"] as? String == "reversed")
    }
}

/// `tapemu pay` (the MONEI-style face) killed at each point from the card read to the hand-over
/// of the result, then `tapemu charges --pending` in a new process: whenever the host may hold
/// a payment the device kept its record, and the recovery reports the outcome the host holds —
/// from the stored answer when the answer had come back — or keeps the record when none shows.
@Suite(.serialized) struct PayProcessKillTests {
    typealias KillPoint = CoreAPIProcessKillTests.KillPoint

    struct Case: Sendable, CustomTestStringConvertible {
        var point: KillPoint
        var approves: Bool
        var card: String
        var testDescription: String { "\(point.rawValue), \(approves ? "approved" : "declined"), \(card)" }
        var early: Bool { card == "visa-qvsdc" }
        var amount: Int { approves ? 1000 : 1051 }
        var recordExpected: Bool { !(point == .cardRead && !early) }
        var answerStored: Bool { point == .answered || point == .printed }
    }

    static let cases: [Case] = KillPoint.allCases.flatMap { p in
        [true, false].flatMap { a in ["visa-qvsdc", "mastercard-mchip"].map { Case(point: p, approves: a, card: $0) } }
    }

    @Test(arguments: cases)
    func killedThenRecovered(_ c: Case) async throws {
        let dir = TempDir()
        let data = dir.path + "/data"
        let orderId = coreOrderId("paykill")
        let pay = ["pay", "--amount", "\(c.amount)", "--order-id", orderId, "--card", c.card, "--data-dir", data, "--json"]
        let killed = try await CoreAPIProcessKillTests.run(pay, killAt: c.point, in: dir)
        #expect(killed.killedBySignal, "tapemu was not killed: exit \(killed.status), \(killed.stderr)")
        if c.point == .printed { #expect(killed.stdout.contains("\"status\"")) }

        let hostSale = try EmbeddedGateway(dataDirectory: data).ledger.sales(orderId: orderId).first
        let records = try PendingPaymentStore(dataDirectory: data).all()
        #expect(records.count == (c.recordExpected ? 1 : 0))
        if hostSale != nil { #expect(c.recordExpected, "the host holds a payment the device forgot") }
        if c.answerStored { #expect(records.first?.state == .answered) }

        let recovered = try await CoreAPIProcessKillTests.run(["charges", "--pending", "--json", "--data-dir", data], in: dir)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(recovered.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == (c.recordExpected ? 1 : 0))
        if let row = rows.first {
            if let hostSale {
                #expect(row["finding"] as? String == hostSale.status.rawValue)
                #expect(row["removedFromDevice"] as? Bool == true)
                #expect(recovered.status == 0)
            } else {
                #expect(row["finding"] as? String == "notFound")
                #expect(row["removedFromDevice"] as? Bool == false)
                #expect(recovered.status == 75)
            }
        }
        // The recovery never charges, retries or reverses.
        let after = try EmbeddedGateway(dataDirectory: data).ledger.allPayments().filter { $0.orderId == orderId }
        #expect(after.count == (hostSale == nil ? 0 : 1))
        #expect(after.allSatisfy { $0.kind == .sale && !$0.reversed })
    }
}
