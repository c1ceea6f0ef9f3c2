public import CardChannel
public import CodedErrors
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
public struct KernelError: CodedError {
    public typealias Code = ErrorCode<KernelError>
    public let core: ErrorCore<Code>
    /// The step that failed.
    public let step: KernelStep
    /// The status word the card answered, when it matters to the error.
    public let statusWord: StatusWord?
    /// The card channel's error, for ``Code/channelFailed``: `error.channelError?.code == .cardRemoved`.
    public let channelError: CardChannelError?
    /// What was read before the failure, with every exchange (set by ``EMVReader``).
    public var partial: PartialCardRead?

    public init(_ code: Code, step: KernelStep, _ reason: String, statusWord: StatusWord? = nil,
                channelError: CardChannelError? = nil, file: String = #fileID, line: Int = #line) {
        core = ErrorCore(code, reason, file: file, line: line)
        self.step = step
        self.statusWord = statusWord
        self.channelError = channelError
    }

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

extension ErrorCode<KernelError> {
    /// A response that is not what the command calls for: bad BER-TLV, the wrong template,
    /// a value of the wrong length or format, trailing bytes.
    public static var malformedResponse: Self { Self("malformedResponse") }
    /// A data object the step needs is absent (AIP 82, AFL 94, the PAN, CDOL1, the ATC, …).
    public static var missingMandatoryData: Self { Self("missingMandatoryData") }
    /// A status word the step does not accept (in ``KernelError/statusWord``).
    public static var unexpectedStatus: Self { Self("unexpectedStatus") }
    /// The card has no application the terminal supports (or every candidate was refused).
    public static var noSupportedApplication: Self { Self("noSupportedApplication") }
    /// The Application File Locator names impossible records.
    public static var invalidAFL: Self { Self("invalidAFL") }
    /// The card declined offline: it returned an AAC.
    public static var cardDeclinedOffline: Self { Self("cardDeclinedOffline") }
    /// The card contradicts itself (two values of one data object, a PAN in 5A other than
    /// track 2's, a TC when an ARQC was asked for, …).
    public static var inconsistentData: Self { Self("inconsistentData") }
    /// The card channel failed (card removed, timeout, reader gone, …): see
    /// ``KernelError/channelError``.
    public static var channelFailed: Self { Self("channelFailed") }
}
