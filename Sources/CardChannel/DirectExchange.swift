public import ISO7816
public import Timing
import Synchronization

/// A channel whose exchanges can run as plain, blocking calls on a thread of its own, a whole
/// sequence of them in one go: ``CardSession/drive(from:_:)`` then suspends the calling task
/// once for the sequence (a card read), not once per APDU — on PC/SC, each APDU costs what a
/// bare `SCardTransmit` loop costs (issue 16).
///
/// The channel runs the session's body on its thread and gives it a ``DirectLine``; it keeps
/// each transmit's deadline with a watch of its own and, when one comes while the call blocks,
/// calls `onDeadline` from the watch's thread (the session then resumes its caller at once and
/// drops the late answer). Everything else — the 61xx/6Cxx dance, the log, cancellation, who
/// owns the caller's state — is the session's.
public protocol DirectExchangeChannel: CardChannel {
    /// Queues `body` to run on the channel's thread, as one call there; returns at once. `body`
    /// sends through the line it is given and returns what to run once the thread is out of
    /// the call again (resume the waiting task there), or nil. `body` may wait in the queue
    /// behind a call that blocks (or never run, on a thread that has ended): the session times
    /// that wait itself, and a `body` that runs after its drive ended sends nothing.
    func runDirect(onDeadline: @escaping @Sendable () -> Void,
                   _ body: @escaping @Sendable (any DirectLine) -> (@Sendable () -> Void)?)

    /// The error of an exchange the calling task's cancellation ended (what ``transmit(_:)``
    /// throws then).
    var cancellationError: CardChannelError { get }

    /// The error for an answer shorter than SW1 SW2 (``DirectAnswer/short(_:)``): what
    /// ``transmit(_:deadline:on:onTimeout:)`` throws for it, within the same deadline. Called on
    /// the waiting task, never on the channel's thread.
    func shortAnswerError(_ bytes: [UInt8], deadline: Duration, on clock: MonotonicClock,
                          onTimeout: @escaping @Sendable () -> CardChannelError) async -> CardChannelError
}

/// What a ``DirectLine`` transmit came back with.
public enum DirectAnswer: Sendable {
    /// The card's response (at least SW1 SW2), as it sent it.
    case response(ResponseAPDU)
    /// The exchange failed (the channel's error, as ``CardChannel/transmit(_:)`` throws it).
    case failed(CardChannelError)
    /// Fewer than 2 bytes came back: a removal or a malformed answer, which only a wait for the
    /// reader's state can tell apart (``DirectExchangeChannel/shortAnswerError(_:deadline:on:onTimeout:)``).
    case short([UInt8])
}

/// The channel's side of a direct run: one blocking transmit at a time, on the channel's thread.
public protocol DirectLine {
    /// Sends `command` and waits for the answer. `deadline` is in nanoseconds of ``BootClock``:
    /// when it comes while the call blocks, the channel calls the run's `onDeadline`; the call
    /// itself goes on until the card or the reader ends it.
    func transmit(_ command: CommandAPDU, deadline: Int64) -> DirectAnswer
}

extension CardSession {
    /// How ``drive(from:_:)`` ended.
    public enum DriveEnd: Sendable {
        /// `next` asked for no further command.
        case stopped
        /// An exchange failed (it is in the log): its error — a deadline's ``apduTimeout``
        /// error, `.cancelled`, or the channel's.
        case failed(CardChannelError)
    }

    /// Whether ``drive(from:_:)`` runs its exchanges as direct calls on the channel's thread: a
    /// ``DirectExchangeChannel`` and a clock that is the continuous one (its deadlines are then
    /// kept by the channel's watch). Otherwise it sends each command through ``send(_:)``.
    public var drivesDirectly: Bool { directChannel != nil }

    /// The channel as a ``DirectExchangeChannel`` when ``drive(from:_:)`` can use it: its
    /// deadlines are kept by the channel's watch in ``BootClock`` nanoseconds, so the session's
    /// clock must have them.
    private var directChannel: (any DirectExchangeChannel)? {
        guard clock.bootNanoseconds(at: .zero) != nil else { return nil }
        return channel as? any DirectExchangeChannel
    }

    /// Sends `command`, then every command `next` returns when given the complete response of
    /// the one before, until it returns nil or an exchange fails: a sequence of ``send(_:)``s,
    /// with the same deadlines, 61xx/6Cxx handling and log.
    ///
    /// On a ``DirectExchangeChannel`` (``drivesDirectly``) the whole sequence runs on the
    /// channel's thread, `next` included, each APDU a direct call, and the calling task waits
    /// once for all of it. An APDU's deadline or the task's cancellation still ends the sequence
    /// at once, though the call blocks (its late answer is dropped) or the sequence still waits
    /// behind another call on the channel's thread (then nothing is sent); an already cancelled
    /// task sends nothing.
    ///
    /// `next` is never called again once this returns, nor after an exchange failed, so state
    /// it shares with the caller (a kernel) is the caller's again when this returns — however
    /// it returns.
    public func drive(from command: CommandAPDU,
                      _ next: @escaping @Sendable (ResponseAPDU) -> CommandAPDU?) async -> DriveEnd {
        if let direct = directChannel {
            return await DirectDrive(session: self, channel: direct, first: command, next: next).run()
        }
        var command = command
        while true {
            let response: ResponseAPDU
            do {
                response = try await send(command)
            } catch {
                return .failed(error)
            }
            guard let following = next(response) else { return .stopped }
            command = following
        }
    }
}

/// One ``CardSession/drive(from:_:)`` on a ``DirectExchangeChannel``: the sequence runs on the
/// channel's thread (the pump); the calling task waits for it once.
///
/// Who may touch what: the pump runs `next` and appends to the log only between its transmits.
/// Before each transmit it marks itself *parked* (under ``control``); a deadline or a
/// cancellation that comes while it is parked ends the drive there — the waiting task is
/// resumed at once and logs the exchange in flight — and the pump, once its call returns,
/// finds the drive ended and stops without touching anything. A cancellation that comes while
/// the pump is between transmits is noted and ends the drive at the next transmit, before it
/// is sent.
///
/// Until the pump starts, the run waits in the channel's queue — behind a call that blocks the
/// channel's thread, say (a mute card holds the PC/SC thread in `SCardTransmit` until it goes,
/// well after its exchange timed out), or on a thread that has ended. The first command counts
/// as in flight from when the run was queued, as ``CardSession/send(_:)``'s transmit does from
/// when it is queued: the session keeps its deadline with a timer of its clock (the channel's
/// watch keeps only transmits under way), and a deadline or a cancellation that comes then ends
/// the drive at once; the pump, when it gets there, sends nothing. An already cancelled task
/// does not queue the run at all.
final class DirectDrive: Sendable {
    private let session: CardSession
    private let channel: any DirectExchangeChannel
    private let first: CommandAPDU
    private let next: @Sendable (ResponseAPDU) -> CommandAPDU?

    /// What ended the drive, for the waiting task.
    private enum End {
        /// `next` returned nil.
        case stopped
        /// An exchange failed; the pump logged it.
        case failed(CardChannelError)
        /// An answer shorter than SW1 SW2 to `command`: the waiting task finds out why, and logs it.
        case short([UInt8], command: CommandAPDU, start: Duration)
        /// The deadline of the exchange in flight came.
        case timedOut(command: CommandAPDU, start: Duration)
        /// The task was cancelled; `command` was in flight (or about to be sent).
        case cancelled(command: CommandAPDU, start: Duration)
    }

    private struct Control {
        var continuation: UnsafeContinuation<Void, Never>?
        var end: End?
        /// The pump is inside a transmit of `inFlight` — or has not started: the run is queued
        /// with the first command in flight.
        var parked = false
        var inFlight: (command: CommandAPDU, start: Duration)?
        /// The task was cancelled while the pump was between transmits (or before the run was queued).
        var cancelRequested = false
        /// The deadline of the first command while the run is queued; the pump cancels it when
        /// it starts (from then on the channel keeps each transmit's deadline).
        var queuedDeadline: MonotonicClock.Timer?
    }
    private let control = Mutex(Control())

    init(session: CardSession, channel: any DirectExchangeChannel, first: CommandAPDU,
         next: @escaping @Sendable (ResponseAPDU) -> CommandAPDU?) {
        self.session = session
        self.channel = channel
        self.first = first
        self.next = next
    }

    /// Starts the pump and waits for the drive to end.
    func run() async -> CardSession.DriveEnd {
        let clock = session.clock
        // The first exchange starts now, queued: its deadline counts from here.
        let start = clock.now
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (c: UnsafeContinuation<Void, Never>) in
                let queue = control.withLock { s -> Bool in
                    // Already cancelled: nothing is queued, and the channel's thread is not waited for.
                    if s.cancelRequested {
                        s.end = .cancelled(command: first, start: start)
                        return false
                    }
                    s.continuation = c
                    s.parked = true
                    s.inFlight = (first, start)
                    return true
                }
                guard queue else { return c.resume() }
                let timer = clock.schedule(at: start + session.apduTimeout) { [self] in end(.timedOut) }
                let ended = control.withLock { s -> Bool in
                    s.queuedDeadline = timer
                    return s.end != nil
                }
                // Ended already (a cancellation, or the deadline, just now): the run is not queued.
                guard !ended else { return }
                channel.runDirect(onDeadline: { [self] in end(.timedOut) }) { [self] line in pump(line) }
            }
        } onCancel: {
            end(.cancelled)
        }
        // Ended while queued, the run may not have started: its deadline is not needed now.
        control.withLock { c in
            defer { c.queuedDeadline = nil }
            return c.queuedDeadline
        }?.cancel()
        // The pump no longer touches the drive's state: it ended, or it is parked for good (or
        // it has not started, and will find the drive ended when it does).
        let ending = control.withLock { $0.end }
        switch ending {
        case .stopped?: return .stopped
        case .failed(let error)?: return .failed(error)
        case .short(let bytes, let command, let start)?:
            let error = await channel.shortAnswerError(bytes, deadline: start + session.apduTimeout, on: session.clock,
                                                       onTimeout: session.timeoutError)
            session.logFailure(command, error.code, start: start)
            return .failed(error)
        case .timedOut(let command, let start)?:
            session.logFailure(command, .timeout, start: start)
            return .failed(session.timeoutError())
        case .cancelled(let command, let start)?:
            let error = channel.cancellationError
            session.logFailure(command, error.code, start: start)
            return .failed(error)
        case nil:
            preconditionFailure("a direct drive resumed its caller without an end")
        }
    }

    private enum Reason { case timedOut, cancelled }

    /// A deadline or the task's cancellation: ends the drive now when the pump is parked in a
    /// transmit (or the run is still queued); a cancellation between transmits is kept for the
    /// next one. A deadline that comes after its transmit returned is too late to matter (the
    /// answer is in).
    ///
    /// The channel's watch may call it for a transmit that has just returned, as the next one
    /// starts: a deadline ends only an exchange whose own deadline has come.
    private func end(_ reason: Reason) {
        let now = reason == .timedOut ? session.clock.now : .zero
        let resume = control.withLock { c -> UnsafeContinuation<Void, Never>? in
            guard c.end == nil else { return nil }
            guard c.parked, let inFlight = c.inFlight else {
                if reason == .cancelled { c.cancelRequested = true }
                return nil
            }
            if reason == .timedOut && now < inFlight.start + session.apduTimeout { return nil }
            c.end = switch reason {
            case .timedOut: .timedOut(command: inFlight.command, start: inFlight.start)
            case .cancelled: .cancelled(command: inFlight.command, start: inFlight.start)
            }
            defer { c.continuation = nil }
            return c.continuation
        }
        resume?.resume()
    }

    // MARK: The pump (on the channel's thread)

    /// The whole sequence; returns how to resume the waiting task (nil when a deadline or a
    /// cancellation already did).
    private func pump(_ line: any DirectLine) -> (@Sendable () -> Void)? {
        var command = first
        while true {
            let response: ResponseAPDU
            switch send(command, on: line) {
            case .response(let r): response = r
            case .ended(let end):
                guard let end else { return nil }
                return finish(end)
            }
            guard let following = next(response) else { return finish(.stopped) }
            command = following
        }
    }

    private enum Sent {
        case response(ResponseAPDU)
        /// The drive ends: with this, or already ended by someone else (nil).
        case ended(End?)
    }

    /// ``CardSession/send(_:)`` as direct calls: the response chain of one command.
    private func send(_ command: CommandAPDU, on line: any DirectLine) -> Sent {
        var chain = ResponseChain(command)
        var wire = command
        while true {
            let response: ResponseAPDU
            switch exchange(wire, on: line) {
            case .response(let r): response = r
            case .ended(let end): return .ended(end)
            }
            do throws(CardChannelError) {
                switch try chain.next(after: response) {
                case .send(let c): wire = c
                case .done(let complete): return .response(complete)
                }
            } catch {
                return .ended(.failed(error))
            }
        }
    }

    /// What ``exchange(_:on:)`` found before sending.
    private enum Parking {
        /// Send, the exchange having started at this instant.
        case send(start: Duration)
        /// The task was cancelled between transmits.
        case cancelled
        /// The drive ended while the run was queued.
        case ended
    }

    /// One exchange on the wire, within the session's APDU deadline, logged.
    private func exchange(_ command: CommandAPDU, on line: any DirectLine) -> Sent {
        let clock = session.clock
        let now = clock.now
        var queuedDeadline: MonotonicClock.Timer?
        let parking = control.withLock { c -> Parking in
            // A deadline or a cancellation while the run was queued: nothing is sent.
            if c.end != nil { return .ended }
            if c.cancelRequested { return .cancelled }
            queuedDeadline = c.queuedDeadline
            c.queuedDeadline = nil
            // The first command, in flight since the run was queued, keeps that start.
            let start = c.inFlight?.start ?? now
            c.parked = true
            c.inFlight = (command, start)
            return .send(start: start)
        }
        // From here the channel keeps the deadline of each transmit.
        queuedDeadline?.cancel()
        let start: Duration
        switch parking {
        case .send(let s): start = s
        case .cancelled: return .ended(.cancelled(command: command, start: now))   // this command is not sent
        case .ended: return .ended(nil)   // the waiting task has logged it
        }
        // `directChannel` checked that the clock has boot-clock instants.
        let deadline = clock.bootNanoseconds(at: start + session.apduTimeout).unsafelyUnwrapped
        let answer = line.transmit(command, deadline: deadline)
        let stillOurs = control.withLock { c -> Bool in
            c.parked = false
            c.inFlight = nil
            return c.end == nil
        }
        guard stillOurs else { return .ended(nil) }   // ended while the call blocked: not ours to log
        let end = clock.now
        switch answer {
        case .response(let response):
            session.logResponse(command, response, start: start, end: end)
            return .response(response)
        case .failed(let error):
            session.logFailure(command, error.code, start: start, end: end)
            return .ended(.failed(error))
        case .short(let bytes):
            return .ended(.short(bytes, command: command, start: start))
        }
    }

    /// Ends the drive with `end`; the waiting task is resumed once the channel's thread is out
    /// of the pump's call.
    private func finish(_ end: End) -> (@Sendable () -> Void)? {
        let resume = control.withLock { c -> UnsafeContinuation<Void, Never>? in
            if c.end == nil { c.end = end }
            defer { c.continuation = nil }
            return c.continuation
        }
        guard let resume else { return nil }
        return { resume.resume() }
    }
}

/// The two ISO 7816-4 response dances for one command, as a value: fed each response, it says
/// what to send next — a GET RESPONSE for `61xx`, a resend with Le = xx for `6Cxx` — or gives
/// the complete response. ``CardSession`` drives it (``CardSession/send(_:)`` inline for the
/// common case; ``CardSession/drive(from:_:)`` on a channel's thread).
struct ResponseChain {
    enum Step {
        case send(CommandAPDU)
        case done(ResponseAPDU)
    }

    private let command: CommandAPDU
    private var phase = Phase.first
    private var data: [UInt8] = []
    private var rounds = 0
    private var getResponse = CommandAPDU.getResponse(0)

    private enum Phase {
        /// The command's own answer is next.
        case first
        /// The answer to a resend with the exact Le is next.
        case resent
        /// The answer to a GET RESPONSE is next.
        case gettingResponse
        /// The answer to a GET RESPONSE resent with the exact Le is next.
        case gettingResponseResent
    }

    init(_ command: CommandAPDU) { self.command = command }

    mutating func next(after response: ResponseAPDU) throws(CardChannelError) -> Step {
        switch phase {
        case .first where response.sw1 == 0x6C:
            phase = .resent
            return .send(command.withExpectedLength(response.sw2 == 0 ? 256 : Int(response.sw2)))
        case .first, .resent:
            guard response.sw1 == 0x61 else { return .done(response) }
            data = response.data
            return try fetch(response.sw2)
        case .gettingResponse where response.sw1 == 0x6C:
            phase = .gettingResponseResent
            getResponse = getResponse.withExpectedLength(response.sw2 == 0 ? 256 : Int(response.sw2))
            return .send(getResponse)
        case .gettingResponseResent where response.sw1 == 0x6C:
            throw CardChannelError(.responseChainingFailed, "the card answered GET RESPONSE with 6Cxx twice")
        case .gettingResponse, .gettingResponseResent:
            data += response.data
            guard response.sw1 == 0x61 else { return .done(ResponseAPDU(data: data, statusWord: response.statusWord)) }
            return try fetch(response.sw2)
        }
    }

    private mutating func fetch(_ sw2: UInt8) throws(CardChannelError) -> Step {
        rounds += 1
        guard rounds <= CardSession.maxGetResponseRounds else {
            throw CardChannelError(.responseChainingFailed,
                                   "the card asked for more than \(CardSession.maxGetResponseRounds) GET RESPONSE rounds")
        }
        phase = .gettingResponse
        getResponse = CommandAPDU.getResponse(sw2)
        return .send(getResponse)
    }
}
