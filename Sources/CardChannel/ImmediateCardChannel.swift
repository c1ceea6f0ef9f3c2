public import ISO7816

/// A channel that can often answer on the spot, without awaiting anything: an in-process card,
/// an unpaced replay. ``CardSession`` asks it first and races its per-APDU deadline (two tasks)
/// only against an answer that needs waiting, so an in-process read makes no task hops.
public protocol ImmediateCardChannel: CardChannel {
    /// Sends `command` and returns the answer when it needs no waiting, or
    /// ``ImmediateReply/later(_:)`` with what to await for it (a card that takes its time, a
    /// mute card). Either way the command has been sent: do not send it again. Throws nothing
    /// itself: a failure is ``ImmediateReply/failure(_:)``, with the codes ``CardChannel`` lists.
    func transmitImmediately(_ command: CommandAPDU) -> ImmediateReply
}

/// What ``ImmediateCardChannel/transmitImmediately(_:)`` gives.
public enum ImmediateReply: Sendable {
    /// The answer, at once.
    case response(ResponseAPDU)
    /// The failure, at once.
    case failure(CardChannelError)
    /// The answer needs waiting: await this (it returns promptly when its task is cancelled).
    case later(@Sendable () async throws(CardChannelError) -> ResponseAPDU)
}

extension ImmediateReply {
    /// The answer, awaited when it needs waiting.
    public func get() async throws(CardChannelError) -> ResponseAPDU {
        switch self {
        case .response(let r): return r
        case .failure(let e): throw e
        case .later(let wait): return try await wait()
        }
    }
}
