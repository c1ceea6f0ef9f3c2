import Synchronization

/// A network fault the service injects into authorisations, on demand (`tapemu gateway serve
/// --fault`, or `POST /admin/faults`), so a terminal's submission-point logic meets real TCP
/// failures.
///
/// | Fault | Ledger | What the client sees |
/// |-------|--------|----------------------|
/// | `delay:MS` | records after the delay | the answer, late (a timeout if the client's is shorter) |
/// | `error-before-commit` | **nothing recorded** | HTTP 503 |
/// | `error-after-commit` | recorded | HTTP 500 |
/// | `close-after-commit` | recorded | the connection closes without a status line (lost answer) |
/// | `stall-mid-body` | recorded | status, headers and half the body, then silence until the server's connection timeout |
/// | `kill-after-commit` | recorded (durably) | the server process dies by SIGKILL before answering |
/// | `kill-mid-batch` | **nothing of the batch** | the process dies by SIGKILL inside a group commit of two or more authorisations, after writing them, before COMMIT (it prints their orderIds first); every client of the batch loses its connection |
public enum ServerFault: Sendable, Hashable, CustomStringConvertible {
    case delay(Duration)
    case errorBeforeCommit
    case errorAfterCommit
    case closeAfterCommit
    case stallMidBody
    case killAfterCommit
    case killMidBatch

    public static let names = ["delay:MS", "error-before-commit", "error-after-commit", "close-after-commit",
                               "stall-mid-body", "kill-after-commit", "kill-mid-batch"]

    /// A fault from its name (`delay:250` is 250 ms); nil for anything else.
    public init?(name: String) {
        switch name {
        case "error-before-commit": self = .errorBeforeCommit
        case "error-after-commit": self = .errorAfterCommit
        case "close-after-commit": self = .closeAfterCommit
        case "stall-mid-body": self = .stallMidBody
        case "kill-after-commit": self = .killAfterCommit
        case "kill-mid-batch": self = .killMidBatch
        default:
            guard name.hasPrefix("delay:"), let ms = Int(name.dropFirst(6)), (0...600_000).contains(ms) else { return nil }
            self = .delay(.milliseconds(ms))
        }
    }

    public var name: String {
        switch self {
        case .delay(let d):
            return "delay:\(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)"
        case .errorBeforeCommit: return "error-before-commit"
        case .errorAfterCommit: return "error-after-commit"
        case .closeAfterCommit: return "close-after-commit"
        case .stallMidBody: return "stall-mid-body"
        case .killAfterCommit: return "kill-after-commit"
        case .killMidBatch: return "kill-mid-batch"
        }
    }

    public var description: String { name }
}

/// The faults armed on a service: some for a number of authorisations (taken first, in order),
/// and standing ones that hit every authorisation until cleared.
final class FaultInjector: Sendable {
    private struct State {
        var counted: [(fault: ServerFault, remaining: Int)] = []
        var standing: ServerFault?
    }
    private let state: Mutex<State>

    init(standing: ServerFault?) { state = Mutex(State(standing: standing)) }

    func arm(_ fault: ServerFault, count: Int?) {
        state.withLock { s in
            if let count { s.counted.append((fault, max(1, count))) } else { s.standing = fault }
        }
    }

    func clear() { state.withLock { $0 = State() } }

    /// The fault for the next authorisation (consumed when counted). A counted `kill-mid-batch`
    /// is not an authorisation's: it stays armed for the group commit that meets it (the
    /// service's before-commit hook), so the authorisations before a batch of two or more
    /// forms do not use it up.
    func take() -> ServerFault? {
        state.withLock { s -> ServerFault? in
            if let i = s.counted.firstIndex(where: { $0.fault != .killMidBatch }) {
                let f = s.counted[i].fault
                s.counted[i].remaining -= 1
                if s.counted[i].remaining <= 0 { s.counted.remove(at: i) }
                return f
            }
            return s.standing
        }
    }

    var armed: (counted: [(fault: ServerFault, remaining: Int)], standing: ServerFault?) {
        state.withLock { ($0.counted, $0.standing) }
    }
}
