import Foundation
import GatewayService
import HTTPServer
import PaymentGateway
import Testing
import TestSupport

/// Exhaustion is survived (issue 33, item 5): a gateway whose data directory is a real 4 MB
/// volume (a tmpfs the test mounts; it needs root) approves 300 payments in a row, keeps its WAL
/// bounded, and when the volume is full answers "nothing was written", keeps answering queries,
/// and authorises again as soon as space is freed — no restart.
@Suite("A full disk: the ledger never jams", .serialized, .temporaryDirectories)
struct FullDiskTests {
    /// A tmpfs of `megabytes` mounted on a fresh directory; unmounted by `unmount()`.
    struct SmallVolume {
        let path: String
        init(megabytes: Int) throws {
            path = try temporaryDirectory() + "/volume"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let r = Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "tmpfs", path])
            guard r == 0 else { throw RawConnectionError("mount -t tmpfs failed (\(r)): this test needs root and mount") }
        }
        /// Lazily (-l): the ledger may still hold its files open when the test returns; a plain
        /// umount then failed "busy" and left the volume mounted under /tmp after every run.
        func unmount() { _ = Self.run("/bin/umount", ["-l", path]) }
        static func run(_ tool: String, _ args: [String]) -> Int32 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: tool)
            p.arguments = args
            guard (try? p.run()) != nil else { return -1 }
            p.waitUntilExit()
            return p.terminationStatus
        }
    }

    /// Fills the volume with one file until the disk says ENOSPC; returns its path.
    static func fill(_ directory: String) throws -> String {
        let path = directory + "/filler"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw RawConnectionError("cannot create \(path)") }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0, count: 4096)
        // Bounded: a 4 MB volume holds at most 1024 chunks.
        for _ in 0..<(1 << 16) {
            let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == ENOSPC { return path }
            if n <= 0 { break }
        }
        // The last partial block: byte by byte.
        var one: UInt8 = 0
        while write(fd, &one, 1) == 1 {}
        return path
    }

    static func fileSize(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : 0
    }

    @Test("4 MB volume: 300 approvals in a row; full: nothing written, queries answered; space back: approvals again",
          .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func smallVolume() async throws {
        let volume = try SmallVolume(megabytes: 4)
        defer { volume.unmount() }
        let live = try LiveService(dir: volume.path + "/srv")
        defer { Task { await live.server.stop() } }
        let wal = volume.path + "/srv/" + Ledger.fileName + "-wal"
        var largestWAL = 0
        for i in 0..<300 {
            let r = try await live.authorise(orderId: "vol-\(i)", amount: 1000)
            #expect(r.status == .approved, "payment \(i)")
            largestWAL = max(largestWAL, Self.fileSize(wal))
        }
        // Bounded: the WAL is checkpointed and truncated, never the 4 MB SQLite lets it reach.
        #expect(largestWAL <= 1 << 20, "the WAL reached \(largestWAL) bytes")
        let reserve = volume.path + "/srv/" + Ledger.fileName + Ledger.reserveSuffix
        #expect(Self.fileSize(reserve) == Ledger.reserveBytes)

        let filler = try Self.fill(volume.path)
        // Full: each authorisation is refused as not written (the reserve goes back to let the
        // WAL be checkpointed, then the filler takes nothing more: the disk is still full).
        var refused = 0
        for i in 0..<5 {
            do {
                let r = try await live.authorise(orderId: "full-\(i)", amount: 1000)
                // The released reserve may hold one more sale: then it is recorded and answered.
                #expect(r.status == .approved)
                #expect(try live.service.gateway.ledger.sales(orderId: "full-\(i)").count == 1)
            } catch {
                refused += 1
                #expect(error.code == .storage, "\(error)")
                #expect(error.reason.contains("nothing was written"), "\(error.reason)")
                #expect(try live.service.gateway.ledger.sales(orderId: "full-\(i)").isEmpty)
            }
        }
        #expect(refused >= 1, "the full volume never refused a write")
        // The reserve on its own (the filler still takes the rest): given back at the first
        // refusal, it let the checkpoint run and the next sales be written.
        #expect(refused < 5, "the reserve gave nothing back")
        #expect(Self.fileSize(reserve) == 0, "the reserve is still held on a full disk")
        // Queries are answered while full.
        let charges = try await live.send("GET", "/terminal/v1/charges?orderId=vol-7")
        #expect(charges.status == 200, "\(String(decoding: charges.body, as: UTF8.self))")
        #expect(String(decoding: charges.body, as: UTF8.self).contains("vol-7"))
        let health = try await live.send("GET", "/health")
        #expect(health.status == 200)

        // Space back: served again at once, no restart.
        #expect(unlink(filler) == 0)
        for i in 0..<20 {
            let r = try await live.authorise(orderId: "back-\(i)", amount: 1000)
            #expect(r.status == .approved, "after space returned, payment \(i)")
        }
        #expect(try live.service.gateway.ledger.sales(orderId: "back-19").count == 1)
        // Room again: the reserve is held again.
        #expect(Self.fileSize(reserve) == Ledger.reserveBytes)
        print("4 MB volume: 300 approved, largest WAL \(largestWAL) bytes; full: \(refused) of 5 refused (nothing written), queries answered; space back: 20 of 20 approved")
    }
}
