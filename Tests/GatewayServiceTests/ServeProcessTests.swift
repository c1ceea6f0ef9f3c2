import BERTLV
import PaymentRules
import Foundation
import GatewayService
import HTTPClient
import PaymentGateway
import Synchronization
import Testing
import TestSupport
@testable import tapemu

/// A `tapemu gateway serve` child process: started, its URL read from its first stdout line.
final class ServeProcess: @unchecked Sendable {
    let process = Process()
    private let exited = OneShotEvent()
    private let lines = Mutex<(buffer: String, waiters: [(String, CheckedContinuation<String?, Never>)], closed: Bool)>(("", [], false))
    let outPipe = Pipe()

    /// The built `tapemu` (TestSupport's ``tapemuExecutable()``).
    static func binary() throws -> URL { try tapemuExecutable() }

    init(_ args: [String], listen: String = "127.0.0.1:0") throws {
        process.executableURL = try Self.binary()
        process.arguments = ["gateway", "serve", "--listen", listen] + args
        process.standardOutput = outPipe
        // stderr too: the access log (`--access-log`) says when a request is under way.
        process.standardError = outPipe
        process.standardInput = FileHandle.nullDevice
        let exited = self.exited
        process.terminationHandler = { _ in exited.fire() }
        try process.run()
        // One reader, in order, on a descriptor of its own until the server's output ends: a
        // FileHandle readabilityHandler here lost the serve process's first lines now and then
        // (TLSServeTests.offLoopback waited forever for the warning line, the pipe read empty).
        try? outPipe.fileHandleForWriting.close()
        let fd = dup(outPipe.fileHandleForReading.fileDescriptor)
        Thread { [weak self] in
            var chunk = [UInt8](repeating: 0, count: 4096)
            var pending: [UInt8] = []
            while true {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                pending += chunk[0..<n]
                // Whole lines only: a UTF-8 character is never cut between two reads.
                guard let end = pending.lastIndex(of: UInt8(ascii: "\n")) else { continue }
                self?.received(String(decoding: pending[...end], as: UTF8.self))
                pending.removeSubrange(...end)
            }
            close(fd)
            if !pending.isEmpty { self?.received(String(decoding: pending, as: UTF8.self)) }
            self?.received(nil)
        }.start()
    }

    private func received(_ text: String?) {
        let ready = lines.withLock { s -> [(CheckedContinuation<String?, Never>, String?)] in
            if let text { s.buffer += text } else { s.closed = true }
            var out: [(CheckedContinuation<String?, Never>, String?)] = []
            s.waiters.removeAll { prefix, c in
                if let line = s.buffer.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                    out.append((c, String(line)))
                    return true
                }
                if s.closed { out.append((c, nil)); return true }
                return false
            }
            return out
        }
        for (c, v) in ready { c.resume(returning: v) }
    }

    deinit {
        // A test that failed early leaves no server behind (SIGKILL: this process started it).
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The first stdout line starting with `prefix` (nil if stdout closes first).
    func line(startingWith prefix: String) async -> String? {
        await withCheckedContinuation { (c: CheckedContinuation<String?, Never>) in
            let now = lines.withLock { s -> String?? in
                if let line = s.buffer.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) { return .some(String(line)) }
                if s.closed { return .some(nil) }
                s.waiters.append((prefix, c))
                return nil
            }
            if let now { c.resume(returning: now) }
        }
    }

    /// The merchant API key the server printed.
    func apiKey() async throws -> String {
        String(try #require(await line(startingWith: "merchant API key: ")).dropFirst("merchant API key: ".count))
    }

    /// The server's terminal API as a terminal with a token for the API key (`pos-test`).
    func terminal(timeout: Duration = .seconds(30)) async throws -> RemoteGateway {
        let remote = RemoteGateway(baseURL: try await url(), requestTimeout: timeout)
        return remote.with(deviceToken: try await remote.posAuthToken(apiKey: try await apiKey(), pointOfSaleId: "pos-test"))
    }

    /// The server's URL from its "listening on" line.
    func url() async throws -> String {
        let line = try #require(await line(startingWith: "tapemu gateway listening on "))
        return String(line.dropFirst("tapemu gateway listening on ".count))
    }

    func waitForExit() async -> (status: Int32, signalled: Bool) {
        await exited.wait()
        return (process.terminationStatus, process.terminationReason == .uncaughtSignal)
    }
}

@Suite("tapemu gateway serve as a process", .temporaryDirectories)
struct ServeProcessTests {
    @Test("killed by SIGKILL inside a group commit, after its rows were written and before COMMIT: the ledger holds none of that batch (no sale, no terminal's claim), all it answered, and no half-written sale")
    func killMidBatch() async throws {
        let serverDir = try temporaryDirectory()
        let server = try ServeProcess(["--data-dir", serverDir, "--fault", "kill-mid-batch"])
        let remote = try await server.terminal(timeout: .seconds(20))
        var approved: Set<String> = []
        // Waves of 32 concurrent authorisations until a batch of two or more forms (the first
        // usually does); the process dies inside it.
        var wave = 0
        while server.process.isRunning && wave < 20 {
            let answered = await withTaskGroup(of: String?.self) { group in
                for i in 0..<32 {
                    let orderId = "kmb-\(wave)-\(i)"
                    group.addTask {
                        let r = try? await remote.authorize(AuthorisationRequest(
                            orderId: orderId, amount: 1000, currency: "EUR", callbackUrl: "http://127.0.0.1:9/hook",
                            card: CardData(pan: PAN("4012888888881881")!, expiry: "2812")))
                        return r?.status == .approved ? orderId : nil
                    }
                }
                var out: Set<String> = []
                for await o in group { if let o { out.insert(o) } }
                return out
            }
            approved.formUnion(answered)
            wave += 1
        }
        let exit = await server.waitForExit()
        #expect(exit.signalled && exit.status == SIGKILL)
        let line = try #require(await server.line(startingWith: "tapemu gateway: kill-mid-batch: "))
        let killed = Set(line.split(separator: ":").last!.split(separator: " ").map(String.init))
        #expect(killed.count >= 2)

        let ledger = try Ledger(directory: serverDir, access: .existing)
        let sales = try ledger.allPayments()
        let recorded = Set(sales.map(\.orderId))
        #expect(recorded.isDisjoint(with: killed), "a row of the killed batch survived: \(recorded.intersection(killed))")
        #expect(approved.isSubset(of: recorded), "an answered approval is missing")
        // Every recorded sale has its webhook: nothing half-written.
        let hooked = try ledger.webhooks().map(\.orderId)
        #expect(hooked.sorted() == sales.map(\.orderId).sorted())
        // The terminal's claim on each orderId is written with its sale, in the same commit: a
        // killed batch left no claim behind, and every recorded sale has its claim.
        for o in killed { #expect(try ledger.orderTerminal(o) == nil, "the claim of \(o) outlived its killed sale") }
        for o in recorded { #expect(try ledger.orderTerminal(o) != nil, "the sale of \(o) has no claim") }
    }

    @Test("kill-mid-batch armed for one batch over /admin/faults: the authorisations before the batch do not use it up; the process dies inside the first batch of two or more")
    func killMidBatchArmedOnce() async throws {
        let serverDir = try temporaryDirectory()
        let server = try ServeProcess(["--data-dir", serverDir])
        let url = try await server.url()
        let key = String(try #require(await server.line(startingWith: "merchant API key: ")).dropFirst("merchant API key: ".count))
        let armed = try await HTTPClient().send(HTTPClientRequest(
            method: "POST", url: url + "/admin/faults",
            headers: [("Authorization", key), ("Content-Type", "application/json")],
            body: Array(#"{"fault":"kill-mid-batch","count":1}"#.utf8)))
        #expect(armed.status == 200)
        let remote = try await server.terminal(timeout: .seconds(20))
        var wave = 0
        while server.process.isRunning && wave < 5 {
            await withTaskGroup(of: Void.self) { group in
                for i in 0..<32 {
                    let orderId = "kmb1-\(wave)-\(i)"
                    group.addTask {
                        _ = try? await remote.authorize(AuthorisationRequest(
                            orderId: orderId, amount: 1000, currency: "EUR",
                            card: CardData(pan: PAN("4012888888881881")!, expiry: "2812")))
                    }
                }
            }
            wave += 1
        }
        if server.process.isRunning {
            Issue.record("the armed kill-mid-batch never fired in \(wave) waves of 32 concurrent authorisations")
            kill(server.process.processIdentifier, SIGKILL)
        }
        let exit = await server.waitForExit()
        #expect(exit.signalled && exit.status == SIGKILL)
        #expect(await server.line(startingWith: "tapemu gateway: kill-mid-batch: ") != nil)
    }

    @Test("killed by SIGKILL between the commit and the answer: the terminal reports outcomeUnknown; the restarted server's ledger and charges hold the payment")
    func killAfterCommit() async throws {
        let serverDir = try temporaryDirectory()
        let device = try temporaryDirectory()
        let server = try ServeProcess(["--data-dir", serverDir, "--fault", "kill-after-commit"])
        let url = try await server.url()
        let key = try #require(await server.line(startingWith: "merchant API key: "))
        let apiKey = try await server.apiKey()
        let token = await runCLI(["pay", "--amount", "1250", "--order-id", "killed-1", "--gateway", url, "--api-key", apiKey,
                                  "--data-dir", device, "--json"])
        #expect(token.status == PayCommand.outcomeUnknown, "\(token.err)")
        let exit = await server.waitForExit()
        #expect(exit.signalled && exit.status == SIGKILL)

        // Restarted on the same data directory: the payment is there, and the key is the same.
        let restarted = try ServeProcess(["--data-dir", serverDir])
        let url2 = try await restarted.url()
        #expect(await restarted.line(startingWith: "merchant API key: ") == key)
        let charges = await runCLI(["charges", "--order-id", "killed-1", "--gateway", url2, "--api-key", apiKey, "--data-dir", device, "--json"])
        #expect(charges.status == 0, "\(charges.err)")
        #expect(charges.out.contains("killed-1") && charges.out.contains("approved"))
        // Seed 000 step 3 over HTTP resolves the device's pending record.
        let step3 = await runCLI(["charges", "--pending", "--gateway", url2, "--api-key", apiKey, "--data-dir", device, "--json"])
        #expect(step3.status == 0, "\(step3.err)")
        restarted.process.terminate()
        let stopped = await restarted.waitForExit()
        #expect(stopped.status == 0 && !stopped.signalled)
        let ledger = try Ledger(directory: serverDir, access: .readOnly)
        #expect(try ledger.sales(orderId: "killed-1").count == 1)
    }

    @Test("SIGTERM while a request is under way: it is answered, then the server exits 0")
    func gracefulSIGTERM() async throws {
        let serverDir = try temporaryDirectory()
        let server = try ServeProcess(["--data-dir", serverDir, "--fault", "delay:1500", "--access-log"])
        let url = try await server.url()
        let device = try temporaryDirectory()
        let apiKey = try await server.apiKey()
        let paying = Task { await runCLI(["pay", "--amount", "1250", "--order-id", "term-1", "--gateway", url, "--api-key", apiKey,
                                          "--data-dir", device, "--json"]) }
        // The access log's line when the authorisation reached the server (the delay holds it).
        _ = try #require(await server.line(startingWith: "tapemu: → POST /terminal/v1/authorisations"))
        server.process.terminate()
        let paid = await paying.value
        #expect(paid.status == 0, "\(paid.err)")
        let exit = await server.waitForExit()
        #expect(exit.status == 0 && !exit.signalled)
    }
}
