import Foundation
import Testing
import TestSupport
@testable import tapemu

/// A payment refused before it starts — its card source cannot be used — leaves nothing behind:
/// no data directory made for a sale that never was.
@Suite("pay and sale with an unusable --trace or --card create no data directory", .temporaryDirectories)
struct NoDataDirOnBadCardTests {
    @Test(arguments: [
        (["pay", "--amount", "1000", "--order-id", "nd-1", "--trace", "MISSING"], Int32(66)),
        (["pay", "--amount", "1000", "--order-id", "nd-2", "--card", "MISSING"], Int32(66)),
        (["sale", "--amount", "1000", "--order-id", "nd-3", "--trace", "MISSING"], Int32(66)),
        (["sale", "--amount", "1000", "--order-id", "nd-4", "--card", "TMP"], Int32(74)),
    ])
    func nothingIsCreated(_ args: [String], _ status: Int32) async throws {
        let tmp = try temporaryDirectory()
        let data = tmp + "/data"
        let resolved = args.map { $0 == "MISSING" ? tmp + "/none.json" : $0 == "TMP" ? tmp : $0 } + ["--data-dir", data]
        let r = await runCLI(resolved)
        #expect(r.status == status, "\(resolved): \(r.err)")
        #expect(!FileManager.default.fileExists(atPath: data), "\(resolved) created \(data)")
    }
}
