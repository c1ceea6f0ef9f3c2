public import CardChannel
public import ISO7816
import Synchronization
public import Timing

/// A ``CardChannel`` to the card in a PC/SC reader.
///
/// Responses pass through as the card sent them (61xx and 6Cxx included: ``CardSession`` deals
/// with them). Errors are ``CardChannelError``s: `.cardRemoved` for a tear (`SCARD_W_REMOVED_CARD`,
/// `SCARD_E_NO_SMARTCARD`, and vpcd's `SCARD_E_NOT_TRANSACTED`), `.readerRemoved`,
/// `.noService`, `.sharingViolation`, `.malformedResponse` for fewer than 2 bytes, `.cancelled`
/// (at once, even while `SCardTransmit` blocks on a mute card), and `.transmitFailed` with the
/// PC/SC constant in `detail` for anything else.
public final class PCSCCardChannel: CardChannel {
    public let card: PCSCCard
    /// The reader's name.
    public var reader: String { card.reader }
    public let atr: [UInt8]
    /// What the ATR says about the card.
    public let readerATR: ReaderATR
    /// The reader state when the channel opened: its event count tells a later removal.
    let openedState: ReaderState
    /// How long to watch the reader after a response shorter than SW1 SW2 before calling it
    /// malformed rather than a removal (vpcd answers a torn card's command with nothing, and
    /// pcscd notices the empty slot within its ~400 ms poll).
    public let removalCheck: Duration
    private let closed = Atomic<Bool>(false)

    init(card: PCSCCard, openedState: ReaderState, removalCheck: Duration = .seconds(1)) {
        self.card = card
        self.openedState = openedState
        self.atr = card.atr.isEmpty ? openedState.atr : card.atr
        self.readerATR = ReaderATR(atr)
        self.removalCheck = removalCheck
    }

    /// The thread that owns the card's PC/SC context: a task running there sends each APDU as a
    /// direct call on that thread (no hand-over, no wake-up). Deadlines and cancellation hold
    /// the same: a task whose call blocks is resumed elsewhere.
    public var preferredExecutor: (any TaskExecutor)? { card.context.thread }

    /// Opens a channel on a card already connected (see ``PCSC/openChannel(reader:wait:clock:share:)``
    /// for the usual way).
    public static func wrapping(_ card: PCSCCard) async throws(CardChannelError) -> PCSCCardChannel {
        let state: ReaderState
        do {
            state = try await card.context.states(of: [card.reader])[0]
        } catch {
            throw CardChannelError(error, during: .exchange, reader: card.reader)
        }
        return PCSCCardChannel(card: card, openedState: state)
    }

    public func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        try check(command)
        let bytes: [UInt8]
        switch await card.transmit(command) {
        case .answer(let b): bytes = b
        case .failed(let error): throw CardChannelError(error, during: .exchange, reader: reader)
        case .timedOut, .cancelled:   // no deadline: never timed out
            throw CardChannelError(PCSCError(.cancelled, function: .transmit), during: .exchange, reader: reader)
        }
        if bytes.count >= 2 { return Self.response(splitting: bytes) }
        return try await shortResponse(bytes)
    }

    /// Sends `command`, waiting at most until `deadline` on `clock`, through one continuation
    /// resumed from the PC/SC thread or by the clock's timer (no task per exchange), on every
    /// clock alike.
    nonisolated(nonsending) public func transmit(_ command: CommandAPDU, deadline: Duration, on clock: MonotonicClock,
                         onTimeout: @escaping @Sendable () -> CardChannelError) async throws(CardChannelError) -> ResponseAPDU {
        try check(command)
        let bytes: [UInt8]
        switch await card.transmit(command, until: deadline, on: clock) {
        case .answer(let b): bytes = b
        case .timedOut: throw onTimeout()
        case .failed(let error): throw CardChannelError(error, during: .exchange, reader: reader)
        case .cancelled: throw CardChannelError(PCSCError(.cancelled, function: .transmit), during: .exchange, reader: reader)
        }
        if bytes.count >= 2 { return Self.response(splitting: bytes) }
        // Rare: a short answer, then a watch for a removal — still within the deadline.
        return try await withDeadline(deadline, on: clock, onTimeout: onTimeout) { () async throws(CardChannelError) -> ResponseAPDU in
            try await self.shortResponse(bytes)
        }
    }

    /// Throws for a closed channel or a command the card cannot take.
    fileprivate func check(_ command: CommandAPDU) throws(CardChannelError) {
        if closed.load(ordering: .acquiring) { throw CardChannelError(.closed, "the PC/SC channel to \(reader) is closed") }
        // A command whose fields were set out of range after it was made: an error here, not a
        // trap on the PC/SC thread when it is encoded.
        if let problem = command.encodingProblem {
            throw CardChannelError(.transmitFailed, "the command cannot be encoded: \(problem)", detail: "bad length")
        }
        if command.needsExtendedLength && !readerATR.supportsExtendedLength {
            throw CardChannelError(.transmitFailed,
                                   "the command needs extended Lc/Le, which the card's ATR does not announce",
                                   detail: "extended length unsupported")
        }
    }

    /// The response in `bytes` (at least SW1 SW2). Not async: this is on every exchange's path,
    /// and an async call costs a frame even when it does not wait.
    @inline(__always)
    fileprivate static func response(splitting bytes: consuming [UInt8]) -> ResponseAPDU {
        // The status word comes off the end of the array in place: no second copy of the data.
        var data = bytes
        let sw2 = data.removeLast(), sw1 = data.removeLast()
        return ResponseAPDU(data: data, sw1: sw1, sw2: sw2)
    }

    /// The error for an answer shorter than SW1 SW2: a removal (when the card left) or malformed.
    fileprivate func shortResponse(_ bytes: [UInt8]) async throws(CardChannelError) -> ResponseAPDU {
        if await cardLeft() {
            throw CardChannelError(.cardRemoved, "the card left the field during the exchange (\(reader))")
        }
        throw CardChannelError(.malformedResponse,
                               "the reader returned \(bytes.count) byte(s), not even SW1 SW2",
                               detail: bytes.isEmpty ? nil : Hex.encode(bytes))
    }

    /// Whether the card left the reader since the channel opened, watching for ``removalCheck``.
    private func cardLeft() async -> Bool {
        let context = card.context
        let clock = MonotonicClock.continuous
        let deadline = clock.now + removalCheck
        func gone(_ s: ReaderState) -> Bool {
            s.isGone || s.flags.contains(.empty) || s.eventCount != openedState.eventCount
        }
        do {
            var state = try await context.states(of: [reader])[0]
            while !gone(state) {
                state = try await context.waitForChange(from: [state], deadline: deadline, clock: clock)[0]
            }
            return true
        } catch {
            return error.code == .unknownReader || error.code == .readerUnavailable
        }
    }

    /// Sends `count` commands, cycling through `commands`, as bare `SCardTransmit` calls in one
    /// loop on the context's thread — no task, no deadline, no hand-over — and returns the time
    /// of each call: the floor that what the channel adds per exchange is measured against
    /// (`tapemu bench --reader`, tapemu-bench). A failed transmit ends the loop with its error.
    public func bareTransmitTimes(_ commands: [CommandAPDU], count: Int) async throws(CardChannelError) -> [Duration] {
        try check(commands.first ?? CommandAPDU(cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00))
        guard !commands.isEmpty, count > 0 else { return [] }
        let lite = card.context.lite, handle = card.handle, proto = card.activeProtocol
        let bytes = commands.map(\.bytes)
        do {
            return try await card.context.thread.perform(.transmit) { () throws(PCSCError) -> [Duration] in
                let clock = ContinuousClock()
                var times: [Duration] = []
                times.reserveCapacity(count)
                for i in 0..<count {
                    let start = clock.now
                    _ = try lite.transmit(handle, protocol: proto, bytes[i % bytes.count])
                    times.append(start.duration(to: clock.now))
                }
                return times
            }
        } catch {
            throw CardChannelError(error, during: .exchange, reader: reader)
        }
    }

    /// Runs `body` on the thread that owns the channel's PC/SC context, between its calls, and
    /// returns its result: for a baseline that must share that thread (tapemu-bench runs a plain
    /// C `SCardTransmit` loop there, so the comparison with the channel is not also one of two
    /// threads the scheduler treats differently). `body` must not call into this channel.
    public func onContextThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        let result = try? await card.context.thread.perform(.transmit) { () throws(PCSCError) -> T in body() }
        return result!   // `perform` throws only for a cancelled task with abandonOnCancel, not used here
    }

    /// The connection's `SCARDHANDLE` and the protocol pcscd negotiated (`SCARD_PROTOCOL_T0` or
    /// `_T1`), for code that must call libpcsclite itself on this very connection, from the
    /// context's thread (``onContextThread(_:)``): tapemu-bench's plain C loop, which is a fair
    /// baseline only on the same pcscd context as the channel (pcscd serves each context on a
    /// thread of its own, and where the scheduler puts that thread moves an exchange's time by
    /// up to 2.5× on a 2-vCPU machine). Such code must not disconnect it.
    public var rawConnection: (handle: Int, protocol: UInt) { (card.handle, UInt(card.activeProtocol.raw)) }

    /// The card's UID through the PC/SC pseudo-APDU `FF CA 00 00 00` (PC/SC part 3 §3.2.2.1.3),
    /// or nil when the reader does not support it (any status other than 9000).
    public func readUID() async throws(CardChannelError) -> [UInt8]? {
        let response = try await transmit(CommandAPDU(cla: 0xFF, ins: 0xCA, p1: 0x00, p2: 0x00, le: 0))
        guard response.sw1 == 0x90, response.sw2 == 0x00, !response.data.isEmpty else { return nil }
        return response.data
    }

    /// Closes the channel and disconnects from the card (leaving it as it is, by default).
    /// Does not wait: a transmit still blocked on a mute card finishes first.
    public func close(_ disposition: PCSCDisposition = .leave) {
        if !closed.exchange(true, ordering: .acquiringAndReleasing) { card.disconnectLater(disposition) }
    }
}

extension PCSCCardChannel: DirectExchangeChannel {
    /// Runs `body` on the thread that owns the card's PC/SC context, as one call there: each
    /// transmit of its line is a plain `SCardTransmit` on that thread, its deadline kept by the
    /// thread's watch (which calls `onDeadline` when it comes while the call blocks).
    public func runDirect(onDeadline: @escaping @Sendable () -> Void,
                          _ body: @escaping @Sendable (any DirectLine) -> (@Sendable () -> Void)?) {
        let line = PCSCDirectLine(channel: self, expire: onDeadline)
        card.context.thread.submitDirect { body(line) }
    }

    public var cancellationError: CardChannelError {
        CardChannelError(PCSCError(.cancelled, function: .transmit), during: .exchange, reader: reader)
    }

    public func shortAnswerError(_ bytes: [UInt8], deadline: Duration, on clock: MonotonicClock,
                                 onTimeout: @escaping @Sendable () -> CardChannelError) async -> CardChannelError {
        do throws(CardChannelError) {
            _ = try await withDeadline(deadline, on: clock, onTimeout: onTimeout) { () async throws(CardChannelError) -> ResponseAPDU in
                try await self.shortResponse(bytes)
            }
            preconditionFailure("a short answer passed as a response")
        } catch {
            return error
        }
    }

    /// The checks and the answer of one transmit, for ``PCSCDirectLine``.
    fileprivate func directTransmit(_ command: CommandAPDU, deadline: Int64, line: PCSCDirectLine) -> DirectAnswer {
        do throws(CardChannelError) { try check(command) } catch { return .failed(error) }
        let thread = card.context.thread
        thread.beginDirect(deadline: deadline, line: line)
        let bytes: [UInt8]
        do throws(PCSCError) {
            bytes = try card.transmitNow(command)
        } catch {
            thread.endDirect()
            return .failed(CardChannelError(error, during: .exchange, reader: reader))
        }
        thread.endDirect()
        return bytes.count >= 2 ? .response(Self.response(splitting: bytes)) : .short(bytes)
    }
}

/// The line of one direct run on a PC/SC channel (``PCSCCardChannel/runDirect(onDeadline:_:)``),
/// used on the context's thread only.
final class PCSCDirectLine: DirectLine, Sendable {
    private let channel: PCSCCardChannel
    private let onDeadline: @Sendable () -> Void

    init(channel: PCSCCardChannel, expire: @escaping @Sendable () -> Void) {
        self.channel = channel
        self.onDeadline = expire
    }

    func transmit(_ command: CommandAPDU, deadline: Int64) -> DirectAnswer {
        channel.directTransmit(command, deadline: deadline, line: self)
    }

    /// The deadline of the transmit under way came (the thread's watch).
    func expire() { onDeadline() }
}

/// Where a PC/SC error happened, for turning it into a ``CardChannelError``.
public enum PCSCPhase: Sendable, Hashable {
    /// Connecting to pcscd or listing readers.
    case service
    /// Waiting for a card to be presented.
    case waitingForCard
    /// Connecting to the card.
    case connecting
    /// Exchanging APDUs.
    case exchange
}

extension CardChannelError {
    /// The channel error for a PC/SC error: removals, service, sharing and cancellation get their
    /// own codes; anything else is `.transmitFailed` with the C constant in `detail`.
    public init(_ error: PCSCError, during phase: PCSCPhase, reader: String? = nil,
                file: String = #fileID, line: Int = #line) {
        let on = reader.map { " (\($0))" } ?? ""
        let detail = error.code.name
        switch error.code {
        case .noService, .serviceStopped:
            self.init(.noService, "the PC/SC service pcscd is not running" + on, detail: detail,
                      hint: error.hint, file: file, line: line)
        case .commError where phase == .service || phase == .waitingForCard:
            // Calls that touch no card fail this way only when the socket to pcscd breaks: pcscd
            // stopped (or restarted) under us. In an exchange it may be the reader's own failure.
            self.init(.noService, "the connection to pcscd was lost (it stopped or restarted)" + on, detail: detail,
                      hint: PCSCError(.noService, function: error.function).hint, file: file, line: line)
        case .cancelled:
            self.init(.cancelled, "cancelled" + on, detail: detail, file: file, line: line)
        case .timeout where phase == .waitingForCard:
            self.init(.noCard, "no card was presented in time" + on, detail: detail, file: file, line: line)
        case .timeout:
            self.init(.timeout, "the reader did not answer in time" + on, detail: detail, file: file, line: line)
        case .sharingViolation:
            self.init(.sharingViolation, "another program holds the card" + on, detail: detail,
                      hint: error.hint, file: file, line: line)
        case .removedCard, .noSmartcard, .unpoweredCard:
            self.init(.cardRemoved, "the card was removed from the field" + on, detail: detail, file: file, line: line)
        case .notTransacted where phase == .exchange:
            self.init(.cardRemoved, "the card left the field during the exchange" + on, detail: detail,
                      file: file, line: line)
        case .readerUnavailable:
            self.init(.readerRemoved, "the reader is no longer available" + on, detail: detail, file: file, line: line)
        case .unknownReader where phase == .service:
            self.init(.noReader, "no such reader" + on, detail: detail, file: file, line: line)
        case .unknownReader:
            self.init(.readerRemoved, "the reader went away" + on, detail: detail, file: file, line: line)
        case .noReadersAvailable:
            self.init(.noReader, "no PC/SC reader is connected", detail: detail, hint: error.hint, file: file, line: line)
        default:
            self.init(.transmitFailed, "\(error.function) failed: \(error.code.message)" + on, detail: detail,
                      file: file, line: line)
        }
    }
}
