import Timing
import CardChannel
import PCSC
import CoreAPI

/// The reader `--reader` names, followed through pcscd: connected while pcscd has a reader that
/// matches, unavailable (no reader, pcscd not running) otherwise. Waits on
/// `SCardGetStatusChange` with the plug-and-play pseudo reader, so attach and detach are events,
/// not polls; when pcscd itself is down it checks again every ``retryInterval`` on ``clock``.
struct PCSCDeviceMonitor: CoreDeviceMonitor {
    let query: String
    /// The clock of the wait between two tries while pcscd is down (a test moves a ManualClock).
    var clock: MonotonicClock = .continuous
    /// How long to wait before trying pcscd again.
    var retryInterval: Duration = .seconds(1)

    func currentStatus() async -> CoreDeviceStatus {
        let context: PCSCContext
        do {
            context = try await PCSCContext.establish()
        } catch {
            return Self.unavailable(CardChannelError(error, during: .service))
        }
        return await status(in: context).status
    }

    private func status(in context: PCSCContext) async -> (status: CoreDeviceStatus, states: [ReaderState]) {
        let states: [ReaderState]
        do {
            states = try await context.readerStates()
        } catch {
            return (Self.unavailable(CardChannelError(error, during: .service)), [])
        }
        do {
            let name = try ReaderSelection.resolve(query, among: states.map(\.reader))
            return (.connected(info: ["reader": name, "interface": "pcsc"]), states)
        } catch {
            return (.unavailable(.noReader, description: error.description), states)
        }
    }

    private static func unavailable(_ error: CardChannelError) -> CoreDeviceStatus {
        .unavailable(CoreDeviceError(error) ?? .serviceUnavailable, description: error.description)
    }

    func waitForChange(from known: CoreDeviceStatus) async throws -> CoreDeviceStatus {
        while true {
            try Task.checkCancellation()
            let context: PCSCContext
            do {
                context = try await PCSCContext.establish()
            } catch {
                let now = Self.unavailable(CardChannelError(error, during: .service))
                if now != known { return now }
                // pcscd is down: nothing to wait on but time (on the injected clock).
                try await clock.sleep(for: retryInterval)
                continue
            }
            var (now, states) = await status(in: context)
            while now == known {
                let woke: [ReaderState]
                do {
                    woke = try await context.waitForChange(from: states, watchReaderList: true)
                } catch {
                    if error.code == .cancelled { throw CancellationError() }
                    break   // pcscd went away or the context broke: start again
                }
                // Fresh states for the readers there now, and the plug-and-play entry as it woke.
                let fresh: [ReaderState]
                (now, fresh) = await status(in: context)
                states = fresh + woke.filter(\.isPlugAndPlay)
            }
            if now != known { return now }
        }
    }
}
