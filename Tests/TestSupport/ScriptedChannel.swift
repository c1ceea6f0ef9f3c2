public import CardChannel
public import ISO7816
public import Timing
public import APDUTrace
import Synchronization

/// A channel that answers from a script, in order, and records what it was sent (the session,
/// recorder and kernel tests). Past the end of the script every transmit fails with
/// `whenScriptEnds`.
public final class ScriptedChannel: CardChannel {
    public enum Step: Sendable {
        /// Answer these bytes (data and SW1 SW2).
        case respond([UInt8])
        /// Answer this response.
        case answer(ResponseAPDU)
        /// Answer after this much time on the channel's clock.
        case respondAfter(Duration, [UInt8])
        /// Never answer; only cancellation ends the wait.
        case hang
        case fail(CardChannelError)
    }

    public let clock: MonotonicClock
    public let atr: [UInt8]
    private let whenScriptEnds: CardChannelError.Code
    private let hang = Hang()
    private let state: Mutex<(steps: [Step], sent: [CommandAPDU])>

    public init(_ steps: [Step], clock: MonotonicClock = .continuous, atr: [UInt8] = [0x3B, 0x80, 0x80, 0x01, 0x01],
                whenScriptEnds: CardChannelError.Code = .traceEnded) {
        self.clock = clock
        self.atr = atr
        self.whenScriptEnds = whenScriptEnds
        self.state = Mutex((steps, []))
    }

    /// A card that answers `responses` in order, then fails with `.transmitFailed`.
    public convenience init(_ responses: [ResponseAPDU]) {
        self.init(responses.map(Step.answer), whenScriptEnds: .transmitFailed)
    }

    /// Every command sent so far.
    public var sent: [CommandAPDU] { state.withLock { $0.sent } }

    public func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        let step = state.withLock { s -> Step? in
            s.sent.append(command)
            return s.steps.isEmpty ? nil : s.steps.removeFirst()
        }
        switch step {
        case nil:
            throw CardChannelError(whenScriptEnds, "the script has no answer for \(command)")
        case .respond(let bytes)?:
            return try Self.parse(bytes)
        case .answer(let response)?:
            return response
        case .respondAfter(let d, let bytes)?:
            do { try await clock.sleep(for: d) } catch { throw CardChannelError(.cancelled, "cancelled") }
            return try Self.parse(bytes)
        case .hang?:
            await withTaskCancellationHandler {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    hang.park(c)
                }
            } onCancel: {
                hang.release()
            }
            throw CardChannelError(.cancelled, "cancelled")
        case .fail(let error)?:
            throw error
        }
    }

    static func parse(_ bytes: [UInt8]) throws(CardChannelError) -> ResponseAPDU {
        do { return try ResponseAPDU(bytes: bytes) } catch { throw CardChannelError(.malformedResponse, error.reason) }
    }
}

/// Parks hanging transmits until cancellation releases them (a release that comes first is kept
/// for the next park).
final class Hang: Sendable {
    private let parked = Mutex<[CheckedContinuation<Void, Never>]>([])
    private let releasedEarly = Mutex(0)

    func park(_ c: CheckedContinuation<Void, Never>) {
        let resumeNow = releasedEarly.withLock { n -> Bool in
            if n > 0 { n -= 1; return true }
            return false
        }
        if resumeNow { c.resume() } else { parked.withLock { $0.append(c) } }
    }

    func release() {
        let c = parked.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        if let c { c.resume() } else { releasedEarly.withLock { $0 += 1 } }
    }
}
