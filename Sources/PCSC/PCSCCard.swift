import ISO7816
import Synchronization
import Timing

/// A connection to the card in one reader (`SCARDHANDLE`), on its context's thread.
///
/// Disconnects (leaving the card as it is) when the last reference goes, unless
/// ``disconnect(_:)`` was called.
public final class PCSCCard: Sendable {
    /// The card and reader state `SCardStatus` reports.
    public struct Status: Sendable, Hashable {
        /// `SCARD_ABSENT`, `SCARD_PRESENT`, `SCARD_POWERED`, … of `SCardStatus`.
        public struct CardState: OptionSet, Sendable, Hashable {
            public let rawValue: UInt8
            public init(rawValue: UInt8) { self.rawValue = rawValue }
            public static let absent = CardState(rawValue: 1 << 0)
            public static let present = CardState(rawValue: 1 << 1)
            public static let swallowed = CardState(rawValue: 1 << 2)
            public static let powered = CardState(rawValue: 1 << 3)
            public static let negotiable = CardState(rawValue: 1 << 4)
            public static let specific = CardState(rawValue: 1 << 5)
        }

        public var readerName: String
        public var state: CardState
        public var `protocol`: PCSCProtocol
        public var atr: [UInt8]
    }

    public let context: PCSCContext
    public let reader: String
    /// The protocol pcscd negotiated with the card.
    public let activeProtocol: PCSCProtocol
    /// The ATR read right after connecting (empty if the card was already gone).
    public let atr: [UInt8]
    let handle: Int
    /// The context's library calls, held here too: an exchange reaches them in one step.
    private let lite: PCSCLite
    private let disconnected = Mutex(false)

    init(context: PCSCContext, reader: String, handle: Int, protocol: PCSCProtocol, atr: [UInt8]) {
        self.context = context
        self.lite = context.lite
        self.reader = reader
        self.handle = handle
        self.activeProtocol = `protocol`
        self.atr = atr
    }

    deinit {
        guard !disconnected.withLock({ $0 }) else { return }
        let lite = context.lite, handle = self.handle
        context.thread.submit { try? lite.disconnect(handle, .leave) }
    }

    /// Sends `command` and returns the card's response bytes as they came (possibly fewer than 2
    /// when a reader misbehaves: the caller checks).
    ///
    /// `SCardTransmit` cannot be cancelled; when the calling task is cancelled this returns
    /// `.cancelled` at once and the call finishes on the context's thread later, its result
    /// dropped. A task already cancelled sends nothing.
    public func transmit(_ command: [UInt8]) async throws(PCSCError) -> [UInt8] {
        switch await context.thread.transmit(TransmitCall(.card(self, command: command))) {
        case .answer(let bytes): return bytes
        case .failed(let error): throw error
        case .timedOut, .cancelled: throw PCSCError(.cancelled, function: .transmit)   // no deadline: never timed out
        }
    }

    /// `SCardTransmit` of `command` now, on the context's thread (``TransmitCall``). A method
    /// of the card: the handle and library are read off `self`, not copied out of it.
    func transmitNow(_ command: borrowing CommandAPDU) throws(PCSCError) -> [UInt8] {
        try lite.transmit(handle, protocol: activeProtocol, apdu: command)
    }

    /// The same for a command already encoded.
    func transmitNow(_ command: borrowing [UInt8]) throws(PCSCError) -> [UInt8] {
        try lite.transmit(handle, protocol: activeProtocol, command)
    }

    /// Sends `command` like ``transmit(_:)``, but stops waiting at `deadline` on `clock`:
    /// `.timedOut` then (a call under way finishes on the context's thread later, its result
    /// dropped; one still queued is not sent).
    @inline(__always)   // one async frame less per APDU
    nonisolated(nonsending) func transmit(_ command: CommandAPDU, until deadline: Duration, on clock: MonotonicClock) async -> TransmitCall.Outcome {
        await context.thread.transmit(TransmitCall(.apdu(self, command), until: deadline, on: clock))
    }

    /// Sends `command` like ``transmit(_:)`` (no deadline), encoded where it is sent.
    @inline(__always)
    func transmit(_ command: CommandAPDU) async -> TransmitCall.Outcome {
        await context.thread.transmit(TransmitCall(.apdu(self, command)))
    }

    /// The reader name, card state, protocol and ATR now (`SCardStatus`).
    public func status() async throws(PCSCError) -> Status {
        let lite = context.lite, handle = self.handle
        return try await context.thread.perform(.status) { () throws(PCSCError) -> Status in
            try lite.status(handle)
        }
    }

    /// Re-establishes the connection, e.g. after `SCARD_W_RESET_CARD` (`SCardReconnect`).
    public func reconnect(share: PCSCShareMode = .shared, protocols: PCSCProtocols = .any,
                          initialization: PCSCDisposition = .leave) async throws(PCSCError) -> PCSCProtocol {
        let lite = context.lite, handle = self.handle
        return try await context.thread.perform(.reconnect) { () throws(PCSCError) -> PCSCProtocol in
            try lite.reconnect(handle, share: share, protocols: protocols, initialization: initialization)
        }
    }

    /// Ends the connection (`SCardDisconnect`) and does `disposition` to the card.
    public func disconnect(_ disposition: PCSCDisposition = .leave) async throws(PCSCError) {
        guard markDisconnected() else { return }
        let lite = context.lite, handle = self.handle
        try await context.thread.perform(.disconnect) { () throws(PCSCError) in
            try lite.disconnect(handle, disposition)
        }
    }

    /// Ends the connection without waiting: queued behind any call still running (a transmit
    /// to a mute card may hold the thread until the card goes).
    public func disconnectLater(_ disposition: PCSCDisposition = .leave) {
        guard markDisconnected() else { return }
        let lite = context.lite, handle = self.handle
        context.thread.submit { try? lite.disconnect(handle, disposition) }
    }

    private func markDisconnected() -> Bool {
        disconnected.withLock { d in
            if d { return false }
            d = true
            return true
        }
    }
}
