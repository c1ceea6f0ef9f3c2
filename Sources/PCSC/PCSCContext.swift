import CardChannel
import Synchronization
public import Timing

/// A PC/SC context: a connection to pcscd, owned by a thread of its own.
///
/// Every call made with this context runs on its ``PCSCThread``, one at a time, so blocking
/// calls never occupy Swift's cooperative pool. Waits take a `Duration` on an injectable clock
/// and end promptly when the calling task is cancelled (through `SCardCancel`, the one call made
/// from another thread). The context is released when the last reference goes.
public final class PCSCContext: Sendable {
    let thread: PCSCThread
    let handle: Int
    let lite: PCSCLite

    private init(thread: PCSCThread, handle: Int, lite: PCSCLite) {
        self.thread = thread
        self.handle = handle
        self.lite = lite
    }

    /// Connects to pcscd (`SCardEstablishContext`, system scope).
    ///
    /// Throws `.noService` when pcscd is not running. While ``PCSCTestHook/forcedResults`` is
    /// bound, the context (and every card connected through it) uses those forced results.
    public static func establish() async throws(PCSCError) -> PCSCContext {
        #if DEBUG
        let lite = PCSCLite(forced: PCSCTestHook.forcedResults)
        #else
        let lite = PCSCLite(forced: nil)
        #endif
        let thread = PCSCThread(name: "tapemu.pcsc")
        do {
            let handle = try await thread.perform(.establishContext) { () throws(PCSCError) -> Int in
                try lite.establishContext()
            }
            return PCSCContext(thread: thread, handle: handle, lite: lite)
        } catch {
            thread.stop()
            throw error
        }
    }

    deinit {
        let lite = self.lite
        let handle = self.handle
        thread.submit { lite.releaseContext(handle) }
        thread.stop()
    }

    /// The names of the readers pcscd knows, in its order. Empty when there are none.
    public func readers() async throws(PCSCError) -> [String] {
        let lite = self.lite, handle = self.handle
        return try await thread.perform(.listReaders) { () throws(PCSCError) -> [String] in
            try lite.listReaders(handle)
        }
    }

    /// The current state of each reader (and of its card), without waiting.
    public func states(of readers: [String]) async throws(PCSCError) -> [ReaderState] {
        guard !readers.isEmpty else { return [] }
        let lite = self.lite, handle = self.handle
        return try await thread.perform(.getStatusChange) { () throws(PCSCError) -> [ReaderState] in
            var raw = readers.map { RawReaderState(reader: $0, currentState: 0) }
            let rv = lite.getStatusChange(handle, timeoutMilliseconds: 0, &raw)
            // With every state unaware, pcscd answers at once; a timeout only means nothing to report.
            if PCSCError.Code(rv) != .timeout { try PCSCLite.check(rv, .getStatusChange) }
            return raw.map { ReaderState(reader: $0.reader, rawEventState: $0.eventState, atr: $0.atr) }
        }
    }

    /// Every reader with its state.
    public func readerStates() async throws(PCSCError) -> [ReaderState] {
        try await states(of: try await readers())
    }

    /// Waits until one of `known` changes (a card comes or goes, a reader goes away) and returns
    /// the new states, in the same order.
    ///
    /// - Parameters:
    ///   - known: states from ``states(of:)`` or a previous wait.
    ///   - watchReaderList: also wake when a reader is plugged in or out (hot-plug, through
    ///     pcscd's `\\?PnP?\Notification` reader); the result then ends with that pseudo reader.
    ///   - deadline: an instant on `clock` after which the wait throws `.timeout`; nil: no limit.
    /// - Throws: `.timeout` at the deadline, `.cancelled` when the task is cancelled (promptly),
    ///   and pcscd's errors.
    public func waitForChange(from known: [ReaderState], watchReaderList: Bool = false,
                              deadline: Duration? = nil,
                              clock: MonotonicClock = .continuous) async throws(PCSCError) -> [ReaderState] {
        var raw = known.filter { !$0.isPlugAndPlay }.map {
            RawReaderState(reader: $0.reader, currentState: $0.rawEventState & ~ReaderState.Flags.changed.rawValue)
        }
        if watchReaderList {
            var previous: UInt
            if let pnp = known.first(where: \.isPlugAndPlay) {
                previous = pnp.rawEventState
            } else {
                // pcscd compares the reader count in the high 16 bits with its own.
                previous = UInt(try await readers().count) << 16
            }
            raw.append(RawReaderState(reader: PCSCLite.plugAndPlayReader, currentState: previous))
        }
        guard !raw.isEmpty else { throw PCSCError(.invalidParameter, function: .getStatusChange) }
        if let deadline, clock.now >= deadline { throw PCSCError(.timeout, function: .getStatusChange) }

        let lite = self.lite, handle = self.handle
        let stop = StopFlag()
        let timer: Task<Void, Never>? = deadline.map { deadline in
            Task {
                do {
                    try await clock.sleep(until: deadline)
                    stop.set(.timedOut)
                    lite.cancel(handle)
                } catch {}
            }
        }
        defer { timer?.cancel() }
        let states = raw
        return try await thread.perform(.getStatusChange, abandonOnCancel: true, onCancel: {
            stop.set(.cancelled)
            lite.cancel(handle)
        }) { () throws(PCSCError) -> [ReaderState] in
            var states = states
            while true {
                switch stop.reason {
                case .timedOut?: throw PCSCError(.timeout, function: .getStatusChange)
                case .cancelled?: throw PCSCError(.cancelled, function: .getStatusChange)
                case nil: break
                }
                // Bounded slices: an SCardCancel that lands just before the call starts would be
                // lost; the flag above catches it within one slice.
                let rv = lite.getStatusChange(handle, timeoutMilliseconds: Self.waitSliceMilliseconds, &states)
                let code = PCSCError.Code(rv)
                if code == .timeout { continue }
                if code == .cancelled, let reason = stop.reason {
                    throw PCSCError(reason == .timedOut ? .timeout : .cancelled, function: .getStatusChange)
                }
                try PCSCLite.check(rv, .getStatusChange)
                return states.map { ReaderState(reader: $0.reader, rawEventState: $0.eventState, atr: $0.atr) }
            }
        }
    }

    /// How long one blocking `SCardGetStatusChange` may last before the wait checks its flags.
    static let waitSliceMilliseconds: UInt = 1000

    private enum StopReason: Sendable { case timedOut, cancelled }

    /// Why a wait should end, set once from the timer or the cancellation handler.
    private final class StopFlag: Sendable {
        private let value = Mutex<StopReason?>(nil)
        var reason: StopReason? { value.withLock { $0 } }
        func set(_ r: StopReason) { value.withLock { if $0 == nil { $0 = r } } }
    }

    /// Waits until `reader` holds a card that answered to reset, and returns its state.
    ///
    /// - Throws: `.timeout` when no card came before `timeout` (on `clock`), `.cancelled`,
    ///   `.unknownReader` when the reader does not exist or went away, and pcscd's errors.
    public func waitForCard(in reader: String, timeout: Duration,
                            clock: MonotonicClock = .continuous) async throws(PCSCError) -> ReaderState {
        let deadline = clock.now + timeout
        var state = try await states(of: [reader])[0]
        while true {
            if state.isGone { throw PCSCError(.unknownReader, function: .getStatusChange) }
            if state.hasCard { return state }
            state = try await waitForChange(from: [state], deadline: deadline, clock: clock)[0]
        }
    }

    /// Waits until `reader` is empty (the card left and pcscd saw it), and returns its state.
    public func waitForEmpty(_ reader: String, timeout: Duration,
                             clock: MonotonicClock = .continuous) async throws(PCSCError) -> ReaderState {
        let deadline = clock.now + timeout
        var state = try await states(of: [reader])[0]
        while true {
            if state.isGone { throw PCSCError(.unknownReader, function: .getStatusChange) }
            if state.flags.contains(.empty) { return state }
            state = try await waitForChange(from: [state], deadline: deadline, clock: clock)[0]
        }
    }

    /// Connects to the card in `reader` (`SCardConnect`).
    ///
    /// `SCardConnect` blocks while pcscd's reader is busy — behind an `SCardTransmit` to a mute
    /// vpcd card, which nothing ends until the card goes, even once the program that sent it
    /// is gone. With a `deadline` (an instant on `clock`) the caller stops waiting then, like a
    /// transmit: the call goes on on the context's thread and its handle, if it ever comes, goes
    /// with the context.
    ///
    /// With `transaction`, the connection then holds the card (`SCardBeginTransaction`) until it
    /// is disconnected: another program's commands cannot come between ours (two reads of one
    /// card interleaved, each selecting over the other's state), and another such connection
    /// waits — within its deadline — until this one ends.
    ///
    /// - Throws: `.noSmartcard` / `.removedCard` when there is no card, `.sharingViolation` when
    ///   another program holds it exclusively, `.unresponsiveCard` for a mute card,
    ///   `.unknownReader` / `.readerUnavailable` when the reader went away, `.timeout` at the
    ///   deadline, `.cancelled` when the task is cancelled (at once, with a deadline).
    public func connect(to reader: String, share: PCSCShareMode = .shared,
                        protocols: PCSCProtocols = .any, transaction: Bool = false, deadline: Duration? = nil,
                        clock: MonotonicClock = .continuous) async throws(PCSCError) -> PCSCCard {
        let lite = self.lite, handle = self.handle, thread = self.thread
        let connect = { @Sendable () async throws(PCSCError) -> (Int, PCSCProtocol, [UInt8]) in
            try await thread.perform(.connect, abandonOnCancel: deadline != nil) { () throws(PCSCError) -> (Int, PCSCProtocol, [UInt8]) in
                let (card, proto) = try lite.connect(handle, reader: reader, share: share, protocols: protocols)
                if transaction {
                    do throws(PCSCError) {
                        try lite.beginTransaction(card)
                    } catch {
                        try? lite.disconnect(card, .leave)
                        throw error
                    }
                }
                // The ATR, for the channel; a card gone already shows on the next call.
                let atr = (try? lite.status(card))?.atr ?? []
                return (card, proto, atr)
            }
        }
        let (card, proto, atr) = if let deadline {
            try await withDeadline(deadline, on: clock,
                                   onTimeout: { PCSCError(.timeout, function: .connect) },
                                   onCancel: { PCSCError(.cancelled, function: .connect) }, connect)
        } else {
            try await connect()
        }
        return PCSCCard(context: self, reader: reader, handle: card, protocol: proto, atr: atr)
    }

    /// Connects to the card in `reader`, runs `body` with it, and disconnects (with
    /// `disposition`) on every path, error or not.
    public func withCard<T: Sendable>(in reader: String, share: PCSCShareMode = .shared,
                                      protocols: PCSCProtocols = .any, disposition: PCSCDisposition = .leave,
                                      _ body: (PCSCCard) async throws -> T) async throws -> T {
        let card = try await connect(to: reader, share: share, protocols: protocols)
        do {
            let result = try await body(card)
            try? await card.disconnect(disposition)
            return result
        } catch {
            try? await card.disconnect(disposition)
            throw error
        }
    }
}
