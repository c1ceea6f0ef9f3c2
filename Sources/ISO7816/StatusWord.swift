/// An ISO 7816-4 status word, SW1 SW2, with the names and meanings a reader meets
/// (ISO 7816-4 §5.6 and EMV Book 1 §11 / Book 3 Annex).
public struct StatusWord: Hashable, Sendable, RawRepresentable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public init(sw1: UInt8, sw2: UInt8) { self.rawValue = UInt16(sw1) << 8 | UInt16(sw2) }

    public var sw1: UInt8 { UInt8(rawValue >> 8) }
    public var sw2: UInt8 { UInt8(rawValue & 0xFF) }

    public static let success = StatusWord(0x9000)
    public static let warningStateUnchanged = StatusWord(0x6200)
    public static let selectedFileInvalidated = StatusWord(0x6283)
    public static let endOfFileReached = StatusWord(0x6282)
    public static let wrongLength = StatusWord(0x6700)
    public static let functionInClaNotSupported = StatusWord(0x6881)
    public static let commandNotAllowed = StatusWord(0x6900)
    public static let incompatibleFileStructure = StatusWord(0x6981)
    public static let securityStatusNotSatisfied = StatusWord(0x6982)
    public static let authenticationMethodBlocked = StatusWord(0x6983)
    public static let referencedDataInvalidated = StatusWord(0x6984)
    public static let conditionsOfUseNotSatisfied = StatusWord(0x6985)
    public static let commandNotAllowedNoCurrentEF = StatusWord(0x6986)
    public static let expectedSMDataObjectsMissing = StatusWord(0x6987)
    public static let incorrectSMDataObjects = StatusWord(0x6988)
    public static let wrongParametersNoInfo = StatusWord(0x6B00)
    public static let incorrectData = StatusWord(0x6A80)
    public static let functionNotSupported = StatusWord(0x6A81)
    public static let fileNotFound = StatusWord(0x6A82)
    public static let recordNotFound = StatusWord(0x6A83)
    public static let notEnoughMemory = StatusWord(0x6A84)
    public static let lcInconsistentWithTLV = StatusWord(0x6A85)
    public static let incorrectP1P2 = StatusWord(0x6A86)
    public static let lcInconsistentWithP1P2 = StatusWord(0x6A87)
    public static let referencedDataNotFound = StatusWord(0x6A88)
    public static let instructionNotSupported = StatusWord(0x6D00)
    public static let classNotSupported = StatusWord(0x6E00)
    public static let noPreciseDiagnosis = StatusWord(0x6F00)
    public static let memoryFailure = StatusWord(0x6581)

    /// 9000, or 61xx (more data to fetch with GET RESPONSE) — the card did the command.
    public var isSuccess: Bool { rawValue == 0x9000 }
    /// 61xx: `sw2` more bytes wait for GET RESPONSE (0 = 256 or more).
    public var isMoreDataAvailable: Bool { sw1 == 0x61 }
    /// 6Cxx: wrong Le; resend with Le = `sw2`.
    public var isWrongLeWithExact: Bool { sw1 == 0x6C }
    /// 62xx/63xx: processed with a warning.
    public var isWarning: Bool { sw1 == 0x62 || sw1 == 0x63 }

    /// A short name for tables and traces, e.g. `9000 success`.
    public var name: String {
        switch rawValue {
        case 0x9000: return "success"
        case 0x6200: return "warning, state unchanged"
        case 0x6281: return "part of returned data may be corrupted"
        case 0x6282: return "end of file reached before Le bytes"
        case 0x6283: return "selected file invalidated (application blocked)"
        case 0x6284: return "FCI not formatted as expected"
        case 0x6300: return "authentication failed"
        case 0x6400: return "execution error, state unchanged"
        case 0x6581: return "memory failure"
        case 0x6700: return "wrong length"
        case 0x6881: return "logical channel not supported"
        case 0x6882: return "secure messaging not supported"
        case 0x6900: return "command not allowed"
        case 0x6981: return "command incompatible with file structure"
        case 0x6982: return "security status not satisfied"
        case 0x6983: return "authentication method blocked"
        case 0x6984: return "referenced data invalidated"
        case 0x6985: return "conditions of use not satisfied"
        case 0x6986: return "command not allowed (no current EF)"
        case 0x6987: return "expected secure messaging data objects missing"
        case 0x6988: return "incorrect secure messaging data objects"
        case 0x6A80: return "incorrect parameters in the data field"
        case 0x6A81: return "function not supported (card or application blocked)"
        case 0x6A82: return "file or application not found"
        case 0x6A83: return "record not found"
        case 0x6A84: return "not enough memory space in the file"
        case 0x6A85: return "Lc inconsistent with TLV structure"
        case 0x6A86: return "incorrect parameters P1-P2"
        case 0x6A87: return "Lc inconsistent with P1-P2"
        case 0x6A88: return "referenced data not found"
        case 0x6B00: return "wrong parameters P1-P2"
        case 0x6D00: return "instruction not supported"
        case 0x6E00: return "class not supported"
        case 0x6F00: return "no precise diagnosis"
        default:
            switch sw1 {
            case 0x61: return "\(sw2 == 0 ? 256 : Int(sw2)) more byte(s) available (GET RESPONSE)"
            case 0x6C: return "wrong Le; exact length is \(sw2 == 0 ? 256 : Int(sw2))"
            case 0x63 where sw2 & 0xF0 == 0xC0: return "verification failed, \(sw2 & 0x0F) tries left"
            case 0x62: return "warning, state unchanged"
            case 0x63: return "warning, state changed"
            case 0x64: return "execution error, state unchanged"
            case 0x65: return "execution error, state changed"
            case 0x66: return "security-related error"
            case 0x67: return "wrong length"
            case 0x68: return "function in CLA not supported"
            case 0x69: return "command not allowed"
            case 0x6A: return "wrong parameters"
            case 0x6B: return "wrong parameters P1-P2"
            case 0x6D: return "instruction not supported"
            case 0x6E: return "class not supported"
            case 0x6F: return "no precise diagnosis"
            case 0x90: return "success (proprietary SW2)"
            case 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F:
                return "application-specific status"
            default: return "unknown status"
            }
        }
    }

    /// `9000` as four hex digits.
    public var hex: String { Hex.encode([sw1, sw2]) }
}

extension StatusWord: CustomStringConvertible {
    public var description: String { "\(hex) \(name)" }
}
