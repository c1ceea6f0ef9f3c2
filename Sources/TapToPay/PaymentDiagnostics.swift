public import PaymentGateway
import PaymentFlow
import Synchronization

/// What the emulator knows about one `acceptPayment` that the SDK's answer cannot say.
///
/// The error `acceptPayment` throws is seed `000`'s, exactly: a card read error, a PIN entry
/// error, a lost reader session or a cancelled task is `outcomeUnknown(orderId:)` whether or not
/// the request had left, because the SDK cannot tell. The emulator can, and says it here —
/// beside the error, never inside it — so that an integrator's test can check that its recovery
/// (webhook, charges query, support) reached the truth:
///
/// ```swift
/// do {
///     _ = try await tapToPay.acceptPayment(amount: 1250, orderId: "order-1042")
/// } catch .outcomeUnknown(let orderId) {
///     let recovered = try await myRecovery(orderId)          // the app's own process
///     let attempt = tapToPay.diagnostics(for: orderId)!
///     #expect(recovered.charged == (try await tapToPay.groundTruth(of: attempt)).charged)
/// }
/// ```
public struct PaymentDiagnostics: Sendable, Hashable {
    /// How far the payment got before it ended.
    public enum Stage: String, Sendable, Hashable, CaseIterable, Codable {
        /// Before a card was asked for: arguments, SDK version, token, location, terms.
        case beforeCard
        /// The reader session was waiting for a card (none was presented yet).
        case waitingForCard
        /// A card was presented: it was being read, or its PIN entered. The authorisation had
        /// not started leaving.
        case reading
        /// The authorisation request had started leaving (the submission point was passed).
        case submitted
    }

    /// Who stopped a payment that was cancelled.
    public enum Cancellation: String, Sendable, Hashable, Codable {
        /// ``TapToPay/cancel()``: the user's cancel on the payment sheet (the CLI's Ctrl-C).
        case user
        /// The Swift task that called `acceptPayment` was cancelled.
        case task
    }

    public var orderId: String
    /// Minor units, as asked.
    public var amount: Int
    public var currency: String
    /// The result `acceptPayment` returned (nil when it threw).
    public var result: PaymentResult?
    /// The error it threw (nil when it returned a result).
    public var error: TapToPayError?
    public var stage: Stage
    /// Set when the payment was cancelled (by the user or through its task).
    public var cancellation: Cancellation?
    /// What happened under the error (the card did not answer, the reader was removed, the
    /// gateway's connection dropped…); nil when there is nothing more to say. Never holds a PAN.
    public var cause: String?
    /// The card, masked (first 6 and last 4), once it was read far enough to know it.
    public var maskedPAN: String?
    public var cardBrand: String?
    /// The device holds a pending record of this attempt for recovery (`resolveUnclearOutcomes`,
    /// `tapemu charges --pending`): every `outcomeUnknown` leaves one, also when the request
    /// never left.
    public var recordKept: Bool
    /// Why the record of an unclear attempt could not be written (a full or read-only disk);
    /// recovery then does not see this attempt.
    public var recordError: String?

    /// Whether the authorisation request started leaving for the gateway.
    public var submitted: Bool { stage == .submitted }

    /// The card's last four digits, when known.
    public var last4: String? { maskedPAN.map { String($0.suffix(4)) } }
}

/// The truth about one attempt, as the emulator knows it (`tapemu pay --json`'s `groundTruth`).
public struct GroundTruth: Sendable, Hashable, Codable {
    /// The authorisation request started leaving for the gateway.
    public var submitted: Bool
    /// The gateway's ledger holds an approved sale of this attempt — this order id, amount,
    /// currency and card (and the answer's payment, when one came) — captured and not reversed.
    /// Always false when nothing was submitted.
    public var charged: Bool

    public init(submitted: Bool, charged: Bool) {
        self.submitted = submitted
        self.charged = charged
    }
}

/// The diagnostics of the last attempts of one ``TapToPay`` instance, by order id.
final class DiagnosticsLog: Sendable {
    /// How many orders are remembered (the oldest is forgotten first).
    static let capacity = 256
    private struct State {
        var byOrder: [String: PaymentDiagnostics] = [:]
        var order: [String] = []
        var last: PaymentDiagnostics?
    }
    private let state = Mutex(State())

    func record(_ d: PaymentDiagnostics) {
        state.withLock { s in
            if s.byOrder.updateValue(d, forKey: d.orderId) != nil {
                s.order.removeAll { $0 == d.orderId }
            }
            s.order.append(d.orderId)
            if s.order.count > Self.capacity {
                s.byOrder.removeValue(forKey: s.order.removeFirst())
            }
            s.last = d
        }
    }

    var last: PaymentDiagnostics? { state.withLock { $0.last } }
    func forOrder(_ orderId: String) -> PaymentDiagnostics? { state.withLock { $0.byOrder[orderId] } }
}

/// What one attempt has got to while it runs (the face fills it in; the diagnostics are made
/// from it when the attempt ends).
final class AttemptTracker: Sendable {
    struct State {
        var stage = PaymentDiagnostics.Stage.beforeCard
        var cause: String?
        var card: CardSummary?
    }
    let state = Mutex(State())

    func update(_ body: (inout State) -> Void) { state.withLock { body(&$0) } }
    var snapshot: State { state.withLock { $0 } }
}

extension TapToPay {
    /// The diagnostics of the last `acceptPayment` of this instance that ran (one refused as
    /// `busy` does not replace them), or nil before the first.
    public var lastAttempt: PaymentDiagnostics? { diagnosticsLog.last }

    /// The diagnostics of the last attempt of `orderId` on this instance (the last 256
    /// orders are kept), or nil.
    public func diagnostics(for orderId: String) -> PaymentDiagnostics? { diagnosticsLog.forOrder(orderId) }

    /// Whether `attempt` was submitted and whether the ledger holds its charge, asked now: the
    /// emulator's privileged look at its own gateway, not the SDK's. An attempt never submitted is
    /// `{submitted: false, charged: false}` without asking; otherwise the gateway's sales of the
    /// order id are read (no fault applied) and matched to the attempt (amount, currency, card;
    /// the answer's payment when one came). Throws the gateway's error when it cannot be read (a
    /// served gateway that does not answer).
    public func groundTruth(of attempt: PaymentDiagnostics) async throws(GatewayError) -> GroundTruth {
        guard attempt.submitted else { return GroundTruth(submitted: false, charged: false) }
        let options = GatewayRequestOptions(timeout: configuration.timeouts.gatewayRequest, fault: GatewayFault.none)
        let sales = try await configuration.gateway.charges(orderId: attempt.orderId, options: options)
            .filter { $0.kind == .sale }
        let charged = sales.contains { sale in
            // An authorisation not captured (MONEI AUTH) holds the funds; it charges nothing.
            guard sale.status == .approved, !sale.reversed, sale.captured, sale.amount == attempt.amount,
                  sale.currency.uppercased() == attempt.currency.uppercased() else { return false }
            if let paymentId = attempt.result?.paymentId, paymentId != sale.paymentId { return false }
            if let last4 = attempt.last4, !sale.last4.hasSuffix(last4) { return false }
            return true
        }
        return GroundTruth(submitted: true, charged: charged)
    }
}
