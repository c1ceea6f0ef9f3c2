import Foundation
import Testing
@testable import tapemu
#if canImport(Glibc)
import Glibc
import TestSupport
#endif

// Issue 11 through the command line: a mistyped --data-dir, a damaged or missing store, a
// read-only or full disk, closing a record, all with the exit statuses README's table gives.

private func jsonArray(_ text: String) throws -> [Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any])
}

/// The commands that only read or resolve: none of them creates a data directory.
private let nonCreatingCommands: [[String]] = [
    ["pending"], ["pending", "--all"], ["resolve"], ["charges", "--order-id", "q-1"], ["charges", "--pending"],
    ["gateway", "webhooks"], ["gateway", "token"], ["pending", "close", "q-1", "--reason", "support said so"],
]

@Suite("tapemu and its data directory", .temporaryDirectories)
struct DataDirectoryCommandTests {
    /// Defect 7: `pending`, `resolve` and `gateway token` created a mistyped directory and said
    /// "no pending sales"; now every command but pay and sale says exit 66, and creates nothing.
    @Test(arguments: nonCreatingCommands)
    func aMissingDataDirIs66Everywhere(_ args: [String]) async throws {
        let missing = try temporaryDirectory() + "/typo"
        let r = await runCLI(args + ["--data-dir", missing])
        #expect(r.status == 66, "\(args): \(r.err)")
        #expect(r.err.hasPrefix("tapemu: no data in \(missing)"), "\(args): \(r.err)")
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    /// Defect 3 through the CLI: a ledger emptied or deleted after a payment is exit 74, naming
    /// the file, for every command — `pay` included — and nothing is created in its place.
    @Test(arguments: ["empty", "deleted"])
    func aLostLedgerStopsEveryCommand(_ how: String) async throws {
        let dir = try temporaryDirectory()
        #expect(await runCLI(["pay", "--amount", "1000", "--order-id", "l-1", "--data-dir", dir]).status == 0)
        let ledger = dir + "/gateway.sqlite3"
        if how == "empty" { #expect(truncate(ledger, 0) == 0) } else { try FileManager.default.removeItem(atPath: ledger) }
        for args in [["pay", "--amount", "1000", "--order-id", "l-2"], ["charges", "--order-id", "l-1"],
                     ["charges", "--pending"], ["resolve"], ["gateway", "token"], ["gateway", "webhooks"]] {
            let r = await runCLI(args + ["--data-dir", dir])
            #expect(r.status == 74, "\(args): \(r.status) \(r.err)")
            #expect(r.err.contains("gateway.sqlite3"), "\(args): \(r.err)")
        }
        #expect(how == "empty" || !FileManager.default.fileExists(atPath: ledger), "the ledger was created anew")
    }

    @Test func aLostDeviceStoreStopsEveryCommand() async throws {
        let dir = try temporaryDirectory()
        #expect(await runCLI(["sale", "--amount", "1292", "--order-id", "d-1", "--data-dir", dir]).status == 4)
        try FileManager.default.removeItem(atPath: dir + "/device.sqlite")
        for args in [["pending"], ["resolve"], ["charges", "--pending"], ["sale", "--amount", "1000", "--order-id", "d-2"],
                     ["pay", "--amount", "1000", "--order-id", "d-3"]] {
            let r = await runCLI(args + ["--data-dir", dir])
            #expect(r.status == 74, "\(args): \(r.status) \(r.err)")
            #expect(r.err.contains("device.sqlite is missing"), "\(args): \(r.err)")
        }
    }

    /// Defect 8: `pending close` with a reason; the closed record is an audit entry.
    @Test func closingARecordByCommand() async throws {
        let dir = try temporaryDirectory()
        let pay = await runCLI(["pay", "--amount", "1000", "--order-id", "c-1", "--gateway-fault", "no-answer",
                                "--gateway-timeout", "10ms", "--data-dir", dir])
        #expect(pay.status == 4)
        #expect(await runCLI(["charges", "--pending", "--data-dir", dir]).status == 75)
        let noReason = await runCLI(["pending", "close", "c-1", "--data-dir", dir])
        #expect(noReason.status == 64)
        let unknown = await runCLI(["pending", "close", "c-9", "--reason", "x", "--data-dir", dir])
        #expect(unknown.status == 66)
        let closed = await runCLI(["pending", "close", "c-1", "--reason", "ticket 4711: not charged", "--data-dir", dir])
        #expect(closed.status == 0, "\(closed.err)")
        #expect(closed.out.contains("closed order c-1"))
        #expect(await runCLI(["charges", "--pending", "--data-dir", dir]).status == 0)
        let listed = await runCLI(["pending", "--all", "--json", "--data-dir", dir])
        let items = try jsonRows(listed.out)
        #expect(items.count == 1)
        #expect(items.first?["state"] as? String == "closed")
        #expect((items.first?["closed"] as? [String: Any])?["reason"] as? String == "ticket 4711: not charged")
        #expect(try jsonArray(await runCLI(["pending", "--json", "--data-dir", dir]).out).isEmpty)
    }

    /// Defect 2 through the CLI: `pay` removes its record only once the result is on stdout;
    /// a stdout that fails keeps it, and `charges --pending` reports the stored answer.
    @Test func aResultThatCouldNotBePrintedStaysOnTheDevice() async throws {
        let dir = try temporaryDirectory()
        let failing = Console(out: { _ in }, err: { _ in }, stdin: { [] }, outputHealthy: { false })
        let status = await TapemuCLI.main(["tapemu", "pay", "--amount", "1000", "--order-id", "p-1", "--data-dir", dir],
                                          console: failing)
        #expect(status == 0)
        let recovered = await runCLI(["charges", "--pending", "--json", "--data-dir", dir])
        #expect(recovered.status == 0)
        let rows = try jsonRows(recovered.out)
        #expect(rows.count == 1)
        #expect(rows.first?["finding"] as? String == "approved")
        #expect(rows.first?["removedFromDevice"] as? Bool == true)
        #expect(try jsonArray(await runCLI(["pending", "--all", "--json", "--data-dir", dir]).out).isEmpty)
    }
}

@Suite("Recoveries hand their report over before records leave", .temporaryDirectories)
struct RecoveryHandOverCommandTests {
    /// Found by scripts/chaos: a recovery removed the records it resolved before its report was
    /// written, so a recovery killed (or with a dead stdout) told nobody. Now the records leave
    /// only once the report is on stdout.
    @Test(arguments: [["charges", "--pending"], ["resolve"]])
    func aReportThatCannotBeWrittenKeepsTheRecords(_ args: [String]) async throws {
        let dir = try temporaryDirectory()
        #expect(await runCLI(["pay", "--amount", "1292", "--order-id", "h-1", "--data-dir", dir]).status == 4)
        #expect(await runCLI(["sale", "--amount", "1292", "--order-id", "h-2", "--data-dir", dir]).status == 4)
        let dead = Console(out: { _ in }, err: { _ in }, stdin: { [] }, outputHealthy: { false })
        let status = await TapemuCLI.main(["tapemu"] + args + ["--data-dir", dir, "--json"], console: dead)
        #expect(status == 74)
        let pending = await runCLI(["pending", "--all", "--json", "--data-dir", dir])
        let orders = try jsonRows(pending.out)
            .compactMap { $0["orderId"] as? String }
        #expect(Set(orders) == ["h-1", "h-2"])
        // Written this time: the resolved records leave.
        let again = await runCLI(args + ["--data-dir", dir, "--json"])
        #expect(again.status == 0, "\(again.err)")
        let left = await runCLI(["pending", "--all", "--json", "--data-dir", dir])
        let remaining = try jsonRows(left.out)
            .compactMap { $0["orderId"] as? String }
        #expect(remaining == [args == ["resolve"] ? "h-1" : "h-2"])
    }
}

/// A small tmpfs this test mounts (the machine runs the tests as root): a disk that can be made
/// read-only or full for real, not simulated.
private final class Tmpfs {
    let path: String

    static let available: Bool = geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/bin/mount")

    init(size: String) throws {
        path = try temporaryDirectory() + "/mnt"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path])
    }

    func remount(readOnly: Bool) throws {
        try Self.run("/bin/mount", ["-o", "remount,\(readOnly ? "ro" : "rw")", path])
    }

    /// Fills the disk to the last byte.
    func fill() {
        let fd = open(path + "/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return }
        let block = [UInt8](repeating: 0x55, count: 4096)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        _ = block.withUnsafeBytes { write(fd, $0.baseAddress, 1) }
        close(fd)
    }

    deinit {
        try? Self.run("/bin/umount", ["-l", path])
    }

    private static func run(_ tool: String, _ args: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        struct Failed: Error { var status: Int32 }
        guard p.terminationStatus == 0 else { throw Failed(status: p.terminationStatus) }
    }
}

@Suite("tapemu on a read-only or full disk", .serialized, .temporaryDirectories, .enabled(if: Tmpfs.available, "needs root to mount a tmpfs"))
struct DiskFaultCommandTests {
    /// Defect 6: lookups failed on a read-only disk. They open read only now; a write says why.
    @Test func aReadOnlyDiskAnswersQueriesAndRefusesWrites() async throws {
        let disk = try Tmpfs(size: "4m")
        let dir = disk.path + "/data"
        #expect(await runCLI(["pay", "--amount", "1000", "--order-id", "ro-1", "--data-dir", dir]).status == 0)
        #expect(await runCLI(["pay", "--amount", "1292", "--order-id", "ro-2", "--gateway-fault", "lost-answer",
                              "--data-dir", dir]).status == 4)
        try disk.remount(readOnly: true)
        defer { try? disk.remount(readOnly: false) }

        let charges = await runCLI(["charges", "--order-id", "ro-1", "--json", "--data-dir", dir])
        #expect(charges.status == 0, "\(charges.err)")
        #expect(charges.out.contains("\"approved\""))
        let pending = await runCLI(["pending", "--all", "--json", "--data-dir", dir])
        #expect(pending.status == 0, "\(pending.err)")
        #expect(pending.out.contains("ro-2"))
        #expect(await runCLI(["gateway", "webhooks", "--data-dir", dir]).status == 0)
        #expect(await runCLI(["gateway", "token", "--data-dir", dir]).status == 0)

        for args in [["charges", "--pending"], ["resolve"], ["pay", "--amount", "1000", "--order-id", "ro-3"]] {
            let r = await runCLI(args + ["--data-dir", dir])
            #expect(r.status == 74, "\(args): \(r.status) \(r.err)")
            #expect(r.err.contains("Read-only file system"), "\(args): \(r.err)")
        }
    }

    @Test func aFullDiskAnswersQueriesAndSaysSoOnWrites() async throws {
        let disk = try Tmpfs(size: "2m")
        let dir = disk.path + "/data"
        #expect(await runCLI(["pay", "--amount", "1000", "--order-id", "full-1", "--data-dir", dir]).status == 0)
        disk.fill()
        #expect(await runCLI(["charges", "--order-id", "full-1", "--data-dir", dir]).status == 0)
        #expect(await runCLI(["pending", "--all", "--data-dir", dir]).status == 0)
        // Nothing can be written: stopped before any card is read, the system's reason given.
        let r = await runCLI(["pay", "--amount", "1000", "--order-id", "full-2", "--data-dir", dir, "--json"])
        #expect(r.status == 74, "\(r.status) \(r.err)")
        #expect(r.err.contains("No space left on device"), "\(r.err)")
        let after = await runCLI(["charges", "--order-id", "full-2", "--json", "--data-dir", dir])
        #expect(try (jsonObject(after.out)["items"] as? [Any])?.isEmpty == true, "\(after.out)")
    }
}
