// The C edge: every call into libpcsclite, and every constant taken from its headers, is in this
// file. Nothing else in tapemu imports CPCSCLite. Return codes go through one checker
// (`PCSCLite.check`) that turns them into `PCSCError`; a test hook (`PCSCTestHook`) can force
// the code any call returns, so the mapping of rare codes is tested without pcscd.
//
// pcsc-lite on 64-bit Linux: DWORD is `UInt` and LONG is `Int` in Swift. Its structs are used as
// imported, never redeclared.
import Dispatch
import CPCSCLite
import Glibc
import ISO7816
import Synchronization

// MARK: - Return codes

extension PCSCError.Code {
    /// `SCARD_S_SUCCESS`: no error. Never thrown; used to force a success through the test hook.
    public static let success = Self(SCARD_S_SUCCESS)
    /// `SCARD_F_INTERNAL_ERROR`: an internal consistency check failed.
    public static let internalError = Self(SCARD_F_INTERNAL_ERROR)
    /// `SCARD_E_CANCELLED`: the action was cancelled by an `SCardCancel` request.
    public static let cancelled = Self(SCARD_E_CANCELLED)
    /// `SCARD_E_INVALID_HANDLE`: the supplied handle was invalid.
    public static let invalidHandle = Self(SCARD_E_INVALID_HANDLE)
    /// `SCARD_E_INVALID_PARAMETER`: one or more parameters could not be interpreted.
    public static let invalidParameter = Self(SCARD_E_INVALID_PARAMETER)
    /// `SCARD_E_NO_MEMORY`: not enough memory to complete the command.
    public static let noMemory = Self(SCARD_E_NO_MEMORY)
    /// `SCARD_E_INSUFFICIENT_BUFFER`: the buffer for returned data is too small.
    public static let insufficientBuffer = Self(SCARD_E_INSUFFICIENT_BUFFER)
    /// `SCARD_E_UNKNOWN_READER`: the reader name is not recognised.
    public static let unknownReader = Self(SCARD_E_UNKNOWN_READER)
    /// `SCARD_E_TIMEOUT`: the user-specified timeout expired.
    public static let timeout = Self(SCARD_E_TIMEOUT)
    /// `SCARD_E_SHARING_VIOLATION`: the card is held by another connection (exclusively).
    public static let sharingViolation = Self(SCARD_E_SHARING_VIOLATION)
    /// `SCARD_E_NO_SMARTCARD`: the operation needs a card and none is in the reader.
    public static let noSmartcard = Self(SCARD_E_NO_SMARTCARD)
    /// `SCARD_E_PROTO_MISMATCH`: the requested protocols are incompatible with the card's.
    public static let protocolMismatch = Self(SCARD_E_PROTO_MISMATCH)
    /// `SCARD_E_NOT_READY`: the reader or card is not ready to accept commands.
    public static let notReady = Self(SCARD_E_NOT_READY)
    /// `SCARD_E_INVALID_VALUE`: one or more parameter values could not be interpreted.
    public static let invalidValue = Self(SCARD_E_INVALID_VALUE)
    /// `SCARD_E_SYSTEM_CANCELLED`: cancelled by the system (log off, shut down).
    public static let systemCancelled = Self(SCARD_E_SYSTEM_CANCELLED)
    /// `SCARD_F_COMM_ERROR`: an internal communications error (client ↔ pcscd).
    public static let commError = Self(SCARD_F_COMM_ERROR)
    /// `SCARD_F_UNKNOWN_ERROR`: an internal error of unknown source.
    public static let unknownError = Self(SCARD_F_UNKNOWN_ERROR)
    /// `SCARD_E_INVALID_ATR`: an ATR from the registry is not valid.
    public static let invalidATR = Self(SCARD_E_INVALID_ATR)
    /// `SCARD_E_NOT_TRANSACTED`: the exchange with the card failed (vpcd: the card tore away).
    public static let notTransacted = Self(SCARD_E_NOT_TRANSACTED)
    /// `SCARD_E_READER_UNAVAILABLE`: the reader is not currently available (unplugged).
    public static let readerUnavailable = Self(SCARD_E_READER_UNAVAILABLE)
    /// `SCARD_P_SHUTDOWN`: aborted so that the server can exit.
    public static let shutdown = Self(SCARD_P_SHUTDOWN)
    /// `SCARD_E_PCI_TOO_SMALL`: the PCI receive buffer was too small.
    public static let pciTooSmall = Self(SCARD_E_PCI_TOO_SMALL)
    /// `SCARD_E_READER_UNSUPPORTED`: the reader driver does not meet minimal requirements.
    public static let readerUnsupported = Self(SCARD_E_READER_UNSUPPORTED)
    /// `SCARD_E_DUPLICATE_READER`: the driver did not produce a unique reader name.
    public static let duplicateReader = Self(SCARD_E_DUPLICATE_READER)
    /// `SCARD_E_CARD_UNSUPPORTED`: the card does not meet minimal requirements.
    public static let cardUnsupported = Self(SCARD_E_CARD_UNSUPPORTED)
    /// `SCARD_E_NO_SERVICE`: the smart card resource manager (pcscd) is not running.
    public static let noService = Self(SCARD_E_NO_SERVICE)
    /// `SCARD_E_SERVICE_STOPPED`: the smart card resource manager (pcscd) has shut down.
    public static let serviceStopped = Self(SCARD_E_SERVICE_STOPPED)
    /// `SCARD_E_UNEXPECTED` (also `SCARD_E_UNSUPPORTED_FEATURE` in pcsc-lite): an unexpected
    /// card error, or a feature the card or reader does not support.
    public static let unexpected = Self(SCARD_E_UNEXPECTED)
    /// `SCARD_E_NO_READERS_AVAILABLE`: no smart card reader is connected.
    public static let noReadersAvailable = Self(SCARD_E_NO_READERS_AVAILABLE)
    /// `SCARD_E_COMM_DATA_LOST`: a communications error with the card; retry.
    public static let commDataLost = Self(SCARD_E_COMM_DATA_LOST)
    /// `SCARD_E_SERVER_TOO_BUSY`: pcscd is too busy to complete the operation.
    public static let serverTooBusy = Self(SCARD_E_SERVER_TOO_BUSY)
    /// `SCARD_W_UNSUPPORTED_CARD`: the reader cannot talk to the card (ATR conflicts).
    public static let unsupportedCard = Self(SCARD_W_UNSUPPORTED_CARD)
    /// `SCARD_W_UNRESPONSIVE_CARD`: the card does not answer to reset (mute).
    public static let unresponsiveCard = Self(SCARD_W_UNRESPONSIVE_CARD)
    /// `SCARD_W_UNPOWERED_CARD`: power was removed from the card.
    public static let unpoweredCard = Self(SCARD_W_UNPOWERED_CARD)
    /// `SCARD_W_RESET_CARD`: the card was reset (by another connection); shared state is lost.
    public static let resetCard = Self(SCARD_W_RESET_CARD)
    /// `SCARD_W_REMOVED_CARD`: the card was removed; further communication is impossible.
    public static let removedCard = Self(SCARD_W_REMOVED_CARD)
    /// `SCARD_W_SECURITY_VIOLATION`: access denied by a security violation.
    public static let securityViolation = Self(SCARD_W_SECURITY_VIOLATION)

    /// The C constant and a short message for every code pcsc-lite defines. First name wins
    /// where pcsc-lite gives one value two names.
    static let known: [Int: (name: String, message: String)] = {
        let table: [(Int, String, String)] = [
            (SCARD_S_SUCCESS, "SCARD_S_SUCCESS", "no error"),
            (SCARD_F_INTERNAL_ERROR, "SCARD_F_INTERNAL_ERROR", "an internal consistency check failed"),
            (SCARD_E_CANCELLED, "SCARD_E_CANCELLED", "the action was cancelled"),
            (SCARD_E_INVALID_HANDLE, "SCARD_E_INVALID_HANDLE", "the handle is invalid"),
            (SCARD_E_INVALID_PARAMETER, "SCARD_E_INVALID_PARAMETER", "a parameter could not be interpreted"),
            (SCARD_E_INVALID_TARGET, "SCARD_E_INVALID_TARGET", "registry startup information is missing or invalid"),
            (SCARD_E_NO_MEMORY, "SCARD_E_NO_MEMORY", "not enough memory"),
            (SCARD_F_WAITED_TOO_LONG, "SCARD_F_WAITED_TOO_LONG", "an internal consistency timer expired"),
            (SCARD_E_INSUFFICIENT_BUFFER, "SCARD_E_INSUFFICIENT_BUFFER", "the receive buffer is too small"),
            (SCARD_E_UNKNOWN_READER, "SCARD_E_UNKNOWN_READER", "the reader name is not recognised"),
            (SCARD_E_TIMEOUT, "SCARD_E_TIMEOUT", "the timeout expired"),
            (SCARD_E_SHARING_VIOLATION, "SCARD_E_SHARING_VIOLATION", "another connection holds the card"),
            (SCARD_E_NO_SMARTCARD, "SCARD_E_NO_SMARTCARD", "no card in the reader"),
            (SCARD_E_UNKNOWN_CARD, "SCARD_E_UNKNOWN_CARD", "the card name is not recognised"),
            (SCARD_E_CANT_DISPOSE, "SCARD_E_CANT_DISPOSE", "the card cannot be disposed of as requested"),
            (SCARD_E_PROTO_MISMATCH, "SCARD_E_PROTO_MISMATCH", "the requested protocols are incompatible with the card"),
            (SCARD_E_NOT_READY, "SCARD_E_NOT_READY", "the reader or card is not ready"),
            (SCARD_E_INVALID_VALUE, "SCARD_E_INVALID_VALUE", "a parameter value could not be interpreted"),
            (SCARD_E_SYSTEM_CANCELLED, "SCARD_E_SYSTEM_CANCELLED", "cancelled by the system"),
            (SCARD_F_COMM_ERROR, "SCARD_F_COMM_ERROR", "internal communications error with pcscd"),
            (SCARD_F_UNKNOWN_ERROR, "SCARD_F_UNKNOWN_ERROR", "an internal error of unknown source"),
            (SCARD_E_INVALID_ATR, "SCARD_E_INVALID_ATR", "the ATR is not valid"),
            (SCARD_E_NOT_TRANSACTED, "SCARD_E_NOT_TRANSACTED", "the exchange with the card failed"),
            (SCARD_E_READER_UNAVAILABLE, "SCARD_E_READER_UNAVAILABLE", "the reader is not available"),
            (SCARD_P_SHUTDOWN, "SCARD_P_SHUTDOWN", "aborted because pcscd is exiting"),
            (SCARD_E_PCI_TOO_SMALL, "SCARD_E_PCI_TOO_SMALL", "the PCI receive buffer is too small"),
            (SCARD_E_READER_UNSUPPORTED, "SCARD_E_READER_UNSUPPORTED", "the reader driver is not supported"),
            (SCARD_E_DUPLICATE_READER, "SCARD_E_DUPLICATE_READER", "the reader name is not unique"),
            (SCARD_E_CARD_UNSUPPORTED, "SCARD_E_CARD_UNSUPPORTED", "the card is not supported"),
            (SCARD_E_NO_SERVICE, "SCARD_E_NO_SERVICE", "the PC/SC service (pcscd) is not running"),
            (SCARD_E_SERVICE_STOPPED, "SCARD_E_SERVICE_STOPPED", "the PC/SC service (pcscd) has stopped"),
            (SCARD_E_UNEXPECTED, "SCARD_E_UNEXPECTED", "an unexpected card error, or an unsupported feature"),
            (SCARD_E_ICC_INSTALLATION, "SCARD_E_ICC_INSTALLATION", "no primary provider for the card"),
            (SCARD_E_ICC_CREATEORDER, "SCARD_E_ICC_CREATEORDER", "the order of object creation is not supported"),
            (SCARD_E_DIR_NOT_FOUND, "SCARD_E_DIR_NOT_FOUND", "the directory does not exist on the card"),
            (SCARD_E_FILE_NOT_FOUND, "SCARD_E_FILE_NOT_FOUND", "the file does not exist on the card"),
            (SCARD_E_NO_DIR, "SCARD_E_NO_DIR", "the path is not a directory"),
            (SCARD_E_NO_FILE, "SCARD_E_NO_FILE", "the path is not a file"),
            (SCARD_E_NO_ACCESS, "SCARD_E_NO_ACCESS", "access to the file is denied"),
            (SCARD_E_WRITE_TOO_MANY, "SCARD_E_WRITE_TOO_MANY", "the card is out of memory"),
            (SCARD_E_BAD_SEEK, "SCARD_E_BAD_SEEK", "the file pointer could not be set"),
            (SCARD_E_INVALID_CHV, "SCARD_E_INVALID_CHV", "the PIN is incorrect"),
            (SCARD_E_UNKNOWN_RES_MNG, "SCARD_E_UNKNOWN_RES_MNG", "an unrecognised error from a layered component"),
            (SCARD_E_NO_SUCH_CERTIFICATE, "SCARD_E_NO_SUCH_CERTIFICATE", "the certificate does not exist"),
            (SCARD_E_CERTIFICATE_UNAVAILABLE, "SCARD_E_CERTIFICATE_UNAVAILABLE", "the certificate could not be obtained"),
            (SCARD_E_NO_READERS_AVAILABLE, "SCARD_E_NO_READERS_AVAILABLE", "no smart card reader is connected"),
            (SCARD_E_COMM_DATA_LOST, "SCARD_E_COMM_DATA_LOST", "a communications error with the card"),
            (SCARD_E_NO_KEY_CONTAINER, "SCARD_E_NO_KEY_CONTAINER", "the key container does not exist"),
            (SCARD_E_SERVER_TOO_BUSY, "SCARD_E_SERVER_TOO_BUSY", "pcscd is too busy"),
            (SCARD_W_UNSUPPORTED_CARD, "SCARD_W_UNSUPPORTED_CARD", "the reader cannot talk to the card"),
            (SCARD_W_UNRESPONSIVE_CARD, "SCARD_W_UNRESPONSIVE_CARD", "the card does not answer to reset"),
            (SCARD_W_UNPOWERED_CARD, "SCARD_W_UNPOWERED_CARD", "the card is not powered"),
            (SCARD_W_RESET_CARD, "SCARD_W_RESET_CARD", "the card was reset"),
            (SCARD_W_REMOVED_CARD, "SCARD_W_REMOVED_CARD", "the card was removed"),
            (SCARD_W_SECURITY_VIOLATION, "SCARD_W_SECURITY_VIOLATION", "access denied (security violation)"),
            (SCARD_W_WRONG_CHV, "SCARD_W_WRONG_CHV", "wrong PIN"),
            (SCARD_W_CHV_BLOCKED, "SCARD_W_CHV_BLOCKED", "the PIN is blocked"),
            (SCARD_W_EOF, "SCARD_W_EOF", "end of the card file"),
            (SCARD_W_CANCELLED_BY_USER, "SCARD_W_CANCELLED_BY_USER", "cancelled by the user"),
            (SCARD_W_CARD_NOT_AUTHENTICATED, "SCARD_W_CARD_NOT_AUTHENTICATED", "no PIN was presented"),
        ]
        var d: [Int: (name: String, message: String)] = [:]
        for (code, name, message) in table where d[code] == nil { d[code] = (name, message) }
        return d
    }()
}

extension PCSCError.Code {
    /// Wraps a pcsc-lite `LONG` return value.
    init(_ raw: LONG) { self.init(rawValue: Int(raw)) }
}

// MARK: - Reader state flags, protocols, share modes, dispositions

extension ReaderState.Flags {
    /// `SCARD_STATE_IGNORE`: the reader was ignored.
    public static let ignore = Self(rawValue: UInt(SCARD_STATE_IGNORE))
    /// `SCARD_STATE_CHANGED`: the state differs from the one the caller knew.
    public static let changed = Self(rawValue: UInt(SCARD_STATE_CHANGED))
    /// `SCARD_STATE_UNKNOWN`: no such reader (it went away).
    public static let unknown = Self(rawValue: UInt(SCARD_STATE_UNKNOWN))
    /// `SCARD_STATE_UNAVAILABLE`: the reader's state is not available.
    public static let unavailable = Self(rawValue: UInt(SCARD_STATE_UNAVAILABLE))
    /// `SCARD_STATE_EMPTY`: no card in the reader.
    public static let empty = Self(rawValue: UInt(SCARD_STATE_EMPTY))
    /// `SCARD_STATE_PRESENT`: a card is in the reader.
    public static let present = Self(rawValue: UInt(SCARD_STATE_PRESENT))
    /// `SCARD_STATE_ATRMATCH`: the card's ATR matches the one asked for.
    public static let atrMatch = Self(rawValue: UInt(SCARD_STATE_ATRMATCH))
    /// `SCARD_STATE_EXCLUSIVE`: another application holds the card exclusively.
    public static let exclusive = Self(rawValue: UInt(SCARD_STATE_EXCLUSIVE))
    /// `SCARD_STATE_INUSE`: the card is in use (shared).
    public static let inUse = Self(rawValue: UInt(SCARD_STATE_INUSE))
    /// `SCARD_STATE_MUTE`: the card does not answer (no ATR).
    public static let mute = Self(rawValue: UInt(SCARD_STATE_MUTE))
    /// `SCARD_STATE_UNPOWERED`: the card is not powered.
    public static let unpowered = Self(rawValue: UInt(SCARD_STATE_UNPOWERED))
}

extension PCSCProtocol {
    init(raw: DWORD) {
        switch raw {
        case DWORD(SCARD_PROTOCOL_T0): self = .t0
        case DWORD(SCARD_PROTOCOL_T1): self = .t1
        case DWORD(SCARD_PROTOCOL_RAW): self = .raw
        default: self = .undefined
        }
    }

    var raw: DWORD {
        switch self {
        case .t0: DWORD(SCARD_PROTOCOL_T0)
        case .t1: DWORD(SCARD_PROTOCOL_T1)
        case .raw: DWORD(SCARD_PROTOCOL_RAW)
        case .undefined: DWORD(SCARD_PROTOCOL_UNDEFINED)
        }
    }
}

extension PCSCProtocols {
    /// `SCARD_PROTOCOL_T0`.
    public static let t0 = Self(rawValue: UInt(SCARD_PROTOCOL_T0))
    /// `SCARD_PROTOCOL_T1`.
    public static let t1 = Self(rawValue: UInt(SCARD_PROTOCOL_T1))
}

extension PCSCShareMode {
    var raw: DWORD {
        switch self {
        case .shared: DWORD(SCARD_SHARE_SHARED)
        case .exclusive: DWORD(SCARD_SHARE_EXCLUSIVE)
        case .direct: DWORD(SCARD_SHARE_DIRECT)
        }
    }
}

extension PCSCDisposition {
    var raw: DWORD {
        switch self {
        case .leave: DWORD(SCARD_LEAVE_CARD)
        case .reset: DWORD(SCARD_RESET_CARD)
        case .unpower: DWORD(SCARD_UNPOWER_CARD)
        case .eject: DWORD(SCARD_EJECT_CARD)
        }
    }
}

extension PCSCCard.Status.CardState {
    init(raw: DWORD) {
        var s: Self = []
        if raw & DWORD(SCARD_ABSENT) != 0 { s.insert(.absent) }
        if raw & DWORD(SCARD_PRESENT) != 0 { s.insert(.present) }
        if raw & DWORD(SCARD_SWALLOWED) != 0 { s.insert(.swallowed) }
        if raw & DWORD(SCARD_POWERED) != 0 { s.insert(.powered) }
        if raw & DWORD(SCARD_NEGOTIABLE) != 0 { s.insert(.negotiable) }
        if raw & DWORD(SCARD_SPECIFIC) != 0 { s.insert(.specific) }
        self = s
    }
}

// MARK: - The test hook

/// One libpcsclite function, named as in C: for the test hook and for error messages.
public struct PCSCFunction: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    init(_ name: String) { self.name = name }
    public var description: String { name }

    public static let establishContext = PCSCFunction("SCardEstablishContext")
    public static let releaseContext = PCSCFunction("SCardReleaseContext")
    public static let listReaders = PCSCFunction("SCardListReaders")
    public static let getStatusChange = PCSCFunction("SCardGetStatusChange")
    public static let cancel = PCSCFunction("SCardCancel")
    public static let connect = PCSCFunction("SCardConnect")
    public static let reconnect = PCSCFunction("SCardReconnect")
    public static let disconnect = PCSCFunction("SCardDisconnect")
    public static let beginTransaction = PCSCFunction("SCardBeginTransaction")
    public static let status = PCSCFunction("SCardStatus")
    public static let transmit = PCSCFunction("SCardTransmit")
}

// Test hooks: internal (tests reach them through `@testable import PCSC`); the switch that turns
// them on is compiled in debug builds only, like swift-system's mocking.

/// Return codes to force at the C edge, per function, instead of calling libpcsclite (tests).
///
/// Each call of a listed function takes the next code of its list; the last code of a list stays
/// in force. A forced call never reaches libpcsclite: a forced `.success` leaves the outputs
/// empty (no readers, handle 0, an empty response).
final class PCSCForcedResults: Sendable {
    private let table: Mutex<[PCSCFunction: [PCSCError.Code]]>

    init(_ results: [PCSCFunction: [PCSCError.Code]]) {
        table = Mutex(results)
    }

    /// The code to return for one call of `function`, or nil to call libpcsclite.
    func next(_ function: PCSCFunction) -> PCSCError.Code? {
        table.withLock { t in
            guard var list = t[function], let first = list.first else { return nil }
            if list.count > 1 { list.removeFirst(); t[function] = list }
            return first
        }
    }
}

#if DEBUG
/// The way to force PC/SC return codes in tests: contexts established while
/// ``forcedResults`` is bound keep those forced results for their whole life.
///
/// ```swift
/// try await PCSCTestHook.$forcedResults.withValue(PCSCForcedResults([.establishContext: [.noService]])) {
///     try await PCSCContext.establish()   // throws PCSCError(.noService)
/// }
/// ```
enum PCSCTestHook {
    @TaskLocal static var forcedResults: PCSCForcedResults?
}
#endif

// MARK: - The calls

/// A raw reader state for `SCardGetStatusChange`, kept in Swift types between calls.
struct RawReaderState: Sendable {
    var reader: String
    var currentState: UInt
    var eventState: UInt = 0
    var atr: [UInt8] = []
}

/// Every call into libpcsclite. Each call runs on the thread that owns its context (see
/// ``PCSCThread``), except ``cancel(_:)``, the one call that may cross threads.
/// `SCardCancel` is the one call made from another thread than the context's. It must never run
/// beside that context's `SCardReleaseContext`, nor beside libpcsclite's own clean-up at process
/// exit (both free what it reads: a Ctrl-C'd `readers --watch` crashed in `SCardCancel` once in
/// tens of runs, the watch having ended and the process exiting while the cancel was still in
/// pcscd). One lock orders the three; the exit handler takes it before the library's destructors
/// run (atexit handlers run before them) and leaves every later cancel a no-op.
///
/// No other call may run beside that clean-up either: `tapemu bench --reader` crashed in
/// libpcsclite once in ~90 runs when the channel's `SCardDisconnect`, queued as the command
/// ended, ran on the context's thread while the main thread was already in `exit`. So every call
/// is counted in flight (``call(refused:_:)``); the exit handler refuses new ones (they return
/// `SCARD_E_CANCELLED` without touching the library), cancels the waits of every live context,
/// and waits — at most ``exitWait`` — for those in flight to come out.
enum CrossThreadCalls {
    struct State {
        var released: Set<SCARDCONTEXT> = []
        /// Contexts established and not yet released.
        var live: Set<SCARDCONTEXT> = []
    }
    /// Taken first when a context is established, which registers the exit handler.
    static let state: Mutex<State> = {
        atexit { CrossThreadCalls.processExits() }
        return Mutex(State())
    }()
    /// Calls into libpcsclite under way, counted without a lock (this is on every exchange's path).
    private static let gate = CallGate()
    /// How long the exit waits for calls in flight (a transmit to a mute card may never return).
    static let exitWait = DispatchTimeInterval.milliseconds(500)

    /// Whether the process is exiting (no call may touch the library any more).
    static var isExiting: Bool { gate.isExiting }

    /// Runs `body`, a call into libpcsclite, unless the process is exiting: then returns
    /// `refused` without touching the library.
    static func call<T>(refused: T, _ body: () -> T) -> T {
        let admitted = gate.enter()
        defer { gate.leave() }
        guard admitted else { return refused }
        return body()
    }

    /// The exit handler: no new calls; blocked waits cancelled; calls in flight awaited (bounded).
    private static func processExits() {
        let inFlight = state.withLock { s -> Int in
            let n = gate.beginExit()
            if n > 0 {
                for context in s.live where !s.released.contains(context) { _ = SCardCancel(context) }
            }
            return n
        }
        if inFlight > 0 { _ = gate.waitDrained(until: .now() + exitWait) }
    }
}

/// The count of calls into libpcsclite under way, and whether the process is exiting, for
/// ``CrossThreadCalls``: either a call sees the exit and stays out, or the exit sees the call
/// and waits for it to come out.
///
/// One atomic word holds both (the count, and ``exitingBit``), so a call's coming out and "was
/// it the last one since the exit began?" are one operation. With a count and a flag apart,
/// read after the decrement, a call could come out first (count 0), another come in (count 1,
/// not exiting yet), the exit begin and see it — and the first, reading the flag only then,
/// tell the exit the calls had drained while the other was still in the library.
final class CallGate: Sendable {
    /// Set in ``word`` once the exit began; the bits below it count the calls.
    static let exitingBit = 1 << 62
    private let word = Atomic<Int>(0)
    /// Signalled when the count comes back to zero after the exit began.
    private let drained = DispatchSemaphore(value: 0)

    var isExiting: Bool { word.load(ordering: .sequentiallyConsistent) & Self.exitingBit != 0 }

    /// Counts a call in; returns whether it may touch the library (not once the exit began).
    /// Either way ``leave(afterCount:)`` counts it out.
    @inline(__always)
    func enter() -> Bool {
        word.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue & Self.exitingBit == 0
    }

    /// Counts a call out; the last one out after the exit began signals it. `afterCount` runs
    /// once the count went down (tests: what another thread does at that point).
    @inline(__always)
    func leave(afterCount: () -> Void = {}) {
        let last = word.wrappingSubtract(1, ordering: .sequentiallyConsistent).newValue == Self.exitingBit
        afterCount()
        if last { drained.signal() }
    }

    /// The exit begins: every call from now on is refused. Returns how many are in flight.
    func beginExit() -> Int {
        word.bitwiseOr(Self.exitingBit, ordering: .sequentiallyConsistent).oldValue & ~Self.exitingBit
    }

    /// Waits, at most until `deadline`, until the calls in flight when the exit began are out;
    /// returns whether they are.
    func waitDrained(until deadline: DispatchTime) -> Bool { drained.wait(timeout: deadline) == .success }
}

struct PCSCLite: Sendable {
    /// Forced return codes (tests), or nil.
    let forced: PCSCForcedResults?
    /// The response buffer of `SCardTransmit`, kept from call to call (the calls of one context
    /// run on its thread, one at a time: the lock is never contended).
    private let responseBuffer = ResponseBuffer()

    private final class ResponseBuffer: Sendable {
        let bytes = Mutex([UInt8](repeating: 0, count: PCSCLite.maxResponseSize))
    }

    init(forced: PCSCForcedResults?) { self.forced = forced }

    /// The largest response pcsc-lite can return: `MAX_BUFFER_SIZE_EXTENDED`
    /// (4 + 3 + 65536 + 3 + 2; the macro is an expression Swift cannot import).
    static let maxResponseSize = 4 + 3 + (1 << 16) + 3 + 2
    /// `INFINITE` for `SCardGetStatusChange`.
    static let infinite = DWORD(INFINITE)
    /// The reader name that reports readers being added or removed.
    static let plugAndPlayReader = "\\\\?PnP?\\Notification"

    /// The one checker: a pcsc-lite return value to success or a typed error.
    static func check(_ rv: LONG, _ function: PCSCFunction) throws(PCSCError) {
        guard rv != SCARD_S_SUCCESS else { return }
        throw PCSCError(PCSCError.Code(rv), function: function)
    }

    /// The forced code for `function`, as a LONG, or nil to make the real call.
    private func forcedCode(_ function: PCSCFunction) -> LONG? {
        forced?.next(function).map { LONG($0.rawValue) }
    }

    func establishContext() throws(PCSCError) -> SCARDCONTEXT {
        if let rv = forcedCode(.establishContext) {
            try Self.check(rv, .establishContext)
            return 0
        }
        var context: SCARDCONTEXT = 0
        // The first use of the state registers the exit handler, before the library is in use.
        CrossThreadCalls.state.withLock { _ in }
        let rv = CrossThreadCalls.call(refused: LONG(SCARD_E_CANCELLED)) {
            let rv = SCardEstablishContext(DWORD(SCARD_SCOPE_SYSTEM), nil, nil, &context)
            if rv == SCARD_S_SUCCESS {
                CrossThreadCalls.state.withLock { s in
                    s.released.remove(context)
                    s.live.insert(context)
                }
            }
            return rv
        }
        try Self.check(rv, .establishContext)
        return context
    }

    func releaseContext(_ context: SCARDCONTEXT) {
        if forcedCode(.releaseContext) != nil { return }
        CrossThreadCalls.call(refused: ()) {
            CrossThreadCalls.state.withLock { s in
                s.released.insert(context)
                s.live.remove(context)
                _ = SCardReleaseContext(context)
            }
        }
    }

    /// Reader names; an empty list when there are none (`SCARD_E_NO_READERS_AVAILABLE`).
    func listReaders(_ context: SCARDCONTEXT) throws(PCSCError) -> [String] {
        if let rv = forcedCode(.listReaders) {
            if rv == SCARD_E_NO_READERS_AVAILABLE { return [] }
            try Self.check(rv, .listReaders)
            return []
        }
        // The list can grow between the two calls: retry on a too-small buffer.
        for _ in 0..<8 {
            var length: DWORD = 0
            var rv = CrossThreadCalls.call(refused: LONG(SCARD_E_CANCELLED)) { SCardListReaders(context, nil, nil, &length) }
            if rv == SCARD_E_NO_READERS_AVAILABLE { return [] }
            try Self.check(rv, .listReaders)
            var buffer = [CChar](repeating: 0, count: Int(length) + 1)
            rv = CrossThreadCalls.call(refused: LONG(SCARD_E_CANCELLED)) { SCardListReaders(context, nil, &buffer, &length) }
            if rv == SCARD_E_INSUFFICIENT_BUFFER { continue }
            if rv == SCARD_E_NO_READERS_AVAILABLE { return [] }
            try Self.check(rv, .listReaders)
            return Self.multiString(buffer.prefix(Int(length)))
        }
        throw PCSCError(.insufficientBuffer, function: .listReaders)
    }

    /// Splits a `\0`-separated, `\0\0`-terminated list.
    static func multiString(_ chars: some Collection<CChar>) -> [String] {
        chars.split(separator: 0, omittingEmptySubsequences: true).map { part in
            String(decoding: part.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// Blocks until a state differs from `states`' current states, or `timeoutMilliseconds`.
    /// Updates each state's event state and ATR. Returns the raw code (timeout and cancel are
    /// normal outcomes here; the caller checks).
    func getStatusChange(_ context: SCARDCONTEXT, timeoutMilliseconds: DWORD,
                         _ states: inout [RawReaderState]) -> LONG {
        if let rv = forcedCode(.getStatusChange) { return rv }
        guard !states.isEmpty else { return LONG(SCARD_E_INVALID_PARAMETER) }
        let names = states.map { strdup($0.reader) }
        defer { for n in names { free(n) } }
        var c = [SCARD_READERSTATE](repeating: SCARD_READERSTATE(), count: states.count)
        for i in states.indices {
            c[i].szReader = UnsafePointer(names[i])
            c[i].dwCurrentState = DWORD(states[i].currentState)
        }
        let rv = CrossThreadCalls.call(refused: LONG(SCARD_E_CANCELLED)) {
            SCardGetStatusChange(context, timeoutMilliseconds, &c, DWORD(c.count))
        }
        if rv == SCARD_S_SUCCESS {
            for i in states.indices {
                states[i].eventState = UInt(c[i].dwEventState)
                let count = min(Int(c[i].cbAtr), MemoryLayout.size(ofValue: c[i].rgbAtr))
                states[i].atr = withUnsafeBytes(of: c[i].rgbAtr) { Array($0.prefix(count)) }
            }
        }
        return rv
    }

    /// Ends a blocked `SCardGetStatusChange` on `context`. The one call that may be made from
    /// another thread than the context's.
    func cancel(_ context: SCARDCONTEXT) {
        if forcedCode(.cancel) != nil { return }
        CrossThreadCalls.state.withLock { s in
            // After its release (or once the process is exiting) the handle is gone: libpcsclite
            // would look it up in a list another thread is freeing.
            guard !CrossThreadCalls.isExiting, !s.released.contains(context) else { return }
            _ = SCardCancel(context)
        }
    }

    func connect(_ context: SCARDCONTEXT, reader: String, share: PCSCShareMode,
                 protocols: PCSCProtocols) throws(PCSCError) -> (handle: SCARDHANDLE, protocol: PCSCProtocol) {
        if let rv = forcedCode(.connect) {
            try Self.check(rv, .connect)
            return (0, protocols.contains(.t1) ? .t1 : .t0)
        }
        var handle: SCARDHANDLE = 0
        var active: DWORD = 0
        let rv = CrossThreadCalls.call(refused: LONG(SCARD_E_CANCELLED)) {
            SCardConnect(context, reader, share.raw, DWORD(protocols.rawValue), &handle, &active)
        }
        try Self.check(rv, .connect)
        return (handle, PCSCProtocol(raw: active))
    }

    func reconnect(_ handle: SCARDHANDLE, share: PCSCShareMode, protocols: PCSCProtocols,
                   initialization: PCSCDisposition) throws(PCSCError) -> PCSCProtocol {
        if let rv = forcedCode(.reconnect) {
            try Self.check(rv, .reconnect)
            return protocols.contains(.t1) ? .t1 : .t0
        }
        var active: DWORD = 0
        let rv = CrossThreadCalls.call(refused: LONG(SCARD_E_CANCELLED)) {
            SCardReconnect(handle, share.raw, DWORD(protocols.rawValue), initialization.raw, &active)
        }
        try Self.check(rv, .reconnect)
        return PCSCProtocol(raw: active)
    }

    /// `SCardBeginTransaction`: the card is this handle's alone (other connections' commands get
    /// `SCARD_E_SHARING_VIOLATION`) until `SCardDisconnect`. libpcsclite waits, polling, while
    /// another connection holds it.
    func beginTransaction(_ handle: SCARDHANDLE) throws(PCSCError) {
        if let rv = forcedCode(.beginTransaction) {
            try Self.check(rv, .beginTransaction)
            return
        }
        try Self.check(CrossThreadCalls.call(refused: LONG(SCARD_E_CANCELLED)) { SCardBeginTransaction(handle) },
                       .beginTransaction)
    }

    func disconnect(_ handle: SCARDHANDLE, _ disposition: PCSCDisposition) throws(PCSCError) {
        if let rv = forcedCode(.disconnect) {
            try Self.check(rv, .disconnect)
            return
        }
        try Self.check(CrossThreadCalls.call(refused: LONG(SCARD_E_CANCELLED)) { SCardDisconnect(handle, disposition.raw) },
                       .disconnect)
    }

    func status(_ handle: SCARDHANDLE) throws(PCSCError) -> PCSCCard.Status {
        if let rv = forcedCode(.status) {
            try Self.check(rv, .status)
            return PCSCCard.Status(readerName: "", state: [], protocol: .undefined, atr: [])
        }
        var name = [CChar](repeating: 0, count: Int(MAX_READERNAME) + 1)
        var nameLength = DWORD(name.count)
        var state: DWORD = 0
        var proto: DWORD = 0
        var atr = [UInt8](repeating: 0, count: Int(MAX_ATR_SIZE))
        var atrLength = DWORD(atr.count)
        let rv = CrossThreadCalls.call(refused: LONG(SCARD_E_CANCELLED)) {
            SCardStatus(handle, &name, &nameLength, &state, &proto, &atr, &atrLength)
        }
        try Self.check(rv, .status)
        return PCSCCard.Status(readerName: Self.multiString(name.prefix(Int(nameLength))).first ?? "",
                               state: PCSCCard.Status.CardState(raw: state),
                               protocol: PCSCProtocol(raw: proto),
                               atr: Array(atr.prefix(Int(atrLength))))
    }

    func transmit(_ handle: SCARDHANDLE, protocol: PCSCProtocol, _ command: [UInt8]) throws(PCSCError) -> [UInt8] {
        try command.withUnsafeBufferPointer { c throws(PCSCError) in try transmit(handle, protocol: `protocol`, bytes: c) }
    }

    /// `SCardTransmit` of `apdu`, encoded on the stack: no array for the command (this is on
    /// every exchange's path).
    func transmit(_ handle: SCARDHANDLE, protocol: PCSCProtocol, apdu: CommandAPDU) throws(PCSCError) -> [UInt8] {
        let count = apdu.encodedCount
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer throws(PCSCError) in
            let written = apdu.encode(into: buffer)
            return try transmit(handle, protocol: `protocol`, bytes: UnsafeBufferPointer(rebasing: buffer[..<written]))
        }
    }

    private func transmit(_ handle: SCARDHANDLE, protocol: PCSCProtocol, bytes command: UnsafeBufferPointer<UInt8>) throws(PCSCError) -> [UInt8] {
        if let rv = forcedCode(.transmit) {
            try Self.check(rv, .transmit)
            return []
        }
        var pci = SCARD_IO_REQUEST(dwProtocol: UInt(`protocol`.raw),
                                   cbPciLength: UInt(MemoryLayout<SCARD_IO_REQUEST>.size))
        let (rv, response) = responseBuffer.bytes.withLock { buffer -> (LONG, [UInt8]) in
            var length = DWORD(buffer.count)
            let rv = CrossThreadCalls.call(refused: LONG(SCARD_E_CANCELLED)) {
                SCardTransmit(handle, &pci, command.baseAddress, DWORD(command.count), nil, &buffer, &length)
            }
            guard rv == SCARD_S_SUCCESS else { return (rv, []) }
            // One copy of exactly the answer's bytes, from a buffer pointer: an array made with
            // `unsafeUninitializedCapacity` looked its storage type up at run time, per exchange.
            let count = min(Int(length), buffer.count)
            return (rv, buffer.withUnsafeBufferPointer { Array(UnsafeBufferPointer(rebasing: $0[..<count])) })
        }
        try Self.check(rv, .transmit)
        return response
    }
}
