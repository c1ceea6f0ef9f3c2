import PaymentRules
package import CardChannel
package import EMVKernel
public import Foundation
public import DeviceStore
public import PaymentGateway
import Synchronization
import Timing

/// What one sale needs, whichever SDK face asked for it.
package struct SaleRequest: Sendable {
    package var orderId: String
    package var amount: Int
    package var currency: String
    package var callbackUrl: String?
    package var accountId: String?
    package var origin: PendingPayment.Origin
    /// The CoreAPI `CoreSale` dictionary to keep with the pending record.
    package var saleDictionary: [String: String]

    package init(orderId: String, amount: Int, currency: String, callbackUrl: String?, accountId: String?,
                 origin: PendingPayment.Origin, saleDictionary: [String: String] = [:]) {
        self.orderId = orderId
        self.amount = amount
        self.currency = currency
        self.callbackUrl = callbackUrl
        self.accountId = accountId
        self.origin = origin
        self.saleDictionary = saleDictionary
    }
}

/// How a sale failed. The submission point splits the cases: before it no payment can exist;
/// after it the card may be charged.
package enum SaleFailure: Error, Sendable {
    package enum Before: Sendable {
        /// The task was cancelled (or the user cancelled) before anything was sent.
        case cancelled
        /// The card declined offline (AAC).
        case cardDeclined
        /// A cardholder verification was required that cannot be done.
        case cvmFailed
        /// No card in time, or the reader or card failed before the card was read.
        case reader(CardChannelError)
        /// The card broke the protocol.
        case kernel(KernelError)
        case pinCancelled
        case pinTimeout
        case pinFailed
        /// The pending record could not be written, so nothing was sent.
        case storage(DeviceStoreError)
        /// The gateway refused the request before recording anything (invalid request, order
        /// conflict, blocked SDK version).
        case gateway(GatewayError)
    }
    package enum After: Sendable {
        /// The gateway did not answer clearly (timeout, lost connection, server error).
        case gateway(GatewayError)
        /// The gateway answered with a refusal (an order conflict, an invalid request, its own
        /// ledger failing): the request reached it, and it recorded nothing for it. The MONEI face
        /// reports it unclear as any reply that is not a clear approval or decline (seed 000); the
        /// CoreAPI face as a transaction error (seeds 002/003: a communication error is a request
        /// that did not reach the gateway).
        case refused(GatewayError)
        /// The card or reader failed while the kernel went on reading after early submission.
        case read(KernelError)
        /// The task was cancelled while the answer was awaited.
        case cancelled
        /// The gateway answered, but the answer could not be stored in the attempt's record (a
        /// full or read-only disk): the record stays pending without it, and a recovery will look
        /// the order up — the CoreAPI one reversing an authorised sale it finds. Handed over, the
        /// answer could be contradicted by that recovery (a sale shown approved, then reversed),
        /// so the outcome is unclear, as the record says.
        case answerNotKept(DeviceStoreError)
    }
    case beforeSubmission(Before)
    case afterSubmission(orderId: String, After)
}

/// What a successful sale returns.
package struct SaleOutcome: Sendable {
    package var response: AuthorisationResponse
    package var read: CardRead
    /// The lease of the attempt's record, which holds the answer: the face completes it once the
    /// result is handed over (nil when the record could not be kept; then nothing is left to do).
    package var lease: PendingLease?
}

extension AuthorisationResponse {
    /// The answer's message as both faces give it to the app. The stored answer of an order whose
    /// sale was approved and then reversed since (code C; a sale run again after the seeds'
    /// recovery reversed it) comes back approved with the approval's text: it charges nothing,
    /// and a new payment needs a new order id — so that is what it says.
    package var messageForTheApp: String {
        guard status == .approved, transactionCode == .cancelled else { return statusMessage }
        return "The payment of this order was approved, then reversed: nothing is charged. Start a new payment with a new order ID."
    }
}

extension PendingPayment.Answer {
    /// The gateway's answer as the device's record keeps it (the store itself knows no gateway).
    public init(_ r: AuthorisationResponse, at date: Date) {
        self.init(paymentId: r.paymentId, status: r.status, statusCode: r.statusCode, statusMessage: r.statusMessage,
                  transactionCode: r.transactionCode.rawValue, uniqueRef: r.uniqueRef, amount: r.amount,
                  currency: r.currency, cardBrand: r.cardBrand.rawValue, last4: r.last4, maskedPAN: r.maskedPAN,
                  answeredAt: date)
    }
}

/// The card a sale read: what a face may show of it (never the full PAN).
package struct CardSummary: Sendable, Hashable {
    package var maskedPAN: String
    package var brand: String
    /// The last four digits (the masked PAN keeps them).
    package var last4: String { String(maskedPAN.suffix(4)) }
}

/// What one sale did, whichever way it ended: the faces learn the card from here, not from the
/// progress events (which are for display only).
package struct SaleAttempt: Sendable {
    /// A card was presented and the kernel began reading it (the reader works).
    package var cardPresented: Bool
    /// The card, once read whole or sent with an early authorisation (also when the sale failed
    /// afterwards): the card of this attempt's request.
    package var card: CardSummary?
    /// The authorisation request started leaving (the submission point was passed).
    package var submitted: Bool
    /// The id of the attempt's record on the device, once one was written for a request.
    package var attemptId: String?
    package var result: Result<SaleOutcome, SaleFailure>
}

/// The engine under both SDK faces: wait for a card, read it with the kernel, write the pending
/// record durably, send the authorisation (early when the card allows), and tell which side of
/// the submission point any failure fell on.
package struct PaymentEngine: Sendable {
    package let configuration: PaymentConfiguration

    package init(configuration: PaymentConfiguration) {
        self.configuration = configuration
    }

    /// Runs one sale; its result, and the card it read.
    package func sale(_ sale: SaleRequest) async -> SaleAttempt {
        let progress = Progress()
        let result: Result<SaleOutcome, SaleFailure>
        do throws(SaleFailure) {
            result = .success(try await run(sale, progress: progress))
        } catch {
            result = .failure(error)
        }
        let (presented, card, submitted, attemptId) = progress.state.withLock { ($0.presented, $0.card, $0.submitted, $0.attemptId) }
        return SaleAttempt(cardPresented: presented, card: card, submitted: submitted, attemptId: attemptId, result: result)
    }

    /// What a sale has got to, for ``SaleAttempt``.
    private final class Progress: Sendable {
        let state = Mutex<(presented: Bool, card: CardSummary?, submitted: Bool, attemptId: String?)>((false, nil, false, nil))
    }

    /// Writes the record of an attempt that ends unclear although its request never left (the
    /// MONEI face's `outcomeUnknown` for a card read error, a PIN entry error, a lost reader
    /// session or a cancellation before the submission point): the app is told what it would be
    /// told after the submission point, so the device keeps what it keeps then — a `pending`
    /// record without an answer, for the same recovery (the charges query finds nothing; seed 000's
    /// step 4, then `pending close`). Never sent, it cannot be charged; nothing here sends.
    /// Durable when it returns.
    package func keepUnsentAttempt(_ sale: SaleRequest, card: CardSummary?) async throws(DeviceStoreError) -> PendingPayment {
        let config = configuration
        let pending = PendingPayment(orderId: sale.orderId, origin: sale.origin, amount: sale.amount, currency: sale.currency,
                                     maskedPAN: card?.maskedPAN, last4: card?.last4, cardBrand: card?.brand,
                                     callbackUrl: sale.callbackUrl, createdAt: config.now(), sale: sale.saleDictionary)
        let store = config.pendingStore
        try await withBlockingCall { () throws(DeviceStoreError) in try store.save(pending) }
        return pending
    }

    private func run(_ sale: SaleRequest, progress: Progress) async throws(SaleFailure) -> SaleOutcome {
        let config = configuration
        config.onEvent(.waitingForCard(source: config.cardSource.name))
        let channel: any CardChannel
        do {
            // The source applies the presentation timeout; the flow keeps its own deadline too
            // (with a little grace), so a source that overstays cannot hang the payment.
            let source = config.cardSource
            let timeout = config.timeouts.cardPresentation
            let clock = config.clock
            channel = try await withDeadline(
                clock.now + timeout + .seconds(1), on: clock,
                onTimeout: { CardChannelError(.noCard, "no card was presented within \(timeout)") }
            ) { () async throws(CardChannelError) -> CardChannelBox in
                CardChannelBox(channel: try await source.waitForCard(timeout: timeout, clock: clock))
            }.channel
        } catch {
            throw .beforeSubmission(error.code == .cancelled || Task.isCancelled ? .cancelled : .reader(error))
        }
        if Task.isCancelled { throw .beforeSubmission(.cancelled) }
        progress.state.withLock { $0.presented = true }
        config.onEvent(.reading)

        let submission = Submission()
        // Whatever way the sale ends, a lease not handed to the caller is let go: the record
        // stays for recovery (an unclear outcome) — or was already completed or discarded.
        defer {
            progress.state.withLock { $0.submitted = submission.started; $0.attemptId = submission.attemptId }
            submission.takeLease()?.release()
        }
        let reader = EMVReader(configuration: config.terminal)
        let read: CardRead
        do throws(KernelError) {
            read = try await reader.read(
                channel: channel, transaction: Transaction(amount: UInt64(sale.amount)),
                apduTimeout: config.timeouts.apdu, clock: config.clock,
                onOnlineDataReady: { partial in
                    guard config.submitsEarly, partial.cvm != .onlinePIN, partial.cvm != .failed,
                          let card = partial.card, let cryptogram = partial.cryptogram,
                          let application = partial.application, cryptogram.kind == .arqc else { return }
                    // The card this request carries, should the read fail after it left.
                    progress.state.withLock {
                        $0.card = CardSummary(maskedPAN: card.pan.masked, brand: application.brand.rawValue)
                    }
                    await self.submit(self.request(sale, pan: card.pan, expiry: (card.expiry.year, card.expiry.month),
                                                   panSequenceNumber: card.panSequenceNumber, brand: application.brand.rawValue,
                                                   emvData: cryptogram.onlineDataBytes),
                                      sale: sale, early: true, into: submission)
                })
        } catch {
            if submission.started {
                // The authorisation may be on its way: whatever the card did, the outcome is unclear.
                _ = await submission.answer()
                // A read stopped by the caller's cancellation is the cancellation, not a card fault.
                let cancelled = Task.isCancelled || error.channelError?.code == .cancelled
                throw .afterSubmission(orderId: sale.orderId, cancelled ? .cancelled : .read(error))
            }
            if let channelError = error.channelError {
                throw .beforeSubmission(channelError.code == .cancelled || Task.isCancelled ? .cancelled : .reader(channelError))
            }
            if Task.isCancelled { throw .beforeSubmission(.cancelled) }
            throw .beforeSubmission(error.code == .cardDeclinedOffline ? .cardDeclined : .kernel(error))
        }
        progress.state.withLock { $0.card = CardSummary(maskedPAN: read.card.pan.masked, brand: read.application.brand.rawValue) }
        await config.checkpoint(.cardRead)
        config.onEvent(.cardRead(brand: read.application.brand.rawValue, maskedPAN: read.card.pan.masked,
                                 cvm: read.cvm.rawValue))

        if !submission.started {
            switch read.cryptogram.kind {
            case .aac: throw .beforeSubmission(.cardDeclined)
            case .arqc, .tc: break
            }
            if read.cvm == .failed { throw .beforeSubmission(.cvmFailed) }
            if read.cvm == .onlinePIN {
                try await collectPIN(amount: sale.amount, maskedPAN: read.card.pan.masked)
            }
            if Task.isCancelled { throw .beforeSubmission(.cancelled) }
            await submit(request(sale, pan: read.card.pan, expiry: (read.card.expiry.year, read.card.expiry.month),
                                 panSequenceNumber: read.card.panSequenceNumber, brand: read.application.brand.rawValue,
                                 emvData: read.cryptogram.onlineDataBytes),
                         sale: sale, early: false, into: submission)
            if let failure = submission.failureBeforeSubmission { throw .beforeSubmission(failure) }
        }

        // After the submission point: a clear answer, or an unclear outcome.
        switch await submission.answer() {
        case .success(let response)?:
            // The record keeps the answer until the face has handed the result over, so a crash
            // in between leaves the answer for recovery. An answer it cannot keep is not handed
            // over: the record stays pending, and what recovery finds is the outcome.
            let lease = submission.takeLease()
            do {
                try lease?.recordAnswer(PendingPayment.Answer(response, at: config.now()))
            } catch {
                lease?.release()
                config.onEvent(.recordKept(reason: "the gateway's answer could not be stored in the device's record (\(error)); the outcome is unclear: the record stays pending and recovery will look the order up"))
                throw .afterSubmission(orderId: sale.orderId, .answerNotKept(error))
            }
            await config.checkpoint(.answered)
            config.onEvent(.answered(status: response.status.rawValue))
            return SaleOutcome(response: response, read: read, lease: lease)
        case .failure(let error)?:
            if Task.isCancelled { throw .afterSubmission(orderId: sale.orderId, .cancelled) }
            if !error.isCommunicationFailure && error.code != .cancelled {
                // A refusal: the gateway recorded nothing (invalid request, order conflict…). Each
                // face says it its seed's way (``SaleFailure/After/refused(_:)``); the record stays
                // until the face decides.
                throw .afterSubmission(orderId: sale.orderId, .refused(error))
            }
            throw .afterSubmission(orderId: sale.orderId, error.code == .cancelled ? .cancelled : .gateway(error))
        case nil:
            // Unreachable: submit either started the request or recorded a failure.
            throw .afterSubmission(orderId: sale.orderId, .cancelled)
        }
    }

    /// The authorisation for the card the kernel read. (It takes the kernel's card field by field:
    /// the gateway names its own `CardData`, so only the gateway's is named here.)
    private func request(_ sale: SaleRequest, pan: PAN, expiry: (year: Int, month: Int), panSequenceNumber: Int?,
                         brand: String, emvData: [UInt8]) -> AuthorisationRequest {
        let gatewayCard = PaymentGateway.CardData(
            pan: pan, expiry: String(format: "%02d%02d", expiry.year % 100, expiry.month),
            panSequenceNumber: UInt8(clamping: panSequenceNumber ?? 0),
            brand: PaymentGateway.CardBrand(rawValue: brand), emvData: emvData)
        return AuthorisationRequest(orderId: sale.orderId, amount: sale.amount, currency: sale.currency,
                                    callbackUrl: sale.callbackUrl, card: gatewayCard,
                                    sdkVersion: configuration.sdkVersion, accountId: sale.accountId)
    }

    /// Writes the pending record durably, then starts the authorisation (the submission point).
    /// A pending record that cannot be written stops the payment before the submission point.
    private func submit(_ request: AuthorisationRequest, sale: SaleRequest, early: Bool,
                        into submission: Submission) async {
        let config = configuration
        let pending = PendingPayment(orderId: request.orderId, origin: sale.origin, amount: request.amount,
                                     currency: request.currency, maskedPAN: request.card.pan.masked,
                                     last4: request.card.pan.last4, cardBrand: request.card.brand?.rawValue,
                                     callbackUrl: request.callbackUrl, createdAt: config.now(),
                                     sale: sale.saleDictionary)
        let lease: PendingLease
        do {
            // A synchronous=FULL write: on a thread of its own, off the cooperative pool. Awaited
            // to the end, so the record is durable before the request leaves.
            let store = config.pendingStore
            lease = try await withBlockingCall { () throws(DeviceStoreError) -> PendingLease in try store.begin(pending) }
        } catch {
            submission.failBeforeSubmission(.storage(error))
            return
        }
        await config.checkpoint(.pendingWritten)
        if Task.isCancelled {
            // Not sent: nothing can be charged, and nothing stays pending.
            do {
                try lease.discard()
            } catch {
                config.onEvent(.recordKept(reason: "the record of an attempt that was never sent could not be removed (\(error)); recovery will find no payment for it"))
            }
            submission.failBeforeSubmission(.cancelled)
            return
        }
        submission.hold(lease)
        config.onEvent(.authorising(orderId: request.orderId, early: early))
        let options = GatewayRequestOptions(timeout: config.timeouts.gatewayRequest, fault: config.gatewayFault)
        let gateway = config.gateway
        let task = Task { () -> Result<AuthorisationResponse, GatewayError> in
            do throws(GatewayError) {
                return .success(try await gateway.authorize(request, options: options))
            } catch {
                return .failure(error)
            }
        }
        submission.start(task)
        await config.checkpoint(.submitted)
    }

    private func collectPIN(amount: Int, maskedPAN: String) async throws(SaleFailure) {
        configuration.onEvent(.waitingForPIN)
        let provider = configuration.pin
        let request = PINRequest(amount: amount, currency: configuration.currency, maskedPAN: maskedPAN)
        switch await withTimeout(configuration.timeouts.pinEntry, clock: configuration.clock, {
            try await provider.requestPIN(request)
        }) {
        case .value(let pin?):
            _ = pin   // it would go into the PIN block; it is never kept or printed
        case .value(nil):
            throw .beforeSubmission(.pinCancelled)
        case .cancelled:
            throw .beforeSubmission(.cancelled)
        case .timedOut:
            throw .beforeSubmission(.pinTimeout)
        case .failed:
            throw .beforeSubmission(.pinFailed)
        }
    }
}

/// A channel as a value the deadline helper can return.
private struct CardChannelBox: Sendable {
    let channel: any CardChannel
}

/// The authorisation of one sale: not started, refused before sending, or in flight.
final class Submission: Sendable {
    private struct State {
        var task: Task<Result<AuthorisationResponse, GatewayError>, Never>?
        var failure: SaleFailure.Before?
        var lease: PendingLease?
        var attemptId: String?
    }
    private let state = Mutex(State())

    /// Whether the authorisation has started leaving (the submission point is passed).
    var started: Bool { state.withLock { $0.task != nil } }
    var failureBeforeSubmission: SaleFailure.Before? { state.withLock { $0.failure } }
    /// The attempt's record, once one is held for a request.
    var attemptId: String? { state.withLock { $0.attemptId } }

    func start(_ task: Task<Result<AuthorisationResponse, GatewayError>, Never>) {
        state.withLock { $0.task = task; $0.failure = nil }
    }

    /// Keeps the lease of the attempt's record while the sale runs.
    func hold(_ lease: PendingLease) {
        state.withLock { $0.lease = lease; $0.attemptId = lease.attemptId }
    }

    /// The lease, once (nil after it was taken, or when no record was written).
    func takeLease() -> PendingLease? {
        state.withLock { s in defer { s.lease = nil }; return s.lease }
    }

    func failBeforeSubmission(_ failure: SaleFailure.Before) {
        state.withLock { $0.failure = failure }
    }

    /// The gateway's answer, or nil when nothing was sent. When the waiting task is cancelled the
    /// request is cancelled too, and its (unclear) failure comes back.
    func answer() async -> Result<AuthorisationResponse, GatewayError>? {
        guard let task = state.withLock({ $0.task }) else { return nil }
        return await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
    }
}
