import Foundation
import PaymentGateway
import PostgresClient
import PostgresLedger
import Synchronization
import Timing
import BERTLV
import PaymentRules

/// The PostgreSQL server of the tests: `TAPEMU_TEST_POSTGRES` (`scripts/dev test` starts a
/// private cluster and sets it). Each test makes a database of its own in it.
enum TestPostgres {
    static let skipMessage = "set TAPEMU_TEST_POSTGRES=postgres://USER@HOST:PORT/DB to run the PostgreSQL tests (scripts/dev test starts a private cluster and sets it)"

    static var url: String? {
        guard let v = ProcessInfo.processInfo.environment["TAPEMU_TEST_POSTGRES"], !v.isEmpty else { return nil }
        return v
    }

    static var available: Bool { url != nil }

    struct NotConfigured: Error, CustomStringConvertible { var description: String { skipMessage } }

    /// A new empty database in the test server; its URL.
    static func freshDatabase() throws -> String {
        guard let url else { throw NotConfigured() }
        let admin = try PostgresConnection(url: url)
        let name = "tapemu_t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        // An identifier cannot be a parameter; this one is ours (letters, digits, _).
        try admin.query("CREATE DATABASE \(name)")
        return replacingDatabase(of: url, with: String(name))
    }

    static func replacingDatabase(of url: String, with name: String) -> String {
        let afterScheme = url.range(of: "://")!.upperBound
        var query = ""
        var base = url
        if let q = url.firstIndex(of: "?") { query = String(url[q...]); base = String(url[..<q]) }
        if let slash = base[afterScheme...].firstIndex(of: "/") { base = String(base[..<slash]) }
        return base + "/" + name + query
    }

    /// Ends every session of the database `url` names (as a server crash or a network cut
    /// would); with `refuse`, new ones are refused until `allowConnections`.
    static func cutConnections(to url: String, refuse: Bool = false) throws {
        let admin = try PostgresConnection(url: Self.url!)
        let name = String(url.split(separator: "/").last!.split(separator: "?").first!)
        if refuse { try admin.query("ALTER DATABASE \(name) ALLOW_CONNECTIONS false") }
        try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
                        [.text(name)])
    }

    static func allowConnections(to url: String) throws {
        let admin = try PostgresConnection(url: Self.url!)
        let name = String(url.split(separator: "/").last!.split(separator: "?").first!)
        try admin.query("ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
    }
}

/// Requests the tests send (a card the gateway does not verify: approved unless a trigger says).
enum Card {
    static let visa = PAN("4012888888881881")!
    static let other = PAN("5105105105105100")!

    static func request(_ orderId: String, amount: Int = 1250, pan: PAN = visa,
                        callbackUrl: String? = "https://merchant.example/hook") -> AuthorisationRequest {
        AuthorisationRequest(orderId: orderId, amount: amount, currency: "EUR", callbackUrl: callbackUrl,
                             card: CardData(pan: pan, expiry: "2812", panSequenceNumber: 1, brand: nil, emvData: []),
                             sdkVersion: "1.0.0", accountId: "acct_test")
    }
}

extension Card {
    /// A new sale like `template` (a stored sale) for another order: what a gateway would hand
    /// ``LedgerStore/storeSales(_:beforeCommit:)`` (tests cannot build a `Payment` from scratch).
    static func sale(like template: Payment, orderId: String, amount: Int = 1250, uniqueRef: String? = nil) -> Payment {
        var p = template
        p.paymentId = "pay_" + UUID().uuidString.lowercased()
        p.orderId = orderId
        p.amount = amount
        p.uniqueRef = uniqueRef ?? String(UUID().uuidString.prefix(12))
        return p
    }
}

/// Dedicated threads for the tests' concurrent ledger calls (they block their thread).
let testLedgerThreads = BlockingExecutor(threads: 16, name: "tapemu.tests.ledger")
