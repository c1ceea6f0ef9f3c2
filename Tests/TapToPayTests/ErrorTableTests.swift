import CardChannel
import Foundation
import PaymentGateway
import PaymentFlow
import TapToPay
import Testing
import TestSupport
import VirtualCard

// One test (or one table of cases) per row of the seed's error table
// (seeds/000_0842ee5390083222.txt, "Errors"), for the cause the seed names, through the public
// API. Wherever a typed failure is thrown, the ledger must hold no payment for the order.

@Suite("Seed error table: notSupported")
struct NotSupportedTests {
    @Test func prepareOnAnUnsupportedDevice() async throws {
        let h = try Harness()
        let tapToPay = TapToPay(configuration: h.configuration(device: DeviceEnvironment(isSupported: false)))
        #expect(!tapToPay.isSupported)
        await #expect(throws: TapToPayError.notSupported) { try await tapToPay.prepare(token: h.token()) }
        #expect(!tapToPay.isPrepared)
    }

    @Test func acceptPaymentOnAnUnsupportedDevice() async throws {
        let h = try Harness()
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = TapToPay(configuration: h.configuration(source: source, device: DeviceEnvironment(isSupported: false)))
        expectFailure(await pay(tapToPay, orderId: "ns-1"), .notSupported)
        #expect(source.calls.count == 0)
        try await h.expectNoPayment("ns-1")
    }
}

@Suite("Seed error table: locationDenied")
struct LocationDeniedTests {
    static let refusals: [(LocationAuthorization, LocationAuthorization)] = [
        (.denied, .denied),
        (.missingUsageDescription, .missingUsageDescription),
        // Not asked yet: the prompt is shown and the user refuses.
        (.notDetermined, .denied),
    ]

    @Test(arguments: refusals)
    func prepareWithoutLocationAccess(state: LocationAuthorization, prompt: LocationAuthorization) async throws {
        let h = try Harness()
        let location = SwitchableLocationProvider(state, prompt: prompt)
        let tapToPay = TapToPay(configuration: h.configuration(location: location))
        await #expect(throws: TapToPayError.locationDenied) { try await tapToPay.prepare(token: h.token()) }
        #expect(location.prompts.count == (state == .notDetermined ? 1 : 0))
        #expect(location.fixes.count == 0)
    }

    /// A location refusal in `prepare` keeps the (valid) token: the next `acceptPayment` reports
    /// the location again, not a missing token.
    @Test func aLocationRefusalInPrepareIsReportedAgainByAcceptPayment() async throws {
        let h = try Harness()
        let location = SwitchableLocationProvider(.denied)
        let tapToPay = TapToPay(configuration: h.configuration(location: location))
        await #expect(throws: TapToPayError.locationDenied) { try await tapToPay.prepare(token: h.token()) }
        expectFailure(await pay(tapToPay, orderId: "loc-again-1"), .locationDenied)
        try await h.expectNoPayment("loc-again-1")
    }

    @Test func theNotDeterminedPromptAllowedLetsPrepareSucceed() async throws {
        let h = try Harness()
        let location = SwitchableLocationProvider(.notDetermined, prompt: .authorized)
        let tapToPay = TapToPay(configuration: h.configuration(location: location))
        try await tapToPay.prepare(token: h.token())
        #expect(location.prompts.count == 1)
        #expect(tapToPay.isPrepared)
    }

    /// The user allowed location for `prepare`, then took it back in Settings: `acceptPayment`
    /// throws `locationDenied` (the seed lists it for both calls), and works again once allowed.
    @Test(arguments: [LocationAuthorization.denied, .missingUsageDescription])
    func acceptPaymentAfterAccessWasTakenBack(state: LocationAuthorization) async throws {
        let h = try Harness()
        let location = SwitchableLocationProvider(.authorized)
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = try await h.prepared(h.configuration(source: source, location: location))
        location.set(state)
        expectFailure(await pay(tapToPay, orderId: "loc-1"), .locationDenied)
        #expect(source.calls.count == 0)
        try await h.expectNoPayment("loc-1")

        location.set(.authorized)
        let result = try #require(await pay(tapToPay, orderId: "loc-2").result)
        #expect(result.status == .approved)
    }
}

@Suite("Seed error table: termsDeclined")
struct TermsDeclinedTests {
    /// Refused twice, then accepted: each `acceptPayment` shows the terms again until they are
    /// accepted, and never after.
    @Test func refusedTermsAreAskedAgainByTheNextPayment() async throws {
        let h = try Harness()
        let terms = CountingTermsProvider(false, false, true)
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = try await h.prepared(h.configuration(source: source, terms: terms))

        expectFailure(await pay(tapToPay, orderId: "terms-1"), .termsDeclined)
        #expect(terms.calls.count == 1)
        expectFailure(await pay(tapToPay, orderId: "terms-2"), .termsDeclined)
        #expect(terms.calls.count == 2)
        #expect(source.calls.count == 0)
        try await h.expectNoPayment("terms-1")
        try await h.expectNoPayment("terms-2")

        #expect(try #require(await pay(tapToPay, orderId: "terms-3").result).status == .approved)
        #expect(terms.calls.count == 3)
        #expect(try #require(await pay(tapToPay, orderId: "terms-4").result).status == .approved)
        #expect(terms.calls.count == 3, "accepted terms must not be shown again")
    }

    /// The seed: "or the link of the account failed": the terms were accepted but recording the
    /// acceptance with the account failed. The next payment shows the terms again.
    @Test func aFailedAccountLinkIsTermsDeclined() async throws {
        let h = try Harness()
        let terms = CountingTermsProvider(true)
        let gateway = TermsLinkFailingGateway(inner: h.gateway)
        let tapToPay = try await h.prepared(h.configuration(gateway: gateway, terms: terms))
        expectFailure(await pay(tapToPay, orderId: "link-1"), .termsDeclined)
        expectFailure(await pay(tapToPay, orderId: "link-2"), .termsDeclined)
        #expect(terms.calls.count == 2)
        try await h.expectNoPayment("link-1")
        try await h.expectNoPayment("link-2")
    }
}

@Suite("Seed error table: invalidArgument")
struct InvalidArgumentTests {
    static let cases: [(amount: Int, orderId: String)] = [
        (0, "order-0"), (-1, "order-neg"), (Int.min, "order-min"), (1000, ""),
        // EMV's amount (9F02) has 12 digits: more is refused, never sent to the kernel.
        (1_000_000_000_000, "order-13-digits"), (Int.max, "order-max"),
        // The gateway's orderId rule, checked before the card: not after the submission point.
        (1000, "line1\nline2"), (1000, "tab\there"), (1000, "em\u{2003}space"), (1000, String(repeating: "y", count: 129)),
        // Only white space: as good as empty.
        (1000, "   "),
    ]

    @Test(arguments: cases)
    func badAmountOrOrderId(amount: Int, orderId: String) async throws {
        let h = try Harness()
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = try await h.prepared(h.configuration(source: source))
        expectFailure(await pay(tapToPay, amount: amount, orderId: orderId), .invalidArgument)
        #expect(source.calls.count == 0)
        #expect(try h.gateway.ledger.allPayments().isEmpty)
        #expect(try h.store.all().isEmpty)
        // Corrected, it goes through.
        #expect(try #require(await pay(tapToPay, amount: 1000, orderId: "order-ok").result).status == .approved)
    }
}

@Suite("Seed error table: invalidArgument for the callback URL")
struct InvalidCallbackUrlTests {
    @Test(arguments: ["", "not a url", "ftp://merchant.test/hook", "https://", "mailto:a@b.test",
                      "https://merchant.test/hook\r\nX-Injected: 1", "https://merchant.test/ho ok",
                      "https://merchant.test/ho\tok", "https://merchant.test/hook\u{0}"])
    func badCallbackUrl(url: String) async throws {
        let h = try Harness()
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = try await h.prepared(h.configuration(source: source))
        expectFailure(await pay(tapToPay, orderId: "cb-bad", callbackUrl: url), .invalidArgument)
        #expect(source.calls.count == 0)
        #expect(try h.store.all().isEmpty)
        let ok = await pay(tapToPay, orderId: "cb-ok", callbackUrl: "https://merchant.test/hooks")
        #expect(try #require(ok.result).status == .approved)
    }
}

@Suite("Seed error table: tokenExpired")
struct TokenExpiredTests {
    @Test func prepareWithAnExpiredToken() async throws {
        let h = try Harness()
        let tapToPay = TapToPay(configuration: h.configuration())
        await #expect(throws: TapToPayError.tokenExpired) { try await tapToPay.prepare(token: h.token(ttl: .zero)) }
        #expect(!tapToPay.isPrepared)
        // The FAQ: after tokenExpired the SDK keeps no token.
        expectFailure(await pay(tapToPay, orderId: "exp-1"), .notPrepared)
        try await h.expectNoPayment("exp-1")
    }

    /// A token expired during `prepare` replaces a valid one stored before: nothing is kept.
    @Test func anExpiredTokenDropsTheStoredOne() async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration())
        await #expect(throws: TapToPayError.tokenExpired) { try await tapToPay.prepare(token: h.token(ttl: .zero)) }
        expectFailure(await pay(tapToPay, orderId: "exp-2"), .notPrepared)
        try await h.expectNoPayment("exp-2")
    }

    /// The stored token expires between `prepare` and `acceptPayment`: `tokenExpired`, no card is
    /// read; "get a new token, call prepare, then try again" works.
    @Test func acceptPaymentAfterTheStoredTokenExpired() async throws {
        let h = try Harness()
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = TapToPay(configuration: h.configuration(source: source))
        try await tapToPay.prepare(token: h.token(ttl: .seconds(60)))
        h.wall.advance(by: 61)
        expectFailure(await pay(tapToPay, orderId: "exp-3"), .tokenExpired)
        #expect(source.calls.count == 0)
        try await h.expectNoPayment("exp-3")
        expectFailure(await pay(tapToPay, orderId: "exp-3"), .notPrepared)

        try await tapToPay.prepare(token: h.token())
        #expect(try #require(await pay(tapToPay, orderId: "exp-3").result).status == .approved)
    }
}

@Suite("Seed error table: invalidToken and notPrepared")
struct InvalidTokenTests {
    enum BadToken: String, CaseIterable, Sendable {
        case garbage, empty, tampered, otherGateway, wholeJSONResponse, truncatedSignature
    }

    static func make(_ kind: BadToken, _ h: Harness) throws -> String {
        let good = h.token()
        switch kind {
        case .garbage: return "not a token at all \u{1F4B3}"
        case .empty: return ""
        case .tampered:
            // Change one character of the signed part: the signature no longer matches.
            var chars = Array(good)
            let i = chars.firstIndex(of: ".")! - 3
            chars[i] = chars[i] == "A" ? "B" : "A"
            return String(chars)
        case .otherGateway:
            return try Harness().token()
        case .wholeJSONResponse:
            // The seed: "Send only the token field".
            return #"{"token":"\#(good)","expiresAt":"2027-01-01T00:00:00Z"}"#
        case .truncatedSignature:
            return String(good.dropLast(5))
        }
    }

    @Test(arguments: BadToken.allCases)
    func prepareWithAnUnreadableToken(kind: BadToken) async throws {
        let h = try Harness()
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = TapToPay(configuration: h.configuration(source: source))
        let token = try Self.make(kind, h)
        await #expect(throws: TapToPayError.invalidToken) { try await tapToPay.prepare(token: token) }
        #expect(!tapToPay.isPrepared)
        // "Until then, acceptPayment throws notPrepared."
        expectFailure(await pay(tapToPay, orderId: "tok-1"), .notPrepared)
        #expect(source.calls.count == 0)
        try await h.expectNoPayment("tok-1")
    }

    /// An invalid token drops a valid one stored before (the FAQ: the SDK does not keep a token).
    @Test func anInvalidTokenDropsTheStoredOne() async throws {
        let h = try Harness()
        let tapToPay = try await h.prepared(h.configuration())
        await #expect(throws: TapToPayError.invalidToken) { try await tapToPay.prepare(token: "tpm_test_garbage.x") }
        expectFailure(await pay(tapToPay, orderId: "tok-2"), .notPrepared)
        try await h.expectNoPayment("tok-2")
        try await tapToPay.prepare(token: h.token())
        #expect(try #require(await pay(tapToPay, orderId: "tok-2").result).status == .approved)
    }

    @Test func acceptPaymentWithoutPrepare() async throws {
        let h = try Harness()
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = TapToPay(configuration: h.configuration(source: source))
        expectFailure(await pay(tapToPay, orderId: "np-1"), .notPrepared)
        #expect(source.calls.count == 0)
        try await h.expectNoPayment("np-1")
    }
}

@Suite("Seed error table: busy")
struct BusyTests {
    /// A second `acceptPayment` while the first is frozen after the card read: `busy`, and the
    /// second order never reaches the card or the gateway. The first goes on undisturbed.
    @Test func aSecondPaymentWhileOneIsInProgress() async throws {
        let h = try Harness()
        let reached = OneShotEvent()
        let source = CountingSource(inner: virtualCard("mastercard-mchip"))
        let tapToPay = try await h.prepared(h.configuration(source: source, checkpoint: { point in
            if point == .cardRead {
                reached.fire()
                await suspendUntilCancelled()
            }
        }))
        let first = startPayment(tapToPay, orderId: "busy-1")
        await reached.wait()
        expectFailure(await pay(tapToPay, orderId: "busy-2"), .busy)
        expectFailure(await pay(tapToPay, orderId: "busy-1"), .busy)
        #expect(source.calls.count == 1)
        try await h.expectNoPayment("busy-2")

        // A cancelled task once the card was read: unclear (seed 000), nothing charged.
        first.cancel()
        try await h.expectUnclearNotSubmitted(tapToPay, await first.value, orderId: "busy-1")
    }

    /// While the first waits for a card: `busy`; once it ended, the next payment runs.
    @Test func busyWhileWaitingForACardThenFreeAgain() async throws {
        let h = try Harness()
        let (tapToPay, first) = try await h.paymentWaiting(.forACard, orderId: "busy-3")
        expectFailure(await pay(tapToPay, orderId: "busy-4"), .busy)
        tapToPay.cancel()
        expectFailure(await first.value, .cancelled)
        // Not busy any more (it fails for lack of a card, not with busy).
        let second = startPayment(tapToPay, orderId: "busy-4")
        await h.flowClock.waitForSleepers(1)
        h.flowClock.advance(by: .seconds(30))
        expectFailure(await second.value, .paymentFailed(code: .readerNotReady))
        try await h.expectNoPayment("busy-3")
        try await h.expectNoPayment("busy-4")
    }
}

/// `cancelled` is the user's cancel on the payment sheet (``TapToPay/cancel()``) before a card was
/// presented. A cancelled task, or the user's cancel once a card is being read, is `outcomeUnknown`
/// (``UnclearBeforeSubmissionTests``).
@Suite("Seed error table: cancelled")
struct CancelledTests {
    /// The user's cancel while the reader waits for a card, or while the terms are shown.
    @Test(arguments: Harness.WaitBeforeTheCard.allCases)
    func explicitCancelBeforeACard(_ point: Harness.WaitBeforeTheCard) async throws {
        let h = try Harness()
        let (tapToPay, task) = try await h.paymentWaiting(point, orderId: "cx-\(point)")
        tapToPay.cancel()
        expectFailure(await task.value, .cancelled)
        try await h.expectNoPayment("cx-\(point)")
    }

    /// The user cancels before a card was presented — before the location fix or while the reader
    /// waits — then "Can I try again after cancelled? Yes.": the same order is paid once.
    @Test func tryAgainAfterCancelled() async throws {
        let h = try Harness()
        let (tapToPay, task) = try await h.paymentWaiting(.forACard, orderId: "cx-3")
        tapToPay.cancel()
        expectFailure(await task.value, .cancelled)
        try await h.expectNoPayment("cx-3")
        let again = TapToPay(configuration: h.configuration(source: virtualCard("mastercard-mchip")))
        try await again.prepare(token: h.token())
        #expect(try #require(await pay(again, orderId: "cx-3").result).status == .approved)
        #expect(try await h.charges("cx-3").count == 1)
    }
}

@Suite("Seed error table: sdkUpgradeRequired")
struct SDKUpgradeRequiredTests {
    @Test func prepareWithABlockedSDK() async throws {
        let h = try Harness()
        try h.gateway.blockSDKVersion(TapToPay.sdkVersion)
        let tapToPay = TapToPay(configuration: h.configuration())
        await #expect(throws: TapToPayError.sdkUpgradeRequired) { try await tapToPay.prepare(token: h.token()) }
        // Unprepared, acceptPayment still says what is wrong: the SDK, not the token.
        expectFailure(await pay(tapToPay, orderId: "sdk-1"), .sdkUpgradeRequired)
        try await h.expectNoPayment("sdk-1")
    }

    /// Blocked after `prepare` (by another process on the same ledger): `acceptPayment` throws it too.
    @Test func acceptPaymentAfterTheSDKWasBlocked() async throws {
        let h = try Harness()
        let source = CountingSource(inner: virtualCard("visa-qvsdc"))
        let tapToPay = try await h.prepared(h.configuration(source: source))
        let other = try EmbeddedGateway(dataDirectory: h.directory, clock: h.gatewayClock)
        try other.blockSDKVersion(TapToPay.sdkVersion)
        expectFailure(await pay(tapToPay, orderId: "sdk-2"), .sdkUpgradeRequired)
        #expect(source.calls.count == 0)
        try await h.expectNoPayment("sdk-2")
    }
}

/// A gateway that records nothing when the account's acceptance of the terms is sent (the link
/// of the account fails); everything else goes to the embedded gateway.
struct TermsLinkFailingGateway: ForwardingGateway {
    let inner: any Gateway

    func setTermsAccepted(_ accepted: Bool, accountId: String, options: GatewayRequestOptions) async throws(GatewayError) {
        throw GatewayError(.serverError, "the account link failed")
    }
}
