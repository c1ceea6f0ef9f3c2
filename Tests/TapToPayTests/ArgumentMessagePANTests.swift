import Foundation
import Testing
import TestSupport
import CoreAPI

/// DESIGN: "A full PAN, track 2 or PIN never reaches a log … or an error message." A card number
/// typed or pasted into the amount (or the callback URL) is refused before the card, and the
/// refusal says which field is wrong — without echoing the card number (found by the review:
/// `tapemu pay --amount 4761739001010010` printed it on stderr and in the JSON `reason`, and
/// `tapemu sale` in onError's description).
@Suite("Argument refusals never echo a card number")
struct ArgumentMessagePANTests {
    /// A Luhn-valid 16-digit number: visa-qvsdc's PAN.
    static let pan = 4_761_739_001_010_010
    static let masked = "476173******0010"

    @Test func theMONEIFaceEventMasksAnAmountThatIsACardNumber() async throws {
        let h = try Harness()
        let reasons = Recorder<String>()
        let tapToPay = try await h.prepared(h.configuration(onEvent: { event in
            if case .failed(let reason) = event { reasons.record(reason) }
        }))
        expectFailure(await pay(tapToPay, amount: Self.pan, orderId: "pan-amount"), .invalidArgument)
        let reason = try #require(reasons.calls.first)
        #expect(!reason.contains(String(Self.pan)), "\(reason)")
        #expect(reason.contains(Self.masked) && reason.contains("amount"), "\(reason)")
    }

    @Test func theMONEIFaceEventMasksACardNumberInTheCallbackUrl() async throws {
        let h = try Harness()
        let reasons = Recorder<String>()
        let tapToPay = try await h.prepared(h.configuration(onEvent: { event in
            if case .failed(let reason) = event { reasons.record(reason) }
        }))
        expectFailure(await pay(tapToPay, orderId: "pan-url", callbackUrl: "https://m.test/\(Self.pan) x"), .invalidArgument)
        let reason = try #require(reasons.calls.first)
        #expect(!reason.contains(String(Self.pan)), "\(reason)")
        #expect(reason.contains("callbackUrl"), "\(reason)")
    }

    @Test func theCoreAPIOnErrorMasksAnAmountThatIsACardNumber() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        let outcome = await rig.core.processSale(CoreSale(amount: Self.pan, orderId: coreOrderId("pan-amount")))
        guard case .error(.invalidParameters, let description) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(!description.contains(String(Self.pan)), "\(description)")
        #expect(description.contains(Self.masked), "\(description)")
        #expect(rig.sales.events.count == 1)
    }
}
