public import CardChannel
public import ISO7816

/// The kind of an exchange, for timing per kind: what `tapemu bench` groups percentiles by.
public enum ExchangeKind: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case select
    case getProcessingOptions
    case readRecord
    case generateAC
    case getResponse
    /// Anything else (GET DATA, a proprietary command).
    case other

    /// The kind of `command`, by its instruction byte.
    public init(_ command: CommandAPDU) {
        self.init(instruction: command.instructionCode)
    }

    public init(instruction: UInt8) {
        switch instruction {
        case 0xA4: self = .select
        case 0xA8: self = .getProcessingOptions
        case 0xB2: self = .readRecord
        case 0xAE: self = .generateAC
        case 0xC0: self = .getResponse
        default: self = .other
        }
    }

    /// `SELECT`, `GPO`, `READ RECORD`, `GENERATE AC`, `GET RESPONSE`, `other`.
    public var description: String {
        switch self {
        case .select: "SELECT"
        case .getProcessingOptions: "GPO"
        case .readRecord: "READ RECORD"
        case .generateAC: "GENERATE AC"
        case .getResponse: "GET RESPONSE"
        case .other: "other"
        }
    }
}

/// Where one read's time went, split three ways:
/// - the **on-air floor**: what ISO 14443-A at 106 kbit/s needs for the read's bytes
///   (``ContactlessAirTime``); spent only when a radio is in the path (a real contactless
///   reader), shown for comparison otherwise;
/// - the **card's own time**, where it is known (a virtual card's card time, the recorded card
///   time of a paced trace); nil when unknown (a real card: its time is then in the rest);
/// - the **host overhead**: the rest — our code, PC/SC, the reader.
public struct ReadTiming: Hashable, Sendable {
    /// One exchange's kind and time.
    public struct ExchangeTiming: Hashable, Sendable {
        public var kind: ExchangeKind
        public var duration: Duration
        public var airFloor: Duration
        public init(kind: ExchangeKind, duration: Duration, airFloor: Duration) {
            self.kind = kind
            self.duration = duration
            self.airFloor = airFloor
        }
    }

    /// The whole read, first command out to last response in.
    public var total: Duration
    public var airFloor: Duration
    /// Whether the air time is part of ``total`` (a radio in the path).
    public var airInPath: Bool
    /// The card's own time; nil when unknown.
    public var card: Duration?
    /// Anything else to take out of the host's share, e.g. the gateway's time in a payment.
    public var other: Duration
    public var exchanges: [ExchangeTiming]

    public init(total: Duration, airFloor: Duration, airInPath: Bool, card: Duration?, other: Duration = .zero,
                exchanges: [ExchangeTiming]) {
        self.total = total
        self.airFloor = airFloor
        self.airInPath = airInPath
        self.card = card
        self.other = other
        self.exchanges = exchanges
    }

    /// The timing of a read that took `total` and made `exchanges`.
    public init(total: Duration, exchanges: [Exchange], card: Duration?, airInPath: Bool, other: Duration = .zero,
                air: ContactlessAirTime = ContactlessAirTime()) {
        self.init(total: total, airFloor: air.read(exchanges), airInPath: airInPath, card: card, other: other,
                  exchanges: exchanges.map {
                      ExchangeTiming(kind: ExchangeKind($0.command), duration: $0.duration, airFloor: air.exchange($0))
                  })
    }

    /// The rest: total − card − other − (the air floor when it is in the path), never negative.
    public var host: Duration {
        let rest = total - (card ?? .zero) - other - (airInPath ? airFloor : .zero)
        return rest < .zero ? .zero : rest
    }
}

/// Percentiles over many reads: of the whole read, of each exchange kind, and the split of the
/// median read.
public struct ReadTimingReport: Hashable, Sendable {
    public var reads: Int
    public var total: LatencyPercentiles
    /// Per exchange kind, in ``ExchangeKind/allCases`` order, the kinds that occurred.
    public var byKind: [(kind: ExchangeKind, percentiles: LatencyPercentiles)]
    /// The read at the median (rank ⌈n/2⌉ by total time): its split adds up to ``total``'s p50.
    public var medianRead: ReadTiming

    /// Nil when `reads` is empty.
    public init?(_ reads: [ReadTiming]) {
        guard !reads.isEmpty else { return nil }
        let sorted = reads.sorted { $0.total < $1.total }
        guard let total = LatencyPercentiles(sorted: sorted.map(\.total)) else { return nil }
        self.reads = reads.count
        self.total = total
        self.medianRead = LatencyPercentiles.percentile(50, ofSorted: sorted)
        var samples: [ExchangeKind: [Duration]] = [:]
        for r in reads {
            for e in r.exchanges { samples[e.kind, default: []].append(e.duration) }
        }
        byKind = ExchangeKind.allCases.compactMap { kind in
            samples[kind].flatMap { LatencyPercentiles($0) }.map { (kind, $0) }
        }
    }

    public static func == (a: ReadTimingReport, b: ReadTimingReport) -> Bool {
        a.reads == b.reads && a.total == b.total && a.medianRead == b.medianRead
            && a.byKind.map(\.kind) == b.byKind.map(\.kind) && a.byKind.map(\.percentiles) == b.byKind.map(\.percentiles)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(reads)
        hasher.combine(total)
        hasher.combine(medianRead)
    }

    /// The percentiles of one exchange kind, when it occurred.
    public subscript(kind: ExchangeKind) -> LatencyPercentiles? {
        byKind.first { $0.kind == kind }?.percentiles
    }
}
