public import CardChannel

/// Something that happened to a reader or its card, as `pcsc_scan` reports it.
public struct ReaderEvent: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A reader was plugged in (or pcscd started its driver).
        case readerAdded
        /// A reader was unplugged (or its driver went away).
        case readerRemoved
        /// A card came into the field and answered to reset: ``ReaderEvent/report`` has its ATR.
        case cardInserted
        /// The card left the field.
        case cardRemoved
        /// A card is in the field but does not answer to reset.
        case cardMute
    }

    public var kind: Kind
    /// The reader as it is after the event (as it was, for ``Kind/readerRemoved``).
    public var report: ReaderReport

    public init(_ kind: Kind, _ report: ReaderReport) {
        self.kind = kind
        self.report = report
    }

    /// What happened between two views of pcscd's readers (each in pcscd's order), in the
    /// order of the readers: readers that went away first, then each reader's card events.
    /// A card swapped between two looks (pcscd's event counter moved on while a card stayed
    /// present) is a removal and an insertion.
    public static func changes(from old: [ReaderState], to new: [ReaderState]) -> [ReaderEvent] {
        let old = old.filter { !$0.isPlugAndPlay }, new = new.filter { !$0.isPlugAndPlay }
        var events: [ReaderEvent] = []
        let present = Set(new.filter { !$0.isGone }.map(\.reader))
        for (index, state) in old.enumerated() where !state.isGone && !present.contains(state.reader) {
            let report = ReaderReport(index: index, state: state)
            if state.flags.contains(.present) { events.append(ReaderEvent(.cardRemoved, report)) }
            events.append(ReaderEvent(.readerRemoved, report))
        }
        for (index, state) in new.enumerated() where !state.isGone {
            let report = ReaderReport(index: index, state: state)
            guard let before = old.first(where: { $0.reader == state.reader && !$0.isGone }) else {
                events.append(ReaderEvent(.readerAdded, report))
                if let card = cardEvent(state) { events.append(ReaderEvent(card, report)) }
                continue
            }
            let had = before.flags.contains(.present), has = state.flags.contains(.present)
            switch (had, has) {
            case (false, false):
                break
            case (true, false):
                events.append(ReaderEvent(.cardRemoved, report))
            case (false, true):
                if let card = cardEvent(state) { events.append(ReaderEvent(card, report)) }
            case (true, true):
                if before.eventCount != state.eventCount {
                    events.append(ReaderEvent(.cardRemoved, ReaderReport(index: index, state: before)))
                    if let card = cardEvent(state) { events.append(ReaderEvent(card, report)) }
                } else if before.isMute != state.isMute, let card = cardEvent(state) {
                    events.append(ReaderEvent(card, report))   // a mute card answered after all, or fell mute
                }
            }
        }
        return events
    }

    private static func cardEvent(_ state: ReaderState) -> Kind? {
        guard state.flags.contains(.present) else { return nil }
        return state.isMute ? .cardMute : .cardInserted
    }
}

/// `pcsc_scan`'s loop over pcscd: a first view of every reader, then, each time something
/// changes, what changed. Waits on `SCardGetStatusChange` with the plug-and-play pseudo reader,
/// so readers plugged in or out are events too; nothing is polled.
///
/// ```swift
/// var watch = try await ReaderWatch.start()
/// print(watch.readers)
/// while true { for event in try await watch.next() { print(event) } }
/// ```
public struct ReaderWatch: Sendable {
    private let context: PCSCContext
    private var states: [ReaderState]
    /// The plug-and-play pseudo reader as it last woke (its reader count), when it did.
    private var plugAndPlay: ReaderState?

    /// The readers as last seen, in pcscd's order.
    public var readers: [ReaderReport] {
        states.enumerated().map { ReaderReport(index: $0.offset, state: $0.element) }
    }

    /// Connects to pcscd and takes the first view.
    ///
    /// - Throws: `.noService` when pcscd is not running, and pcscd's other errors.
    public static func start() async throws(CardChannelError) -> ReaderWatch {
        let context = try await PCSC.establish()
        do {
            return ReaderWatch(context: context, states: try await context.readerStates(), plugAndPlay: nil)
        } catch {
            throw CardChannelError(error, during: .service)
        }
    }

    /// Waits until something happens to a reader or a card, and returns what happened (never
    /// empty). Changes pcscd reports that are no event here (a program connecting to a card)
    /// are absorbed.
    ///
    /// - Throws: `.cancelled` when the task is cancelled (promptly), `.noService` when pcscd
    ///   stops, and pcscd's other errors.
    public mutating func next() async throws(CardChannelError) -> [ReaderEvent] {
        while true {
            let woke: [ReaderState]
            do {
                woke = try await context.waitForChange(from: states + (plugAndPlay.map { [$0] } ?? []),
                                                       watchReaderList: true)
                // Fresh states of the readers there now: a reader list change is in the list.
                let fresh = try await context.readerStates()
                plugAndPlay = woke.first(where: \.isPlugAndPlay)
                let events = ReaderEvent.changes(from: states, to: fresh)
                states = fresh
                if !events.isEmpty { return events }
            } catch {
                throw CardChannelError(error, during: .service)
            }
        }
    }
}
