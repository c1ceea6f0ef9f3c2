public import CardChannel
import ISO7816
public import Timing

/// Runs an ``EMVKernel`` over a card: sends each command through a ``CardSession`` (which times
/// every exchange and handles 61xx / 6Cxx) and returns the ``CardRead`` with every exchange.
///
/// Errors: only ``KernelError``. A card that breaks the protocol or declines gives the kernel's
/// error; a channel failure (card removed, timeout, reader gone, cancelled) gives
/// ``KernelError/Code/channelFailed`` with the channel's error in
/// ``KernelError/channelError`` (`error.channelError?.code == .cardRemoved`). Either way
/// ``KernelError/partial`` holds what was read and every exchange, and tells whether the online
/// data had been handed out (after which the payment's outcome is unclear).
public struct EMVReader: Sendable {
    public var configuration: TerminalConfiguration
    public var environment: KernelEnvironment

    public init(configuration: TerminalConfiguration = .default, environment: KernelEnvironment = .system) {
        self.configuration = configuration
        self.environment = environment
    }

    /// Reads the card on `channel` in a new session.
    ///
    /// - Parameters:
    ///   - apduTimeout: how long each APDU may take (``CardSession``'s deadline).
    ///   - clock: the clock that times exchanges and deadlines; a ``ManualClock`` in tests.
    ///   - onOnlineDataReady: called once when the cryptogram and PAN are known before the last
    ///     exchange (qVSDC). The read waits for it to return; start long work in a task of your own.
    ///     Nil (the default): the partial read and its online data are not even built, and the
    ///     kernel reads on past the point (``EMVKernel/handsOutOnlineData``).
    public func read(channel: any CardChannel, transaction: Transaction, apduTimeout: Duration = .seconds(2),
                     clock: MonotonicClock = .continuous,
                     onOnlineDataReady: (@Sendable (PartialCardRead) async -> Void)? = nil)
        async throws(KernelError) -> CardRead
    {
        let session = CardSession(channel: channel, apduTimeout: apduTimeout, clock: clock)
        return try await read(session: session, transaction: transaction, onOnlineDataReady: onOnlineDataReady)
    }

    /// Reads the card of `session`. The exchanges in the result (and in an error's partial read)
    /// are those of this read only. The read runs on the channel's preferred executor
    /// (``CardSession/run(_:)``: on the PC/SC channel, the thread that owns the context).
    public func read(session: CardSession, transaction: Transaction,
                     onOnlineDataReady: (@Sendable (PartialCardRead) async -> Void)? = nil)
        async throws(KernelError) -> CardRead
    {
        try await session.run { () async throws(KernelError) -> CardRead in
            try await runKernel(session: session, transaction: transaction, onOnlineDataReady: onOnlineDataReady)
        }
    }

    private func runKernel(session: CardSession, transaction: Transaction,
                           onOnlineDataReady: (@Sendable (PartialCardRead) async -> Void)?)
        async throws(KernelError) -> CardRead
    {
        let firstExchange = session.exchangeCount
        func exchanges() -> [Exchange] { session.exchanges(from: firstExchange) }

        if session.drivesDirectly {
            return try await runKernelDirectly(session: session, transaction: transaction, onOnlineDataReady: onOnlineDataReady)
        }
        var kernel = EMVKernel(configuration: configuration, transaction: transaction, environment: environment)
        kernel.handsOutOnlineData = onOnlineDataReady != nil
        var action = kernel.start()
        while true {
            // Consumed, not copied: binding a payload of a borrowed action copied it (every
            // array of a complete read retained, then released with the action).
            switch consume action {
            case .send(let command):
                let response: ResponseAPDU
                do {
                    response = try await session.send(command)
                } catch {
                    throw Self.channelFailure(error, kernel: kernel, exchanges: exchanges())
                }
                action = kernel.receive(response)
            case .onlineDataReady(var partial):
                // With nobody to hand it to, the partial read is not given the exchanges' log.
                if let onOnlineDataReady {
                    partial.exchanges = exchanges()
                    await onOnlineDataReady(partial)
                }
                action = kernel.resume()
            case .complete(var read):
                read.exchanges = exchanges()
                return read
            case .fail(let error):
                throw Self.failure(error, exchanges: exchanges())
            }
        }
    }

    /// ``runKernel(session:transaction:onOnlineDataReady:)`` on a channel that runs exchanges as
    /// direct calls on its own thread (``CardSession/drive(from:_:)``): the kernel is fed there,
    /// each run of commands in one go, and the read waits once per run — once per read, or twice
    /// when the online data is handed out between.
    private func runKernelDirectly(session: CardSession, transaction: Transaction,
                                   onOnlineDataReady: (@Sendable (PartialCardRead) async -> Void)?)
        async throws(KernelError) -> CardRead
    {
        let firstExchange = session.exchangeCount
        func exchanges() -> [Exchange] { session.exchanges(from: firstExchange) }

        var kernel = EMVKernel(configuration: configuration, transaction: transaction, environment: environment)
        kernel.handsOutOnlineData = onOnlineDataReady != nil
        let fed = FedKernel(kernel)
        var action = fed.kernel.start()
        while true {
            switch consume action {
            case .send(let command):
                // `drive` calls this between exchanges only, and never once it has returned:
                // the kernel is the read's again after it.
                let end = await session.drive(from: command) { response in
                    let next = fed.kernel.receive(response)
                    if case .send(let command) = next { return command }
                    fed.action = next
                    return nil
                }
                switch end {
                case .stopped:
                    action = fed.action.take().unsafelyUnwrapped   // `drive` stops only when an action is left
                case .failed(let error):
                    throw Self.channelFailure(error, kernel: fed.kernel, exchanges: exchanges())
                }
            case .onlineDataReady(var partial):
                if let onOnlineDataReady {
                    partial.exchanges = exchanges()
                    await onOnlineDataReady(partial)
                }
                action = fed.kernel.resume()
            case .complete(var read):
                read.exchanges = exchanges()
                return read
            case .fail(let error):
                throw Self.failure(error, exchanges: exchanges())
            }
        }
    }
}

extension EMVReader {
    /// The read's error for a channel failure at the kernel's current step, with what was read
    /// and every exchange.
    fileprivate static func channelFailure(_ error: CardChannelError, kernel: borrowing EMVKernel,
                                           exchanges: [Exchange]) -> KernelError {
        var failure = KernelError(.channelFailed, step: kernel.currentStep ?? .ppse, "\(error)", channelError: error)
        failure.partial = kernel.partial
        failure.partial?.exchanges = exchanges
        return failure
    }

    /// The kernel's own error, with every exchange.
    fileprivate static func failure(_ error: consuming KernelError, exchanges: [Exchange]) -> KernelError {
        var error = error
        if error.partial == nil { error.partial = PartialCardRead() }
        error.partial?.exchanges = exchanges
        return error
    }
}

/// A kernel fed by ``CardSession/drive(from:_:)`` on the channel's thread, and the action it
/// stopped on. One owner at a time: the drive's pump between its exchanges, the read otherwise
/// (`drive` never calls its `next` once it has returned).
private final class FedKernel: @unchecked Sendable {
    var kernel: EMVKernel
    var action: EMVKernel.Action?

    init(_ kernel: EMVKernel) { self.kernel = kernel }
}
