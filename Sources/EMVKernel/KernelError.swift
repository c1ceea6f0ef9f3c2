public import CardChannel
public import ISO7816

/// The step of the transaction a command or an error belongs to.
public enum KernelStep: Hashable, Sendable, CustomStringConvertible {
    /// SELECT of the Proximity Payment System Environment (2PAY.SYS.DDF01).
    case ppse
    /// SELECT of an AID: the list-of-AIDs fallback or the final selection.
    case selectAID([UInt8])
    /// GET PROCESSING OPTIONS.
    case gpo
    /// READ RECORD `record` of short file `sfi`.
    case readRecord(record: UInt8, sfi: UInt8)
    /// INTERNAL AUTHENTICATE (DDA).
    case internalAuthenticate
    /// GENERATE AC.
    case generateAC
    /// Checking the data read from the card, after the last command.
    case cardData

    public var description: String {
        switch self {
        case .ppse: return "PPSE"
        case .selectAID(let aid): return "SELECT AID \(Hex.encode(aid))"
        case .gpo: return "GPO"
        case .readRecord(let record, let sfi): return "READ RECORD \(record)/SFI \(sfi)"
        case .internalAuthenticate: return "INTERNAL AUTHENTICATE"
        case .generateAC: return "GENERATE AC"
        case .cardData: return "card data"
        }
    }
}

/// Why reading a card failed: a card that broke the protocol, declined, or left; a channel that
/// failed. Names the step and the reason. Tests compare ``code`` (and ``step``) only.
///
/// Never holds a full PAN or track 2: reasons name tags, not values.
public struct KernelError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. Open: new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A response that is not what the command calls for: bad BER-TLV, the wrong template,
        /// a value of the wrong length or format, trailing bytes.
        public static let malformedResponse = Code("malformedResponse")
        /// A data object the step needs is absent (AIP 82, AFL 94, the PAN, CDOL1, the ATC, …).
        public static let missingMandatoryData = Code("missingMandatoryData")
        /// A status word the step does not accept (in ``KernelError/statusWord``).
        public static let unexpectedStatus = Code("unexpectedStatus")
        /// The card has no application the terminal supports (or every candidate was refused).
        public static let noSupportedApplication = Code("noSupportedApplication")
        /// The Application File Locator names impossible records.
        public static let invalidAFL = Code("invalidAFL")
        /// The card declined offline: it returned an AAC.
        public static let cardDeclinedOffline = Code("cardDeclinedOffline")
        /// The card contradicts itself (two values of one data object, a PAN in 5A other than
        /// track 2's, a TC when an ARQC was asked for, …).
        public static let inconsistentData = Code("inconsistentData")
        /// The card channel failed (card removed, timeout, reader gone, …): see
        /// ``KernelError/channelError``.
        public static let channelFailed = Code("channelFailed")
    }

    private struct Backing: Sendable {
        var code: Code
        var step: KernelStep
        var reason: String
        var statusWord: StatusWord?
        var channelError: CardChannelError?
        var partial: PartialCardRead?
        var file: String
        var line: Int
    }
    private var backing: Backing

    public var code: Code { backing.code }
    /// The step that failed.
    public var step: KernelStep { backing.step }
    public var reason: String { backing.reason }
    /// The status word the card answered, when it matters to the error.
    public var statusWord: StatusWord? { backing.statusWord }
    /// The card channel's error, for ``Code/channelFailed``: `error.channelError?.code == .cardRemoved`.
    public var channelError: CardChannelError? { backing.channelError }
    /// What was read before the failure, with every exchange (set by ``EMVReader``).
    public var partial: PartialCardRead? {
        get { backing.partial }
        set { backing.partial = newValue }
    }
    public var file: String { backing.file }
    public var line: Int { backing.line }

    public init(_ code: Code, step: KernelStep, _ reason: String, statusWord: StatusWord? = nil,
                channelError: CardChannelError? = nil, file: String = #fileID, line: Int = #line) {
        backing = Backing(code: code, step: step, reason: reason, statusWord: statusWord,
                          channelError: channelError, partial: nil, file: file, line: line)
    }

    /// Equal when the codes are: the step, the reason and the rest are for people and handling.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// The card answered `sw` where the step does not accept it.
    static func unexpected(_ sw: StatusWord, step: KernelStep, file: String = #fileID, line: Int = #line) -> KernelError {
        KernelError(.unexpectedStatus, step: step, "the card answered \(sw)", statusWord: sw, file: file, line: line)
    }

    /// Whether the online data (cryptogram, PAN) had been handed out before the failure: the
    /// authorisation may have started, so the outcome is unclear (DESIGN.md).
    public var happenedAfterOnlineDataReady: Bool { partial?.onlineDataWasReady ?? false }

    /// `GPO: the card answered 6985 conditions of use not satisfied`.
    public var description: String { "\(step): \(reason)" }
}
