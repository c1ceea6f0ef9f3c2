public import CodedErrors

/// An error returned by libpcsclite: the raw return code, with a Swift name for every code
/// pcsc-lite defines (see the static members of ``Code``, each naming its C constant).
///
/// Open: a code tapemu does not know is kept as it came, never collapsed into another. Compare
/// ``code`` in tests and in handling; ``description`` names the C constant and the call.
public struct PCSCError: CodedError {
    /// A pcsc-lite return code (`LONG`). The named codes are in `PCSCLite.swift`, built from the
    /// C constants (pcsc-lite's values differ from Windows', so never from numbers).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        /// Internal: every code comes from libpcsclite (``PCSCLite``) or is one of the names
        /// below; callers cannot make codes up.
        init(rawValue: Int) { self.rawValue = rawValue }

        /// The C constant, e.g. `SCARD_E_NO_SERVICE`; `0x…` for a code pcsc-lite does not define.
        public var name: String {
            Self.known[rawValue]?.name ?? "0x" + String(UInt32(truncatingIfNeeded: rawValue), radix: 16, uppercase: true)
        }

        /// What the code means, in a few words.
        public var message: String { Self.known[rawValue]?.message ?? "unknown PC/SC error" }

        /// Whether pcsc-lite defines this code.
        public var isKnown: Bool { Self.known[rawValue] != nil }

        public var description: String { name }
    }

    public let core: ErrorCore<Code>
    /// The libpcsclite call that returned the code.
    public let function: PCSCFunction

    public init(_ code: Code, function: PCSCFunction, file: String = #fileID, line: Int = #line) {
        core = ErrorCore(code, code.message, file: file, line: line)
        self.function = function
    }

    /// How to get out of it, when there is something to say.
    public var hint: String? {
        switch code {
        case .noService, .serviceStopped:
            return "start the PC/SC daemon: `sudo systemctl start pcscd` (or run `sudo pcscd`); "
                + "Debian package `pcscd`, plus `vsmartcard-vpcd` for the virtual readers"
        case .noReadersAvailable:
            return "plug in a reader, or install `vsmartcard-vpcd` and restart pcscd for the virtual readers"
        case .sharingViolation:
            return "another program holds the card exclusively; close it and try again"
        default:
            return nil
        }
    }

    public var description: String {
        var s = "\(function) failed: \(code.name) (\(code.message))"
        if let hint { s += " — \(hint)" }
        return s
    }
}
