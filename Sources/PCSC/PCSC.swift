public import CardChannel
import ISO7816
public import Timing

/// The PC/SC entry points the command line and the payment flow use.
public enum PCSC {
    /// Connects to pcscd, picks the reader `query` designates (see ``ReaderSelection``), waits up
    /// to `wait` for a card in it, connects holding the card in a transaction (another program
    /// using it is waited for, within `wait`; none may come between our commands until the
    /// channel closes), and checks that the card can carry APDUs.
    ///
    /// - Throws: `.noService` (pcscd not running, with a hint to start it), `.noReader` (no reader,
    ///   none matching, ambiguous), `.noCard` (nothing presented in time), `.cancelled`,
    ///   `.readerRemoved`, `.cardRemoved`, `.sharingViolation`, `.notAPaymentCard` (a storage
    ///   tag such as MIFARE Classic or Ultralight), `.timeout` when the card came but
    ///   `SCardConnect` did not return within `wait` (pcscd's reader blocked on a mute card).
    /// - Parameter holdingCard: whether the channel holds the card in a transaction (the default);
    ///   false only for a program that must reach the card through other connections beside this
    ///   one (tapemu-bench's comparison loops), whose commands a transaction would refuse.
    public static func openChannel(reader query: String, wait: Duration,
                                   clock: MonotonicClock = .continuous,
                                   share: PCSCShareMode = .shared,
                                   holdingCard: Bool = true) async throws(CardChannelError) -> PCSCCardChannel {
        let context = try await establish()
        let reader = try await resolve(query, context: context)
        // One deadline for the card to come and to let us connect to it.
        let deadline = clock.now + wait
        let state: ReaderState
        do {
            state = try await context.waitForCard(in: reader, timeout: wait, clock: clock)
        } catch {
            if error.code == .timeout {
                let last = try? await context.states(of: [reader]).first
                let why = last?.isMute == true
                    ? "a card is in the field of \(reader) but does not answer (mute)"
                    : "no card was presented to \(reader) within \(wait)"
                throw CardChannelError(.noCard, why, detail: error.code.name)
            }
            throw CardChannelError(error, during: .waitingForCard, reader: reader)
        }
        let card: PCSCCard
        do {
            // Held for the channel's life: a read is a sequence no other program may break into.
            card = try await context.connect(to: reader, share: share, transaction: holdingCard, deadline: deadline, clock: clock)
        } catch where error.code == .timeout {
            throw CardChannelError(.timeout, "the card did not let us connect within \(wait): it is mute, another "
                                   + "program is using it, or the reader is still held by an exchange it never answered (\(reader))",
                                   detail: error.code.name)
        } catch {
            throw CardChannelError(error, during: .connecting, reader: reader)
        }
        let channel = PCSCCardChannel(card: card, openedState: state)
        if case .storage = channel.readerATR.kind {
            channel.close()
            throw CardChannelError(.notAPaymentCard,
                                   "the card in \(reader) is a \(channel.readerATR), not a payment card",
                                   detail: Hex.encode(channel.atr))
        }
        return channel
    }

    /// Every reader pcscd knows, in its order, with its state and what its ATR says.
    public static func readerReport() async throws(CardChannelError) -> [ReaderReport] {
        let context = try await establish()
        do {
            let states = try await context.readerStates()
            return states.enumerated().map { ReaderReport(index: $0.offset, state: $0.element) }
        } catch {
            throw CardChannelError(error, during: .service)
        }
    }

    static func establish() async throws(CardChannelError) -> PCSCContext {
        do {
            return try await PCSCContext.establish()
        } catch {
            throw CardChannelError(error, during: .service)
        }
    }

    static func resolve(_ query: String, context: PCSCContext) async throws(CardChannelError) -> String {
        let readers: [String]
        do {
            readers = try await context.readers()
        } catch {
            throw CardChannelError(error, during: .service)
        }
        do {
            return try ReaderSelection.resolve(query, among: readers)
        } catch {
            let hint: String? = switch error {
            case .noReaders: PCSCError(.noReadersAvailable, function: .listReaders).hint
            default: "see `tapemu readers`"
            }
            throw CardChannelError(.noReader, error.description, hint: hint)
        }
    }
}

/// One reader in ``PCSC/readerReport()``.
public struct ReaderReport: Sendable, Hashable {
    /// Its position in pcscd's list (what `--reader INDEX` takes).
    public var index: Int
    public var state: ReaderState
    public var name: String { state.reader }
    /// What the card's ATR says, when a card is present.
    public var readerATR: ReaderATR? { state.atr.isEmpty ? nil : ReaderATR(state.atr) }
    /// The reader's name says it is a contactless interface.
    public var isContactless: Bool { ReaderSelection.isContactless(name) }

    public init(index: Int, state: ReaderState) {
        self.index = index
        self.state = state
    }
}

/// A ``CardSource`` over a PC/SC reader: `--reader NAME|SUBSTRING|INDEX`.
public struct PCSCCardSource: CardSource {
    /// The reader as the user gave it (name, unique substring or index).
    public let query: String
    public let share: PCSCShareMode

    public init(reader query: String, share: PCSCShareMode = .shared) {
        self.query = query
        self.share = share
    }

    public var name: String { query }

    public func waitForCard(timeout: Duration, clock: MonotonicClock) async throws(CardChannelError) -> any CardChannel {
        try await PCSC.openChannel(reader: query, wait: timeout, clock: clock, share: share)
    }
}
