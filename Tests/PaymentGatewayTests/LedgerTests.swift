import BERTLV
import PaymentRules
import Foundation
@testable import PaymentGateway
import Testing
import TestSupport
import Storage

@Suite("Ledger")
struct LedgerTests {
    @Test("a new gateway on the same directory sees every payment, webhook, token and setting")
    func persistenceAcrossReopen() async throws {
        let dir = TempDir()
        let now = WallClock()
        var token = ""
        var paymentId = ""
        do {
            let g = try Fixture.gateway(dir, now: now)
            let r = try await g.authorize(Fixture.request(orderId: "order-1", amount: 1000))
            paymentId = r.paymentId
            _ = try await g.authorize(Fixture.request(orderId: "order-2", amount: 2051))
            _ = try await g.reverse(uniqueRef: r.uniqueRef)
            try await g.setTermsAccepted(true, accountId: "acct_1")
            try g.blockSDKVersion("0.9.0")
            token = g.issueToken(accountId: "acct_1", ttl: .seconds(600))
        }
        let g2 = try Fixture.gateway(dir, now: now)
        let charges = try await g2.charges(orderId: "order-1")
        #expect(charges.map(\.paymentId) == [paymentId])
        #expect(charges.first?.state == .reversed)
        #expect(try await g2.charges(orderId: "order-2").first?.state == .declined)
        #expect(try g2.ledger.allPayments().count == 3)   // two sales and one reversal
        #expect(try g2.webhooks().map(\.event) == [.approved, .declined, .reversed])
        #expect(try await g2.termsAccepted(accountId: "acct_1"))
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g2.checkSDKVersion("0.9.0") }
                == .sdkUpgradeRequired)
        guard case .valid(let claims) = try await g2.validateToken(token) else {
            Issue.record("a token issued before the reopen must stay valid")
            return
        }
        #expect(claims.accountId == "acct_1")
    }

    @Test("the file is in WAL mode with the schema version set, and only the owner may read it")
    func fileSettings() throws {
        let dir = TempDir()
        let ledger = try Ledger(directory: dir.sub("d"))
        #expect(FileManager.default.fileExists(atPath: dir.sub("d/gateway.sqlite3")))
        #expect(FileManager.default.fileExists(atPath: dir.sub("d/gateway.sqlite3-wal")))
        let attributes = try FileManager.default.attributesOfItem(atPath: ledger.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let header = try #require(FileManager.default.contents(atPath: ledger.path))
        #expect(header.starts(with: Array("SQLite format 3\0".utf8)))
        let probe = try SQLiteConnection(path: ledger.path, busyTimeout: .seconds(1))
        #expect(try probe.userVersion == Ledger.schemaVersion)
        #expect(try probe.query("PRAGMA journal_mode").first?[0].string == "wal")
    }

    @Test("a file that is not a database is a typed error, not a crash, and is left alone")
    func corruptFile() throws {
        let dir = TempDir()
        try FileManager.default.createDirectory(atPath: dir.sub("d"), withIntermediateDirectories: true)
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: dir.sub("d/gateway.sqlite3")))
        #expect(gatewayErrorCode { () throws(GatewayError) in try Ledger(directory: dir.sub("d")) } == .corruptLedger)
        #expect(FileManager.default.contents(atPath: dir.sub("d/gateway.sqlite3")) == garbage)
    }

    @Test("a ledger whose pages were damaged after the header gives a typed error")
    func damagedPages() async throws {
        let dir = TempDir()
        do {
            let g = try Fixture.gateway(dir)
            for i in 0..<40 { _ = try await g.authorize(Fixture.request(orderId: "o-\(i)", amount: 1000 + i)) }
        }
        // Fold the WAL into the file first, then overwrite everything after the first page.
        do {
            let l = try Ledger(directory: dir.sub("data"))
            _ = try l.allPayments()
        }
        let path = dir.sub("data/gateway.sqlite3")
        try? FileManager.default.removeItem(atPath: path + "-wal")
        try? FileManager.default.removeItem(atPath: path + "-shm")
        var bytes = try #require(FileManager.default.contents(atPath: path))
        for i in 4096..<bytes.count { bytes[i] = 0xA5 }
        try bytes.write(to: URL(fileURLWithPath: path))
        let code: GatewayError.Code? = gatewayErrorCode { () throws(GatewayError) in
            let l = try Ledger(directory: dir.sub("data"))
            return try l.allPayments()
        }
        #expect(code == .corruptLedger)
    }

    @Test("a data directory that is a file is a storage error")
    func directoryIsAFile() throws {
        let dir = TempDir()
        _ = FileManager.default.createFile(atPath: dir.sub("file"), contents: Data("x".utf8))
        #expect(gatewayErrorCode { () throws(GatewayError) in try Ledger(directory: dir.sub("file")) } == .storage)
        #expect(gatewayErrorCode { () throws(GatewayError) in try Ledger(directory: "") } == .storage)
    }

    @Test("a ledger from a newer tapemu, or a foreign database, is refused")
    func newerSchema() throws {
        let dir = TempDir()
        _ = try Ledger(directory: dir.sub("newer"))
        do {
            let c = try SQLiteConnection(path: dir.sub("newer/") + Ledger.fileName, busyTimeout: .seconds(1))
            try c.execute("PRAGMA user_version = \(Ledger.schemaVersion + 1)")
        }
        #expect(gatewayErrorCode { () throws(GatewayError) in try Ledger(directory: dir.sub("newer")) }
                == .unsupportedLedgerVersion)

        try FileManager.default.createDirectory(atPath: dir.sub("foreign"), withIntermediateDirectories: true)
        do {
            let c = try SQLiteConnection(path: dir.sub("foreign/") + Ledger.fileName, busyTimeout: .seconds(1))
            try c.execute("CREATE TABLE notes (x TEXT)")
        }
        #expect(gatewayErrorCode { () throws(GatewayError) in try Ledger(directory: dir.sub("foreign")) }
                == .storeMissing)
    }

    @Test("the ledger never holds the full PAN, track 2 or the cardholder name")
    func noFullPANOnDisk() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        var emv = Fixture.emv(amount: 1000)
        let track2 = try Track2(bytes: [0x47, 0x61, 0x73, 0x90, 0x01, 0x01, 0x00, 0x10, 0xD2, 0x81, 0x22, 0x01, 0x00, 0x00, 0x0F])
        emv += TLV(tag: .track2EquivalentData, value: track2.bytes).encoded
        emv += TLV(tag: .cardholderName, value: Array("DOE/JANE".utf8)).encoded
        let r = try await g.authorize(Fixture.request(orderId: "pan-check", amount: 1000, emv: emv))
        #expect(r.status == .approved)
        let stored = try #require(try g.ledger.payment(paymentId: r.paymentId))
        #expect(stored.maskedPAN == "476173******0010")
        #expect(stored.last4 == "0010")
        let tags = try BERTLV.parse(stored.emvData).map(\.tag)
        #expect(!tags.contains(.pan) && !tags.contains(.track2EquivalentData) && !tags.contains(.cardholderName))
        #expect(tags.contains(.applicationCryptogram) && tags.contains(.amountAuthorised))
        // Nothing in the database files holds the digits, their BCD, or the name.
        let bcd = Fixture.visa.bcd
        for suffix in ["", "-wal"] {
            let bytes = [UInt8](FileManager.default.contents(atPath: g.ledger.location + suffix) ?? Data())
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(!text.contains(Fixture.visa.digits))
            #expect(!text.uppercased().contains(Encoding.hex(bcd, uppercase: true)))
            #expect(!text.contains("DOE/JANE"))
            #expect(!bytes.indices.contains { i in i + bcd.count <= bytes.count && Array(bytes[i..<(i + bcd.count)]) == bcd })
        }
    }

    @Test("the default data directory follows XDG_DATA_HOME, then HOME")
    func defaultDataDirectory() {
        #expect(DataDirectory.defaultPath(environment: ["XDG_DATA_HOME": "/x/data", "HOME": "/home/u"]) == "/x/data/tapemu")
        #expect(DataDirectory.defaultPath(environment: ["XDG_DATA_HOME": "/x/data/", "HOME": "/home/u"]) == "/x/data/tapemu")
        #expect(DataDirectory.defaultPath(environment: ["XDG_DATA_HOME": "relative", "HOME": "/home/u"])
                == "/home/u/.local/share/tapemu")
        #expect(DataDirectory.defaultPath(environment: ["HOME": "/home/u"]) == "/home/u/.local/share/tapemu")
        #expect(DataDirectory.defaultPath(environment: [:]).hasSuffix("/.local/share/tapemu"))
    }

    @Test("terms default to not accepted and can be changed")
    func terms() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        #expect(try await g.termsAccepted(accountId: "acct_new") == false)
        try await g.setTermsAccepted(true, accountId: "acct_new")
        #expect(try await g.termsAccepted(accountId: "acct_new"))
        try await g.setTermsAccepted(false, accountId: "acct_new")
        #expect(try await g.termsAccepted(accountId: "acct_new") == false)
    }
}
