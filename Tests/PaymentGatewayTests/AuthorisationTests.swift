import CardChannel
import BERTLV
import PaymentRules
import Foundation
@testable import PaymentGateway
import Testing
import Timing
import TestSupport

@Suite("Authorisation")
struct AuthorisationTests {
    @Test("an ordinary amount is approved with an authorisation code and a uniqueRef")
    func approve() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let r = try await g.authorize(Fixture.request(orderId: "order-1042", amount: 1000))
        #expect(r.status == .approved)
        #expect(r.statusCode == "00")
        #expect(r.authorisationCode?.count == 6)
        #expect(r.uniqueRef.count == 10)
        #expect(r.paymentId.count == 32)
        #expect(r.cardBrand == .visa)
        #expect(r.last4 == "0010")
        #expect(r.maskedPAN == "476173******0010")
        #expect(r.transactionCode == .approved)
        #expect(r.isReplay == false)
        #expect(r.cryptogram == .verified)
    }

    /// An order approved (10.00) or declined (amount ending 51) is decided once: the same orderId
    /// again, before or after a reopen of the ledger, gets the stored answer — the same payment,
    /// decision and authorisation code —, and there is one sale and one webhook.
    @Test("the same orderId twice makes one charge and returns the stored answer; a declined order replays as declined, it is not authorised again",
          arguments: [(1000, AuthorisationStatus.approved), (1051, .declined)])
    func idempotentOnOrderId(amount: Int, status: AuthorisationStatus) async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let orderId = "order-twice-\(amount)"
        let request = Fixture.request(orderId: orderId, amount: amount)
        let first = try await g.authorize(request)
        let second = try await g.authorize(request)
        #expect(first.status == status && second.status == status)
        #expect(!first.isReplay && second.isReplay)
        #expect(second.paymentId == first.paymentId)
        #expect(second.uniqueRef == first.uniqueRef)
        #expect(second.authorisationCode == first.authorisationCode)
        #expect(try g.ledger.saleCount(orderId: orderId) == 1)
        #expect(try g.webhooks(orderId: orderId).count == 1)
        // Also across a reopen of the ledger.
        let g2 = try Fixture.gateway(dir)
        let third = try await g2.authorize(request)
        #expect(third.isReplay && third.paymentId == first.paymentId && third.status == status)
        #expect(try g2.ledger.saleCount(orderId: orderId) == 1)
    }

    @Test("the same orderId with another amount, currency or card is a conflict and charges nothing",
          arguments: ["amount", "currency", "card"])
    func orderConflict(_ what: String) async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        _ = try await g.authorize(Fixture.request(orderId: "order-c", amount: 1000))
        var other: AuthorisationRequest
        switch what {
        case "amount": other = Fixture.request(orderId: "order-c", amount: 2000)
        case "currency":
            other = Fixture.request(orderId: "order-c", amount: 1000)
            other.currency = "USD"
            // Without 5F2A, so that the request is well-formed and only the currency differs.
            other.card.emvData = try BERTLV.parse(other.card.emvData).filter { $0.tag != .transactionCurrencyCode }.encoded
        default: other = Fixture.request(orderId: "order-c", amount: 1000, pan: Fixture.otherVisa)
        }
        let code = await gatewayErrorCode { () async throws(GatewayError) in try await g.authorize(other) }
        #expect(code == .orderConflict)
        #expect(try g.ledger.allPayments().count == 1)
    }

    @Test("concurrent authorisations of one orderId make exactly one charge")
    func concurrentSameOrder() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let request = Fixture.request(orderId: "order-race", amount: 1000)
        let ids = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<8 { group.addTask { try? await g.authorize(request).paymentId } }
            var out: [String?] = []
            for await id in group { out.append(id) }
            return out
        }
        #expect(Set(ids.compactMap { $0 }).count == 1)
        #expect(ids.allSatisfy { $0 != nil })
        #expect(try g.ledger.saleCount(orderId: "order-race") == 1)
    }

    @Test("two gateways on one directory (two processes) never charge an orderId twice")
    func twoConnections() async throws {
        let dir = TempDir()
        let a = try Fixture.gateway(dir)
        let b = try Fixture.gateway(dir)
        let request = Fixture.request(orderId: "order-two-procs", amount: 1000)
        async let x = a.authorize(request)
        async let y = b.authorize(request)
        let (rx, ry) = try await (x, y)
        #expect(rx.paymentId == ry.paymentId)
        #expect(rx.isReplay != ry.isReplay)
        #expect(try a.ledger.saleCount(orderId: "order-two-procs") == 1)
    }

    static let amountCases: [(ending: Int, status: AuthorisationStatus, code: String, list: TransactionCode)] = [
        (0, .approved, "00", .approved),
        (51, .declined, "51", .declined),
        (52, .declined, "54", .declined),
        (53, .declined, "41", .declined),
        (54, .declined, "05", .declined),
        (55, .declined, "43", .declined),
        (56, .declined, "01", .referral),
        (57, .declined, "96", .error),
        (93, .approved, "00", .approved),   // slow, answered within the timeout
    ]

    @Test("each decision trigger on the amount", arguments: amountCases)
    func amountTrigger(_ c: (ending: Int, status: AuthorisationStatus, code: String, list: TransactionCode)) async throws {
        let dir = TempDir()
        let clock = ManualClock()
        let g = try Fixture.gateway(dir, clock: clock)
        let amount = 2000 + c.ending
        let task = Task { try await g.authorize(Fixture.request(orderId: "o", amount: amount)) }
        if c.ending == 93 {
            await clock.waitForSleepers(1)
            clock.advance(by: GatewayFault.defaultSlowDelay)
        }
        let r = try await task.value
        #expect(r.status == c.status)
        #expect(r.statusCode == c.code)
        #expect(r.transactionCode == c.list)
        #expect((r.authorisationCode != nil) == (c.status == .approved))
        if let trigger = TestTriggers.trigger(forAmount: amount), let reason = trigger.decline {
            #expect(r.statusMessage == reason.statusMessage)
        }
    }

    @Test("each test PAN declines with its reason", arguments: TestTriggers.panTriggers)
    func panTrigger(_ trigger: TestTrigger) async throws {
        guard case .pan(let digits) = trigger.match else { return }
        let pan = try #require(PAN(digits))
        #expect(pan.isLuhnValid)
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let r = try await g.authorize(Fixture.request(orderId: "p", amount: 1000, pan: pan))
        #expect(r.status == .declined)
        #expect(r.statusCode == trigger.decline?.statusCode)
        #expect(r.cryptogram == .unverified)
    }

    @Test("a PAN that fails the Luhn check is declined 14")
    func luhnInvalid() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        let r = try await g.authorize(Fixture.request(orderId: "l", amount: 1000, pan: PAN("4111111111111112")!))
        #expect(r.status == .declined && r.statusCode == "14")
    }

    @Test("a card's offline decline (AAC) that comes online anyway is declined")
    func aacDeclined() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir, knownCards: [])
        let r = try await g.authorize(Fixture.request(orderId: "aac", amount: 1000,
                                                      emv: Fixture.emv(amount: 1000, cid: 0x00)))
        #expect(r.status == .declined && r.statusCode == "Z1")
    }

    @Test("the order id rule, ASCII (its fast path) and beyond: the same 1 to 128 characters, not only spaces, no white space but the space, no control or format character",
          arguments: [
              ("x", true), (String(repeating: "x", count: 128), true), (String(repeating: "x", count: 129), false),
              (" a ", true), ("~!", true), ("", false), (" ", false), ("a\tb", false), ("a\u{7F}b", false),
              (String(repeating: "é", count: 128), true), (String(repeating: "é", count: 129), false),
              ("\u{A0}", false), ("a\u{A0}b", false), ("\u{3000}", false), ("ordér 1", true), ("e\u{301}", true),
          ])
    func orderIdRule(_ orderId: String, _ valid: Bool) {
        #expect(OrderID.isValid(orderId) == valid, "\(orderId.unicodeScalars.map { String($0.value, radix: 16) })")
    }

    static let invalidRequests: [(String, @Sendable (inout AuthorisationRequest) -> Void)] = [
        ("empty orderId", { $0.orderId = "" }),
        ("control character in orderId", { $0.orderId = "a\nb" }),
        ("long orderId", { $0.orderId = String(repeating: "x", count: 129) }),
        // The SDK faces' rule, one for both (OrderID): a C1 control, a bidi override, a
        // zero-width space, nothing but spaces.
        ("C1 control in orderId", { $0.orderId = "a\u{85}b" }),
        ("bidi override in orderId", { $0.orderId = "order\u{202E}1" }),
        ("zero-width space in orderId", { $0.orderId = "order\u{200B}1" }),
        ("orderId of spaces only", { $0.orderId = "   " }),
        ("zero amount", { $0.amount = 0 }),
        ("negative amount", { $0.amount = -100 }),
        ("huge amount", { $0.amount = 1_000_000_000_000 }),
        ("lower-case currency", { $0.currency = "eur" }),
        ("numeric currency", { $0.currency = "978" }),
        ("callback not http", { $0.callbackUrl = "ftp://example.com/x" }),
        ("callback garbage", { $0.callbackUrl = "not a url" }),
        // Foundation's URL(string:) takes these; no HTTP client can send to them, so the
        // webhook could never be delivered (and a CR LF would split a log line).
        ("callback with CR LF", { $0.callbackUrl = "http://127.0.0.1:9/hook\r\nX-Injected: 1" }),
        ("callback with a space", { $0.callbackUrl = "http://127.0.0.1:9/ho ok" }),
        ("callback with a tab", { $0.callbackUrl = "http://127.0.0.1:9/ho\tok" }),
        ("callback with a NUL", { $0.callbackUrl = "http://127.0.0.1:9/hook\u{0}" }),
        ("callback with a C1 control", { $0.callbackUrl = "http://127.0.0.1:9/ho\u{85}ok" }),
        ("expiry month 13", { $0.card.expiry = "2813" }),
        ("expiry not digits", { $0.card.expiry = "28-1" }),
        ("PSN over 99", { $0.card.panSequenceNumber = 100 }),
        ("EMV not TLV", { $0.card.emvData = [0x9F, 0x26, 0x08, 0x01] }),
        ("EMV amount differs", { $0.amount = 999 }),
        ("EMV currency differs", { $0.currency = "USD" }),
        ("too much EMV data", { $0.card.emvData = [UInt8](repeating: 0, count: 5000) }),
    ]

    @Test("a malformed request is refused and records nothing", arguments: invalidRequests)
    func invalidRequest(_ c: (String, @Sendable (inout AuthorisationRequest) -> Void)) async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir)
        var request = Fixture.request(orderId: "bad", amount: 1000)
        c.1(&request)
        let code = await gatewayErrorCode { () async throws(GatewayError) in try await g.authorize(request) }
        #expect(code == .invalidRequest, "\(c.0)")
        #expect(try g.ledger.allPayments().isEmpty)
    }

    @Test("a blocked SDK version gets sdkUpgradeRequired from authorize and checkSDKVersion")
    func blockedSDK() async throws {
        let dir = TempDir()
        let g = try Fixture.gateway(dir, blocked: ["0.1.0"])
        var request = Fixture.request(orderId: "sdk", amount: 1000)
        request.sdkVersion = "0.1.0"
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.authorize(request) }
                == .sdkUpgradeRequired)
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.checkSDKVersion("0.1.0") }
                == .sdkUpgradeRequired)
        #expect(try g.ledger.allPayments().isEmpty)
        try await g.checkSDKVersion("1.0.0")
        try g.blockSDKVersion("1.0.0")
        #expect(await gatewayErrorCode { () async throws(GatewayError) in try await g.checkSDKVersion("1.0.0") }
                == .sdkUpgradeRequired)
        try g.unblockSDKVersion("1.0.0")
        try await g.checkSDKVersion("1.0.0")
    }

    @Test("the trigger table documents every amount ending once and only Luhn-valid test PANs")
    func triggerTable() {
        let endings = TestTriggers.amountTriggers.compactMap { t -> Int? in
            if case .amountEnding(let n) = t.match { return n }
            return nil
        }
        #expect(Set(endings).count == endings.count)
        #expect(EmbeddedGateway.triggers.count == TestTriggers.amountTriggers.count + TestTriggers.panTriggers.count)
        for t in TestTriggers.panTriggers {
            guard case .pan(let d) = t.match else { continue }
            #expect(Luhn.isValid(d))
        }
        #expect(TestTriggers.trigger(forAmount: 1092)?.fault == .lostAnswer)
        #expect(TestTriggers.trigger(forAmount: 1095)?.decline == .doNotHonour)
        #expect(TestTriggers.trigger(forAmount: 1000) == nil)
    }
}
